package telemetry

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/protobuf/encoding/protowire"

	"sluice/internal/compress"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		code       int16
		msg        string
	}{
		{KeyMetrics, "org.apache.kafka.producer.", 0, ""},
		{KeyMetrics, "*", 0, ""},
		{KeyMetrics, "", 0, ""},
		{KeyMetrics, "a,b,a", kerr.InvalidConfig.Code, "values must not be duplicated"},
		{KeyIntervalMs, "100", 0, ""},
		{KeyIntervalMs, "3600000", 0, ""},
		{KeyIntervalMs, "99", kerr.InvalidRequest.Code, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{KeyIntervalMs, "3600001", kerr.InvalidRequest.Code, "between 100 and 3600000"},
		{KeyIntervalMs, "x", kerr.InvalidConfig.Code, "Not a number of type INT"},
		{KeyMatch, "client_id=perf-.*,client_software_name=apache-kafka-java", 0, ""},
		{KeyMatch, "client_source_port=[0-9]+", 0, ""},
		{KeyMatch, "client_rack=a", kerr.InvalidConfig.Code, "Illegal client matching pattern: client_rack=a"},
		{KeyMatch, "client_id", kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id"},
		{KeyMatch, "client_id=a=b", kerr.InvalidConfig.Code, "Illegal client matching pattern"},
		{KeyMatch, "client_id=(", kerr.InvalidConfig.Code, "Illegal client matching pattern"},
		{"metrics.x", "1", kerr.InvalidRequest.Code, "Unknown client metrics configuration: metrics.x"},
	} {
		err := ValidateKey(tc.key, tc.value)
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s=%q: %v", tc.key, tc.value, err)
		case tc.code != 0 && (err == nil || err.Code != tc.code || !strings.Contains(err.Message, tc.msg)):
			t.Errorf("%s=%q: %v, want code %d %q", tc.key, tc.value, err, tc.code, tc.msg)
		}
	}
}

// otlpSum encodes a MetricsData with one resource attribute and one sum or gauge metric
// with one int point carrying the given attributes.
func otlpMetric(name string, sum, monotonic, delta bool, value int64, attrs ...string) []byte {
	kv := func(k, v string) []byte {
		var any []byte
		any = protowire.AppendTag(any, 1, protowire.BytesType)
		any = protowire.AppendString(any, v)
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		return protowire.AppendBytes(b, any)
	}
	var point []byte
	point = protowire.AppendTag(point, 3, protowire.Fixed64Type)
	point = protowire.AppendFixed64(point, 1)
	point = protowire.AppendTag(point, 6, protowire.Fixed64Type)
	point = protowire.AppendFixed64(point, uint64(value))
	for i := 0; i+1 < len(attrs); i += 2 {
		point = protowire.AppendTag(point, 7, protowire.BytesType)
		point = protowire.AppendBytes(point, kv(attrs[i], attrs[i+1]))
	}
	var data []byte
	data = protowire.AppendTag(data, 1, protowire.BytesType)
	data = protowire.AppendBytes(data, point)
	field := protowire.Number(5)
	if sum {
		field = 7
		temporality := uint64(2)
		if delta {
			temporality = 1
		}
		data = protowire.AppendTag(data, 2, protowire.VarintType)
		data = protowire.AppendVarint(data, temporality)
		data = protowire.AppendTag(data, 3, protowire.VarintType)
		data = protowire.AppendVarint(data, protowire.EncodeBool(monotonic))
	}
	var metric []byte
	metric = protowire.AppendTag(metric, 1, protowire.BytesType)
	metric = protowire.AppendString(metric, name)
	metric = protowire.AppendTag(metric, field, protowire.BytesType)
	metric = protowire.AppendBytes(metric, data)
	var scope []byte
	scope = protowire.AppendTag(scope, 2, protowire.BytesType)
	scope = protowire.AppendBytes(scope, metric)
	var resource []byte
	resource = protowire.AppendTag(resource, 1, protowire.BytesType)
	resource = protowire.AppendBytes(resource, kv("client_software_name", "apache-kafka-java"))
	var rm []byte
	rm = protowire.AppendTag(rm, 2, protowire.BytesType) // scope before resource: order is free
	rm = protowire.AppendBytes(rm, scope)
	rm = protowire.AppendTag(rm, 1, protowire.BytesType)
	rm = protowire.AppendBytes(rm, resource)
	var md []byte
	md = protowire.AppendTag(md, 1, protowire.BytesType)
	return protowire.AppendBytes(md, rm)
}

