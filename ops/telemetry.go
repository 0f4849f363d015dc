package ops

import (
	"github.com/prometheus/client_golang/prometheus"

	"sluice/internal/telemetry"
)

// Client telemetry (KIP-714): the metrics clients push with PushTelemetry, exported under
// their own names mapped to Prometheus names (org.apache.kafka.producer.record.send.total ->
// org_apache_kafka_producer_record_send_total), labelled client_instance_id, client_id and
// the pushed attributes. Their names are only known at scrape time, so telemetryCollector is
// an unchecked collector (it describes nothing); internal/telemetry guarantees one type and
// one label set per name, no duplicate series and no name on a broker prefix, so a client
// cannot make a scrape fail.

var (
	descTelemetryInstances = prometheus.NewDesc("sluice_client_telemetry_instances",
		"Client instances (KIP-714) this broker keeps telemetry for (mirrors kafka.server:type=client-metrics,name=instance-count).", nil, nil)
	descTelemetrySeries = prometheus.NewDesc("sluice_client_telemetry_series",
		"Series of pushed client metrics this broker exports (at most internal/telemetry.MaxSeries).", nil, nil)
	descTelemetryDropped = prometheus.NewDesc("sluice_client_telemetry_dropped_series_total",
		"Pushed client metric points dropped because the exported series were at their bound.", nil, nil)
)

// telemetryCollector exports the pushed client metrics.
type telemetryCollector struct{ s *Server }

// Describe sends nothing: the collector is unchecked.
func (c *telemetryCollector) Describe(chan<- *prometheus.Desc) {}

func (c *telemetryCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.s.broker.Load()
	if b == nil {
		return
	}
	st := b.TelemetryStats()
	ch <- prometheus.MustNewConstMetric(descTelemetryInstances, prometheus.GaugeValue, float64(st.Instances))
	ch <- prometheus.MustNewConstMetric(descTelemetrySeries, prometheus.GaugeValue, float64(st.Series))
	ch <- prometheus.MustNewConstMetric(descTelemetryDropped, prometheus.CounterValue, float64(st.DroppedSeries))
	for _, f := range b.TelemetryFamilies() {
		desc := prometheus.NewDesc(f.Name, f.Help, f.LabelNames, nil)
		typ := prometheus.GaugeValue
		if f.Kind == telemetry.KindCounter {
			typ = prometheus.CounterValue
		}
		for _, s := range f.Series {
			if m, err := prometheus.NewConstMetric(desc, typ, s.Value, s.LabelValues...); err == nil {
				ch <- m
			}
		}
	}
}
