package broker

// PushTelemetry, key 72: v0.
//
// KIP-714: a client pushes its metrics as an OTLP MetricsData payload, compressed with one
// of the accepted codecs. Checked as Kafka's ClientMetricsManager checks it, with its codes
// (INVALID_REQUEST, THROTTLING_QUOTA_EXCEEDED, UNKNOWN_SUBSCRIPTION_ID,
// UNSUPPORTED_COMPRESSION_TYPE, TELEMETRY_TOO_LARGE; INVALID_RECORD for a payload that does
// not decompress or decode); accepted gauges and sums are kept for /metrics
// (internal/telemetry). The payload is copied out of the request frame before the frame can
// be reused. No ACL is checked, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/telemetry"
	"sluice/wire"
)

func init() { register(72, 0, 0, (*Broker).handlePushTelemetry) }

func (b *Broker) handlePushTelemetry(_ context.Context, req *wire.Request, respond wire.Respond) {
	body, ok := req.Body.(*kmsg.PushTelemetryRequest)
	if !ok {
		respond(nil, errUnexpectedBody)
		return
	}
	code, msg := b.telemetryManager().Push(telemetry.PushRequest{
		InstanceID:      body.ClientInstanceID,
		SubscriptionID:  body.SubscriptionID,
		Terminating:     body.Terminating,
		CompressionType: body.CompressionType,
		Metrics:         body.Metrics,
		Info:            telemetryClientInfo(req),
	})
	if code != 0 {
		b.logger.Debug("push telemetry refused", "client_instance_id", telemetry.UUIDString(body.ClientInstanceID), "code", code, "message", msg)
	}
	resp := body.ResponseKind().(*kmsg.PushTelemetryResponse)
	resp.ErrorCode = code
	respond(resp, nil)
}
