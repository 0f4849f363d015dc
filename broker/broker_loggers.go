package broker

// The BROKER_LOGGER config resource (type 8), as Kafka's ConfigHelper and
// RuntimeLoggerManager answer it: DescribeConfigs lists the loggers of this process (the root
// logger and each log component, internal/loglevels) with their effective levels, source
// DYNAMIC_BROKER_LOGGER_CONFIG; IncrementalAlterConfigs SETs a logger's level or DELETEs it
// (the logger follows the root again). The resource name must be this node's id. Changes are
// not persisted (a restart starts from --log-level), as in Kafka.

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/config"
	"sluice/internal/loglevels"
)

// brokerLoggerEntries answers DescribeConfigs for a BROKER_LOGGER resource.
func (b *Broker) brokerLoggerEntries(name string, names []string) ([]configEntry, int16, *string) {
	if name == "" {
		return nil, kerr.InvalidRequest.Code, strPtr("Broker id must not be empty")
	}
	if id, err := config.ParseInt32(name); err != nil || id != b.nodeID {
		return nil, kerr.InvalidRequest.Code, strPtr("Unexpected broker id, expected " + itoa32(b.nodeID) + " but received " + name)
	}
	loggers := []loglevels.Logger{{Name: loglevels.RootLogger, Level: slog.LevelInfo}}
	if b.cfg.LogLevels != nil {
		loggers = b.cfg.LogLevels.Loggers()
	}
	var out []configEntry
	for _, l := range loggers {
		if !wanted(names, l.Name) {
			continue
		}
		// No config type: Kafka's ConfigHelper sets none for loggers.
		out = append(out, configEntry{name: l.Name, value: strPtr(loglevels.LevelName(l.Level)),
			source: config.SourceDynamicBrokerLoggerConfig})
	}
	return out, 0, nil
}

// alterBrokerLoggers checks and (unless validateOnly) applies one IncrementalAlterConfigs
// resource of type BROKER_LOGGER, as Kafka's RuntimeLoggerManager does: every operation is
// checked before any applies.
func (b *Broker) alterBrokerLoggers(name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) (int16, string) {
	// Kafka's message names its own node id twice (RuntimeLoggerManager); we say what was sent.
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if int32(id) != b.nodeID {
		return kerr.InvalidRequest.Code, "Unexpected node id. Expected " + itoa32(b.nodeID) + ", but received " + name
	}
	levels := b.cfg.LogLevels
	exists := func(logger string) bool {
		if levels == nil {
			return logger == loglevels.RootLogger
		}
		return levels.Exists(logger)
	}
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if !exists(op.Name) {
				return kerr.InvalidConfig.Code, "Logger " + op.Name + " does not exist!"
			}
			if _, ok := loglevels.ParseLevel(*op.Value); !ok {
				return kerr.InvalidConfig.Code, "Cannot set the log level of " + op.Name + " to " + *op.Value +
					" as it is not a supported log level. Valid log levels are " + strings.Join(loglevels.ValidLevels, ", ")
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if !exists(op.Name) {
				return kerr.InvalidConfig.Code, "Logger " + op.Name + " does not exist!"
			}
			if op.Name == loglevels.RootLogger {
				return kerr.InvalidRequest.Code, "Removing the log level of the " + loglevels.RootLogger + " logger is not allowed"
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidRequest.Code, op.Op.String() + " operation is not allowed for the BROKER_LOGGER resource"
		default:
			return kerr.InvalidRequest.Code, "Unknown operation type " + strconv.Itoa(int(op.Op)) + " is not allowed for the BROKER_LOGGER resource"
		}
	}
	if validateOnly || levels == nil {
		if levels == nil && !validateOnly && len(ops) > 0 {
			return kerr.InvalidRequest.Code, "This node's log levels cannot change at run time"
		}
		return 0, ""
	}
	for _, op := range ops {
		if op.Op == kmsg.IncrementalAlterConfigOpSet {
			level, _ := loglevels.ParseLevel(*op.Value)
			levels.Set(op.Name, level)
			b.logger.Warn("updated the log level", "logger", op.Name, "level", *op.Value)
		} else {
			levels.Unset(op.Name)
			b.logger.Warn("unset the log level", "logger", op.Name)
		}
	}
	return 0, ""
}
