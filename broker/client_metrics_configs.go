package broker

// Client metrics subscriptions (the CLIENT_METRICS config resource, type 16, KIP-714): named
// sets of metrics (name prefixes, "*" for all), interval.ms and match (client attribute =
// regex), set with IncrementalAlterConfigs or AlterConfigs (kafka-client-metrics,
// kafka-configs --entity-type client-metrics), stored in the metadata log as ConfigRecords of
// controller.ResourceClientMetrics and described by DescribeConfigs. The telemetry Manager
// (telemetry.go) takes them from the image at every telemetry request. Values are checked as
// Kafka's ClientMetricsConfigs checks them (internal/telemetry), before the controller, which
// checks them again.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/internal/telemetry"
)

const resourceClientMetrics = int8(kmsg.ConfigResourceTypeClientMetrics)

// clientMetricsProblem checks one subscription's operations; a non-zero code refuses it.
func clientMetricsProblem(ops []controller.ConfigOp) (int16, string) {
	for _, op := range ops {
		if op.Value == nil {
			if !isClientMetricsKey(op.Key) {
				return kerr.InvalidRequest.Code, "Unknown client metrics configuration: " + op.Key
			}
			continue
		}
		if err := telemetry.ValidateKey(op.Key, *op.Value); err != nil {
			return err.Code, err.Message
		}
	}
	return 0, ""
}

func isClientMetricsKey(key string) bool {
	for _, d := range telemetry.KeyDocs {
		if d.Name == key {
			return true
		}
	}
	return false
}

// clientMetricsEntries lists a subscription's keys: its value (CLIENT_METRICS_CONFIG, its one
// synonym) or the default (DEFAULT_CONFIG, no synonyms), as Kafka 4.4's ConfigHelper lists them.
func clientMetricsEntries(subscription map[string]string, names []string) []configEntry {
	var out []configEntry
	for _, d := range telemetry.KeyDocs {
		if !wanted(names, d.Name) {
			continue
		}
		typ := config.TypeList
		if d.Type == "INT" {
			typ = config.TypeInt
		}
		e := configEntry{name: d.Name, typ: typ, doc: d.Doc, source: config.SourceDefaultConfig, value: strPtr(d.Default)}
		if v, ok := subscription[d.Name]; ok {
			e.source, e.value = config.SourceClientMetricsConfig, strPtr(v)
			e.synonyms = append(e.synonyms, config.Synonym{Name: d.Name, Value: strPtr(v), Source: config.SourceClientMetricsConfig})
		}
		out = append(out, e)
	}
	return out
}

// clientMetricsListKey reports whether key is a LIST key of a subscription (APPEND and
// SUBTRACT apply to it).
func clientMetricsListKey(key string) bool {
	return key == telemetry.KeyMetrics || key == telemetry.KeyMatch
}
