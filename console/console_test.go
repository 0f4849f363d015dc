package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A read-only console refuses every form with 403 before it asks the cluster anything (the
// seed broker here does not exist).
func TestReadOnlyConsoleRefusesWrites(t *testing.T) {
	s, err := New(Config{Brokers: []string{"127.0.0.1:1"}, RequestTimeout: time.Second, SampleInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, path := range []string{"/topics", "/groups/g1/seek"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(url.Values{"name": {"x"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "read-only") {
			t.Fatalf("POST %s on a read-only console: %d %q", path, rec.Code, rec.Body.String())
		}
	}
	// A page whose cluster does not answer says so with 502, in the page layout.
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "did not answer") || !strings.Contains(rec.Body.String(), "<nav>") {
		t.Fatalf("overview without a cluster: %d %q", rec.Code, rec.Body.String())
	}
}

func TestParseMessageQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		ok    bool
		want  messageQuery
	}{
		{"", true, messageQuery{Partition: -1, From: "end", Limit: defaultMessages}},
		{"partition=2&from=offset&offset=7&limit=9000&key=k", true, messageQuery{Partition: 2, From: "offset", Offset: 7, Limit: maxMessages, Key: "k"}},
		{"from=timestamp&timestamp=2026-12-01T10:00:00Z", true, messageQuery{Partition: -1, From: "timestamp", Timestamp: "2026-12-01T10:00:00Z", Limit: defaultMessages}},
		{"from=timestamp&timestamp=yesterday", false, messageQuery{}},
		{"from=offset&offset=-1", false, messageQuery{}},
		{"partition=x", false, messageQuery{}},
		{"from=sideways", false, messageQuery{}},
		{"limit=0", false, messageQuery{}},
	} {
		r := httptest.NewRequest(http.MethodGet, "/topics/t/messages?"+tc.query, nil)
		got, err := parseMessageQuery(r)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%q: %+v, %v; want %+v ok=%v", tc.query, got, err, tc.want, tc.ok)
		}
	}
}

func TestSparklineFollowsTheRate(t *testing.T) {
	sm := newSampler(4)
	t0 := time.Unix(1_700_000_000, 0)
	if sl := sm.sparkline("t"); sl.Points != "" {
		t.Fatalf("sparkline without samples: %+v", sl)
	}
	for i, end := range []int64{0, 100, 100, 400, 500} { // rates 10, 0, 30, 10 per second
		sm.record(t0.Add(time.Duration(i)*10*time.Second), map[string]int64{"t": end})
	}
	sl := sm.sparkline("t")
	// Four samples kept (100, 100, 400, 500): rates 0, 30, 10; the last is 10/s.
	if sl.Rate != 10 || strings.Count(sl.Points, ",") != 3 || sl.Window != "30s" {
		t.Fatalf("sparkline %+v", sl)
	}
	sm.record(t0.Add(time.Minute), map[string]int64{}) // the topic was deleted
	if sl := sm.sparkline("t"); sl.Points != "" {
		t.Fatalf("a deleted topic keeps its sparkline: %+v", sl)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{-1: "?", 0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
