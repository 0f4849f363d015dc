package ops

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Keys and versions past these bounds (none exist today) share one slot per key or go
// through the label lookup each time.
const (
	maxCachedKey     = 128
	maxCachedVersion = 32
)

// requestMetrics is the per-API request latency histogram. Its _count is the request rate.
type requestMetrics struct {
	duration *prometheus.HistogramVec
	// cache holds each (key, version)'s observer once first used.
	cache [maxCachedKey][maxCachedVersion]atomic.Pointer[prometheus.Observer]
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sluice_request_duration_seconds",
		Help: "Time from a request being handed to the broker to its response being ready, by API and version " +
			"(mirrors kafka.network:type=RequestMetrics,name=TotalTimeMs,request=<api> less the network write; " +
			"_count mirrors name=RequestsPerSec).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"api", "version"})}
}

func (m *requestMetrics) observe(key, version int16, elapsed time.Duration) {
	if key < 0 || key >= maxCachedKey || version < 0 || version >= maxCachedVersion {
		m.lookup(key, version).Observe(elapsed.Seconds())
		return
	}
	slot := &m.cache[key][version]
	o := slot.Load()
	if o == nil {
		obs := m.lookup(key, version)
		o = &obs
		slot.Store(o)
	}
	(*o).Observe(elapsed.Seconds())
}

func (m *requestMetrics) lookup(key, version int16) prometheus.Observer {
	name := kmsg.NameForKey(key)
	if name == "" {
		name = "Unknown" + strconv.Itoa(int(key))
	}
	return m.duration.WithLabelValues(name, strconv.Itoa(int(version)))
}