func TestDecodeMetricsData(t *testing.T) {
	points, err := DecodeMetricsData(otlpMetric("org.apache.kafka.producer.record.send.total", true, true, true, 7, "topic", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 1 {
		t.Fatalf("points %+v", points)
	}
	p := points[0]
	if p.Name != "org.apache.kafka.producer.record.send.total" || p.Kind != KindCounter || !p.Delta || p.Value != 7 ||
		len(p.Attributes) != 2 || p.Attributes[0] != (Attribute{"client_software_name", "apache-kafka-java"}) || p.Attributes[1] != (Attribute{"topic", "t1"}) {
		t.Fatalf("point %+v", p)
	}
	if _, err := DecodeMetricsData([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Fatal("truncated payload decoded")
	}
}

// manualClock is an injected clock.
type manualClock struct{ t time.Time }

func (c *manualClock) now() time.Time          { return c.t }
func (c *manualClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestManagerLifecycle walks a client through Kafka's telemetry protocol: no subscription,
// a matching subscription, throttled early requests, a changed subscription (the old ID is
// UNKNOWN_SUBSCRIPTION_ID), a bad codec, a payload too large, a bad payload, terminating.
func TestManagerLifecycle(t *testing.T) {
	clock := &manualClock{t: time.Unix(1000, 0)}
	m := NewManager(clock.now, 1024)
	info := ClientInfo{ClientID: "perf-1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0", SourceAddress: "127.0.0.1", SourcePort: "5000"}

	a := m.Get([16]byte{}, info)
	if a.ErrorCode != 0 || a.InstanceID == ([16]byte{}) || len(a.Metrics) != 0 || a.PushIntervalMs != DefaultIntervalMs || a.MaxBytes != 1024 {
		t.Fatalf("no subscription: %+v", a)
	}
	id := a.InstanceID
	if again := m.Get(id, info); again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("second get at once: %+v", again)
	}

	m.SetSubscriptions(map[string]map[string]string{
		"other": {KeyMetrics: "x.", KeyMatch: "client_id=nobody"},
		"perf":  {KeyMetrics: "org.apache.kafka.producer.", KeyIntervalMs: "1000", KeyMatch: "client_id=perf-.*,client_software_name=apache-kafka-java"},
	})
	a = m.Get(id, info) // the subscription changed: answered at once
	if a.ErrorCode != 0 || a.InstanceID != id || a.PushIntervalMs != 1000 || len(a.Metrics) != 1 || a.Metrics[0] != "org.apache.kafka.producer." {
		t.Fatalf("matching subscription: %+v", a)
	}
	sub := a.SubscriptionID

	push := func(subID int32, codec int8, payload []byte, terminating bool) (int16, string) {
		return m.Push(PushRequest{InstanceID: id, SubscriptionID: subID, CompressionType: codec, Metrics: payload, Terminating: terminating, Info: info})
	}
	counter := otlpMetric("org.apache.kafka.producer.record.send.total", true, true, true, 5, "topic", "t1")
	if code, msg := push(sub, compress.None, counter, false); code != 0 {
		t.Fatalf("first push: %d %s", code, msg)
	}
	if code, _ := push(sub, compress.None, counter, false); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("early push: %d", code)
	}
	clock.advance(time.Second)
	zstd, err := compress.Compress(compress.Zstd, nil, counter, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := push(sub, compress.Zstd, zstd, false); code != 0 {
		t.Fatalf("zstd push: %d %s", code, msg)
	}
	fams := m.Families()
	if len(fams) != 1 || fams[0].Name != "org_apache_kafka_producer_record_send_total" || fams[0].Kind != KindCounter ||
		strings.Join(fams[0].LabelNames, ",") != "client_instance_id,client_id,client_software_name,topic" ||
		len(fams[0].Series) != 1 || fams[0].Series[0].Value != 10 || fams[0].Series[0].LabelValues[1] != "perf-1" {
		t.Fatalf("families %+v", fams)
	}

	clock.advance(time.Second)
	if code, _ := push(sub+1, compress.None, counter, false); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("wrong subscription id: %d", code)
	}
	clock.advance(time.Second)
	if code, _ := push(sub, 9, counter, false); code != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("codec 9: %d", code)
	}
	clock.advance(time.Second)
	if code, _ := push(sub, compress.None, make([]byte, 1025), false); code != kerr.TelemetryTooLarge.Code {
		t.Fatalf("too large: %d", code)
	}
	clock.advance(time.Second)
	if code, _ := push(sub, compress.None, []byte{0x0a, 0x7f}, false); code != kerr.InvalidRecord.Code {
		t.Fatalf("bad payload: %d", code)
	}
	clock.advance(time.Second)
	if code, _ := push(sub, compress.Gzip, []byte("not gzip"), false); code != kerr.InvalidRecord.Code {
		t.Fatalf("bad gzip: %d", code)
	}

	// A changed subscription changes the ID: the old one is refused and Get answers at once.
	m.SetSubscriptions(map[string]map[string]string{"perf": {KeyMetrics: "*", KeyIntervalMs: "2000"}})
	if code, _ := push(sub, compress.None, counter, false); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("push after a subscription change: %d", code)
	}
	a = m.Get(id, info)
	if a.ErrorCode != 0 || a.SubscriptionID == sub || a.PushIntervalMs != 2000 || len(a.Metrics) != 1 || a.Metrics[0] != "*" {
		t.Fatalf("changed subscription: %+v (old id %d)", a, sub)
	}
	sub = a.SubscriptionID
	if code, _ := push(sub, compress.None, counter, true); code != 0 {
		t.Fatalf("terminating push: %d", code)
	}
	clock.advance(3 * time.Second)
	if code, _ := push(sub, compress.None, counter, false); code != kerr.InvalidRequest.Code {
		t.Fatalf("push after terminating: %d", code)
	}
	if code, _ := m.Push(PushRequest{SubscriptionID: sub}); code != kerr.InvalidRequest.Code {
		t.Fatalf("zero instance id: %d", code)
	}

	// Expiry: a client that stops pushing is forgotten, with its series.
	clock.advance(minExpiry + time.Second)
	if fams := m.Families(); len(fams) != 0 {
		t.Fatalf("after expiry: %+v", fams)
	}
	if st := m.Stats(); st.Instances != 0 || st.Series != 0 {
		t.Fatalf("stats after expiry: %+v", st)
	}
}

