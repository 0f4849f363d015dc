// This file tests the operator HTTP endpoints (--http-addr): /healthz, /readyz and the
// Prometheus /metrics, scraped during a produce/consume run and parsed with Prometheus's own
// text parser.

package compattests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startBrokerWithHTTP starts sluice with --http-addr on a free port and returns it and the
// endpoint's base URL.
func startBrokerWithHTTP(t *testing.T) (*Broker, string) {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	b := StartBrokerWith(t, BrokerOptions{Flags: []string{"--http-addr", addr}})
	return b, "http://" + addr
}

// httpGet returns the status and body of url.
func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrape fetches and parses /metrics with Prometheus's text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refused /metrics: %v", err)
	}
	return families
}

// series returns the value of the sample of family name whose labels include want (a gauge,
// counter, or a histogram's count), summed over every matching sample, and how many matched.
func series(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, int) {
	f := families[name]
	if f == nil {
		return 0, 0
	}
	var sum float64
	n := 0
metrics:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue metrics
			}
		}
		n++
		switch {
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, n
}

func TestMetricsEndpointsUnderLoad(t *testing.T) {
	b, base := startBrokerWithHTTP(t)
	if code, body, err := httpGet(base + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d %q %v", code, body, err)
	}
	waitFor(t, 10*time.Second, "/readyz answers 200", func() error {
		code, body, err := httpGet(base + "/readyz")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		return nil
	})

	const topic, group, records = "metrics-load", "metrics-group", 400
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	// flush.messages=1: every acknowledged append is fsynced, which the flush histogram counts.
	one := "1"
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"flush.messages": &one}, topic); err != nil {
		t.Fatal(err)
	}

	before := scrape(t, base)
	produced0, _ := series(before, "sluice_request_duration_seconds", map[string]string{"api": "Produce"})
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	after := scrape(t, base)
	produced, _ := series(after, "sluice_request_duration_seconds", map[string]string{"api": "Produce"})
	if produced-produced0 < records {
		t.Errorf("Produce request count moved by %v, want at least %d (one synchronous produce per record)", produced-produced0, records)
	}
	if f := after["sluice_request_duration_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("sluice_request_duration_seconds is not a histogram: %v", f)
	} else {
		buckets := 0
		for _, m := range f.Metric {
			buckets += len(m.Histogram.GetBucket())
		}
		if buckets == 0 {
			t.Errorf("request histogram has no buckets")
		}
	}
	if leo, n := series(after, "sluice_partition_log_end_offset", map[string]string{"topic": topic}); n != 2 || leo != records {
		t.Errorf("sluice_partition_log_end_offset for %s: %v over %d partitions, want %d over 2", topic, leo, n, records)
	}
	if hw, _ := series(after, "sluice_partition_high_watermark", map[string]string{"topic": topic}); hw != records {
		t.Errorf("high watermark sum %v, want %d", hw, records)
	}
	if size, _ := series(after, "sluice_partition_log_size_bytes", map[string]string{"topic": topic}); size < records*100 {
		t.Errorf("log size %v bytes, want at least the %d value bytes produced", size, records*100)
	}
	if in, _ := series(after, "sluice_partition_messages_in_total", map[string]string{"topic": topic}); in != records {
		t.Errorf("sluice_partition_messages_in_total for %s: %v, want %d", topic, in, records)
	}
	if in, _ := series(after, "sluice_partition_bytes_in_total", map[string]string{"topic": topic}); in < records*100 {
		t.Errorf("sluice_partition_bytes_in_total for %s: %v, want at least %d", topic, in, records*100)
	}
	if f := after["sluice_partition_bytes_in_total"]; f == nil || f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("sluice_partition_bytes_in_total is not a counter: %v", f)
	}
	// Every append was fsynced (flush.messages=1).
	if f := after["sluice_log_flush_seconds"]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("sluice_log_flush_seconds is not a histogram: %v", f)
	} else if flushes, _ := series(after, "sluice_log_flush_seconds", nil); flushes == 0 {
		t.Errorf("no log fsync counted for a flush.messages=1 topic")
	}
	if _, n := series(after, "sluice_purgatory_size", nil); n != 1 {
		t.Errorf("no sluice_purgatory_size")
	}
	if segs, n := series(after, "sluice_partition_log_segments", map[string]string{"topic": topic}); n != 2 || segs < 2 {
		t.Errorf("segments %v over %d partitions, want at least one each of 2", segs, n)
	}
	for name, want := range map[string]float64{
		"sluice_active_controller":           1,
		"sluice_under_replicated_partitions": 0,
		"sluice_under_min_isr_partitions":    0,
		"sluice_raft_leader_id":              1,
	} {
		if v, n := series(after, name, nil); n != 1 || v != want {
			t.Errorf("%s = %v (%d samples), want %v", name, v, n, want)
		}
	}
	if conns, n := series(after, "sluice_listener_connections", map[string]string{"listener": "PLAINTEXT"}); n != 1 || conns < 1 {
		t.Errorf("sluice_listener_connections{listener=PLAINTEXT} = %v (%d samples) with a client connected", conns, n)
	}
	if term, _ := series(after, "sluice_raft_term", nil); term < 1 {
		t.Errorf("sluice_raft_term = %v, want at least 1", term)
	}
	if commit, _ := series(after, "sluice_raft_commit_index", nil); commit < 1 {
		t.Errorf("sluice_raft_commit_index = %v, want at least 1", commit)
	}
	if _, n := series(after, "go_goroutines", nil); n != 1 {
		t.Errorf("no Go runtime metrics (go_goroutines)")
	}

	// A group that consumed and committed half the records lags by the other half; once it
	// commits the rest its lag is zero.
	consume := func(n int) {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []*kgo.Record
		for len(got) < n {
			fs := c.PollRecords(ctx, n-len(got))
			if err := fs.Err0(); err != nil {
				t.Fatalf("consuming: %v", err)
			}
			got = append(got, fs.Records()...)
		}
		if err := c.CommitRecords(ctx, got...); err != nil {
			t.Fatal(err)
		}
	}
	lag := func() (float64, int) {
		return series(scrape(t, base), "sluice_consumer_group_lag", map[string]string{"group": group, "topic": topic})
	}
	consume(records / 2)
	// Lag is reported for the partitions the group has committed on (as kafka-exporter
	// does): there it is the high watermark minus the commit.
	half := scrape(t, base)
	committed, _ := series(half, "sluice_consumer_group_committed_offset", map[string]string{"group": group, "topic": topic})
	if committed != records/2 {
		t.Errorf("committed offsets after consuming half sum to %v, want %d", committed, records/2)
	}
	wantLag := 0.0
	for p := range 2 {
		labels := map[string]string{"group": group, "topic": topic, "partition": strconv.Itoa(p)}
		c, n := series(half, "sluice_consumer_group_committed_offset", labels)
		if n == 0 {
			continue
		}
		hw, _ := series(half, "sluice_partition_high_watermark", map[string]string{"topic": topic, "partition": strconv.Itoa(p)})
		wantLag += hw - c
	}
	if l, _ := series(half, "sluice_consumer_group_lag", map[string]string{"group": group, "topic": topic}); l != wantLag || l == 0 {
		t.Errorf("group lag after consuming half: %v, want %v (high watermark minus commit, not zero)", l, wantLag)
	}
	fetched, _ := series(scrape(t, base), "sluice_request_duration_seconds", map[string]string{"api": "Fetch"})
	if fetched == 0 {
		t.Errorf("no Fetch requests counted after consuming")
	}
	consume(records / 2)
	// Both consumers together read every record at least once (the second from the first's commits).
	size, _ := series(scrape(t, base), "sluice_partition_log_size_bytes", map[string]string{"topic": topic})
	if out, _ := series(scrape(t, base), "sluice_partition_bytes_out_total", map[string]string{"topic": topic}); out < size*0.9 {
		t.Errorf("sluice_partition_bytes_out_total for %s: %v after reading a log of %v bytes", topic, out, size)
	}
	if l, n := lag(); l != 0 || n != 2 {
		t.Errorf("group lag after consuming everything: %v over %d partitions, want 0 over 2", l, n)
	}
	if c, _ := series(scrape(t, base), "sluice_consumer_group_committed_offset", map[string]string{"group": group, "topic": topic}); c != records {
		t.Errorf("committed offsets sum to %v, want %d", c, records)
	}
}
