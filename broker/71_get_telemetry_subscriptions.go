package broker

// GetTelemetrySubscriptions, key 71: v0.
//
// KIP-714: a client asks which metrics to push, how often and how. A zero client instance ID
// gets a new one. The answer is the union of the matching CLIENT_METRICS subscriptions'
// metrics at the smallest of their intervals, the accepted codecs (zstd, lz4, gzip, snappy),
// telemetry.max.bytes and delta temporality, as Kafka's ClientMetricsManager answers; a
// request before the push interval passed is THROTTLING_QUOTA_EXCEEDED (internal/telemetry).
// No ACL is checked, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/telemetry"
	"sluice/wire"
)

func init() { register(71, 0, 0, (*Broker).handleGetTelemetrySubscriptions) }

func (b *Broker) handleGetTelemetrySubscriptions(_ context.Context, req *wire.Request, respond wire.Respond) {
	body, ok := req.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	a := b.telemetryManager().Get(body.ClientInstanceID, telemetryClientInfo(req))
	resp := body.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	resp.ErrorCode = a.ErrorCode
	if a.ErrorCode != 0 {
		b.logger.Debug("get telemetry subscriptions refused", "client_instance_id", telemetry.UUIDString(body.ClientInstanceID), "code", a.ErrorCode, "message", a.ErrorMessage)
	}
	if a.ErrorCode == 0 {
		resp.ClientInstanceID = a.InstanceID
		resp.SubscriptionID = a.SubscriptionID
		resp.AcceptedCompressionTypes = append([]int8(nil), telemetry.AcceptedCompressionTypes...)
		resp.PushIntervalMillis = a.PushIntervalMs
		resp.TelemetryMaxBytes = a.MaxBytes
		resp.DeltaTemporality = true
		resp.RequestedMetrics = a.Metrics
	}
	respond(resp, nil)
}