// TestManagerSeriesBound: series past MaxSeries are dropped and counted, and a metric name
// on a broker prefix is not exported.
func TestManagerSeriesBound(t *testing.T) {
	clock := &manualClock{t: time.Unix(1000, 0)}
	m := NewManager(clock.now, math.MaxInt32)
	m.SetSubscriptions(map[string]map[string]string{"all": {KeyMetrics: "*", KeyIntervalMs: "100"}})
	a := m.Get([16]byte{}, ClientInfo{ClientID: "c"})
	var payload []byte
	for i := 0; i < MaxSeries+5; i++ {
		payload = append(payload, otlpMetric("m", false, false, false, int64(i), "i", strconv.Itoa(i))...)
	}
	payload = append(payload, otlpMetric("sluice_partitions", false, false, false, 1)...)
	if code, msg := m.Push(PushRequest{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Metrics: payload}); code != 0 {
		t.Fatalf("push: %d %s", code, msg)
	}
	st := m.Stats()
	if st.Series != MaxSeries || st.DroppedSeries != 6 {
		t.Fatalf("stats %+v", st)
	}
	for _, f := range m.Families() {
		if f.Name == "sluice_partitions" {
			t.Fatal("a client's metric on a broker prefix was exported")
		}
	}
}

func FuzzDecodeMetricsData(f *testing.F) {
	f.Add(otlpMetric("org.apache.kafka.producer.record.send.total", true, true, true, 7, "topic", "t1"))
	f.Add(otlpMetric("g", false, false, false, -3))
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		points, err := DecodeMetricsData(b)
		if err == nil && len(points) > maxPoints {
			t.Fatalf("%d points", len(points))
		}
	})
}

// FuzzPush: any payload under any codec is answered with a code, never a panic, and the
// bounds hold.
func FuzzPush(f *testing.F) {
	f.Add(int8(compress.None), otlpMetric("m", true, true, true, 1, "k", "v"))
	f.Add(int8(compress.Gzip), []byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add(int8(compress.Zstd), []byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, codec int8, payload []byte) {
		clock := &manualClock{t: time.Unix(1000, 0)}
		m := NewManager(clock.now, 1<<20)
		m.SetSubscriptions(map[string]map[string]string{"all": {KeyMetrics: "*"}})
		a := m.Get([16]byte{}, ClientInfo{ClientID: "c"})
		m.Push(PushRequest{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, CompressionType: codec, Metrics: payload})
		if st := m.Stats(); st.Series > MaxSeries {
			t.Fatalf("%d series", st.Series)
		}
		_ = m.Families()
	})
}

// BenchmarkPush measures one accepted push of 200 counters (a Java producer's subscription
// to every metric is about that), decoded and recorded.
func BenchmarkPush(b *testing.B) {
	var payload []byte
	for i := 0; i < 200; i++ {
		payload = append(payload, otlpMetric("org.apache.kafka.producer.metric"+strconv.Itoa(i), true, true, true, 1, "topic", "t1", "node_id", "1")...)
	}
	clock := &manualClock{t: time.Unix(1000, 0)}
	m := NewManager(clock.now, 1<<20)
	m.SetSubscriptions(map[string]map[string]string{"all": {KeyMetrics: "*", KeyIntervalMs: "100"}})
	a := m.Get([16]byte{}, ClientInfo{ClientID: "c"})
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clock.advance(100 * time.Millisecond)
		if code, msg := m.Push(PushRequest{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Metrics: payload}); code != 0 {
			b.Fatal(code, msg)
		}
	}
}
