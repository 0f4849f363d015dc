// Package telemetry is the broker's side of client telemetry (KIP-714): the CLIENT_METRICS
// config resources (subscriptions: metrics, interval.ms, match), validated as Kafka's
// ClientMetricsConfigs validates them (config.go); the Manager, which answers
// GetTelemetrySubscriptions and PushTelemetry as Kafka's ClientMetricsManager does (client
// instance IDs, subscription IDs that change with the subscription, push intervals, Kafka's
// error codes) on an injected clock; and a reader of the pushed OTLP MetricsData payload
// (otlp.go) whose gauges and sums the Manager keeps for the broker's Prometheus /metrics.
//
// Bounds: at most MaxClientInstances instances (the one seen longest ago is dropped first), an
// instance expires max(60 s, 3 push intervals) after its last request, at most MaxSeries
// exported series over all clients (points of further series are dropped and counted), a
// payload of at most telemetry.max.bytes, MaxDecompressedBytes after decompression.
//
// Where sluice differs from Kafka: an instance is forgotten when it expires, not when the
// connection it first came on closes (Kafka drops it then), so a client's counters survive
// its moving to another connection; match regexes are Go's RE2, so a Java-only construct
// (backreferences, lookaround) is refused as an illegal pattern.
package telemetry
