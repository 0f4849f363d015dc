package broker

// Client telemetry (KIP-714): the broker's telemetry.Manager answers GetTelemetrySubscriptions
// (71) and PushTelemetry (72) against the CLIENT_METRICS subscriptions of the newest metadata
// image, and keeps the pushed gauges and sums, which ops exports on /metrics
// (TelemetryFamilies). Kafka advertises these APIs only when a metrics reporter that receives
// client telemetry is configured; sluice always has its receiver (/metrics), so it always
// advertises them. A client no subscription matches gets an empty metrics list at the default
// interval (5 minutes) and pushes nothing, as with Kafka.

import (
	"net"
	"strconv"

	"sluice/internal/telemetry"
	"sluice/wire"
)

// telemetryManager is the broker's Manager with the image's subscriptions applied.
func (b *Broker) telemetryManager() *telemetry.Manager {
	b.telemetry.SetSubscriptions(b.ctrl.Image().ClientMetrics)
	return b.telemetry
}

// telemetryClientInfo is what subscriptions match a request's client on.
func telemetryClientInfo(req *wire.Request) telemetry.ClientInfo {
	var info telemetry.ClientInfo
	if req.ClientID != nil {
		info.ClientID = *req.ClientID
	}
	if req.Conn != nil {
		info.SoftwareName, info.SoftwareVersion = req.Conn.ClientSoftware()
		if a, ok := req.Conn.RemoteAddr.(*net.TCPAddr); ok {
			info.SourceAddress, info.SourcePort = a.IP.String(), strconv.Itoa(a.Port)
		}
	}
	return info
}

// TelemetryFamilies lists the client metrics pushed to this broker, by Prometheus name.
func (b *Broker) TelemetryFamilies() []telemetry.Family { return b.telemetry.Families() }

// TelemetryStats reads the telemetry manager's counts.
func (b *Broker) TelemetryStats() telemetry.Stats { return b.telemetry.Stats() }
