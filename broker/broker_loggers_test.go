package broker

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/loglevels"
)

// TestBrokerLoggersDescribeAndAlter drives the BROKER_LOGGER resource through DescribeConfigs
// and IncrementalAlterConfigs as kafka-configs --entity-type broker-loggers does: the loggers
// are listed with their levels, SET changes a component's level at once, DELETE makes it follow
// the root again, and the refusals are Kafka's (RuntimeLoggerManager, ConfigHelper).
func TestBrokerLoggersDescribeAndAlter(t *testing.T) {
	levels := loglevels.New(slog.LevelInfo)
	logger := slog.New(levels.Handler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: loglevels.LevelTrace})))
	brokerLog := logger.With("component", "broker")
	logger.With("component", "wire")
	b := &Broker{nodeID: 1, ctrl: newFakeMetadata(&controller.Image{}), logger: brokerLog, cfg: Config{LogLevels: levels}}
	ctx := context.Background()

	describe := func(name string) *kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, name
		req.Resources = append(req.Resources, r)
		resp, err := b.handleDescribeConfigs(ctx, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		return &resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	}
	levelsOf := func() map[string]string {
		r := describe("1")
		if r.ErrorCode != 0 {
			t.Fatalf("describe: %d %v", r.ErrorCode, r.ErrorMessage)
		}
		m := map[string]string{}
		for _, c := range r.Configs {
			if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.Value == nil {
				t.Fatalf("entry %+v", c)
			}
			m[c.Name] = *c.Value
		}
		return m
	}
	alter := func(ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeBrokerLogger, "1", ops
		req.Resources = append(req.Resources, r)
		resp, err := b.handleIncrementalAlterConfigs(ctx, nil, req)
		if err != nil {
			t.Fatal(err)
		}
		out := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if out.ErrorMessage != nil {
			msg = *out.ErrorMessage
		}
		return out.ErrorCode, msg
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = name, o
		if o != kmsg.IncrementalAlterConfigOpDelete {
			c.Value = &value
		}
		return c
	}

	if got := levelsOf(); len(got) != 3 || got["root"] != "INFO" || got["broker"] != "INFO" || got["wire"] != "INFO" {
		t.Fatalf("loggers %v", got)
	}
	if brokerLog.Enabled(ctx, slog.LevelDebug) {
		t.Fatal("broker logs DEBUG before the change")
	}
	if code, msg := alter(op("broker", kmsg.IncrementalAlterConfigOpSet, "DEBUG")); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	if got := levelsOf(); got["broker"] != "DEBUG" || got["wire"] != "INFO" || !brokerLog.Enabled(ctx, slog.LevelDebug) {
		t.Fatalf("after broker=DEBUG: %v", got)
	}
	if code, msg := alter(op("broker", kmsg.IncrementalAlterConfigOpDelete, "")); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if got := levelsOf(); got["broker"] != "INFO" {
		t.Fatalf("after delete: %v", got)
	}

	for _, tc := range []struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code *kerr.Error
		msg  string
	}{
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("nosuch", kmsg.IncrementalAlterConfigOpSet, "DEBUG")},
			kerr.InvalidConfig, "Logger nosuch does not exist!"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("broker", kmsg.IncrementalAlterConfigOpSet, "LOUD")},
			kerr.InvalidConfig, "Cannot set the log level of broker to LOUD as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("root", kmsg.IncrementalAlterConfigOpDelete, "")},
			kerr.InvalidRequest, "Removing the log level of the root logger is not allowed"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("broker", kmsg.IncrementalAlterConfigOpAppend, "DEBUG")},
			kerr.InvalidRequest, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		// One bad operation stops the good one before it: every operation is checked first.
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("wire", kmsg.IncrementalAlterConfigOpSet, "TRACE"), op("broker", kmsg.IncrementalAlterConfigOpSet, "debug")},
			kerr.InvalidConfig, "Cannot set the log level of broker to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
	} {
		if code, msg := alter(tc.ops...); code != tc.code.Code || msg != tc.msg {
			t.Errorf("%v: got %d %q, want %d %q", tc.ops, code, msg, tc.code.Code, tc.msg)
		}
	}
	if got := levelsOf(); got["wire"] != "INFO" {
		t.Fatalf("a refused request changed wire: %v", got)
	}
	if r := describe("2"); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Unexpected broker id, expected 1 but received 2" {
		t.Fatalf("describe another node: %d %v", r.ErrorCode, r.ErrorMessage)
	}
}
