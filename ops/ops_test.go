package ops

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sluice/controller"
)

func listen(t *testing.T) *Server {
	t.Helper()
	im := &controller.Image{ControllerID: 1, Offset: 7}
	s, err := Listen(Config{Addr: "127.0.0.1:0", NodeID: 1, Image: func() *controller.Image { return im }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestReadyzFollowsServing: /healthz answers from the start; /readyz is 503 until the
// listeners are open and again once shutdown began.
func TestReadyzFollowsServing(t *testing.T) {
	s := listen(t)
	if code, _ := get(t, s, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz before serving: %d", code)
	}
	if code, body := get(t, s, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "listeners are not open") {
		t.Errorf("/readyz before serving: %d %q", code, body)
	}
	s.SetServing(nil) // a controller-only node
	if code, body := get(t, s, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz serving: %d %q", code, body)
	}
	s.StopServing()
	if code, _ := get(t, s, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after StopServing: %d", code)
	}
}

// TestRequestHistogramByAPIAndVersion: each observation lands in its API's and version's
// series, which the Prometheus text parser reads back.
func TestRequestHistogramByAPIAndVersion(t *testing.T) {
	s := listen(t)
	s.ObserveRequest(0, 9, time.Millisecond)
	s.ObserveRequest(0, 9, 3*time.Millisecond)
	s.ObserveRequest(1, 12, time.Second)
	code, body := get(t, s, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("text parser: %v", err)
	}
	counts := map[string]uint64{}
	for _, m := range families["sluice_request_duration_seconds"].GetMetric() {
		var api, version string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "api":
				api = l.GetValue()
			case "version":
				version = l.GetValue()
			}
		}
		counts[api+"/"+version] = m.GetHistogram().GetSampleCount()
	}
	if counts["Produce/9"] != 2 || counts["Fetch/12"] != 1 || len(counts) != 2 {
		t.Errorf("request counts %v, want Produce/9: 2, Fetch/12: 1", counts)
	}
	if v := families["sluice_active_controller"].GetMetric(); len(v) != 1 || v[0].GetGauge().GetValue() != 1 {
		t.Errorf("sluice_active_controller: %v", v)
	}
}

// BenchmarkObserveRequest is the per-request cost wire pays with --http-addr set.
func BenchmarkObserveRequest(b *testing.B) {
	m := newRequestMetrics()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observe(0, 11, 250*time.Microsecond)
		}
	})
}

// TestGrafanaDashboardUsesServedMetrics keeps docs/grafana/sluice-dashboard.json on metrics
// /metrics really serves: every sluice_ series its queries name is one the server describes.
func TestGrafanaDashboardUsesServedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../docs/grafana/sluice-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	served := map[string]bool{}
	descs := make(chan *prometheus.Desc, 100)
	(&brokerCollector{}).Describe(descs)
	newRequestMetrics().duration.Describe(descs)
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			served[m[1]] = true
		}
	}
	name := regexp.MustCompile(`sluice_[a-z_]+`)
	used := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
				if !served[base] {
					t.Errorf("panel %q queries %s, which /metrics does not serve", p.Title, n)
				}
				used++
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard queries no sluice metric")
	}
}
