package console

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// sampler keeps, per topic, the last end offsets (summed over partitions) the console saw, one
// sample per interval, for the throughput sparklines.
type sampler struct {
	keep int // samples kept per topic
	mu   sync.Mutex
	// samples[topic] are the newest keep samples, oldest first.
	samples map[string][]sample
}

type sample struct {
	at  time.Time
	end int64
}

func newSampler(keep int) *sampler {
	return &sampler{keep: max(keep, 2), samples: map[string][]sample{}}
}

func (sm *sampler) record(at time.Time, ends map[string]int64) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for topic := range sm.samples {
		if _, ok := ends[topic]; !ok {
			delete(sm.samples, topic) // deleted
		}
	}
	for topic, end := range ends {
		s := append(sm.samples[topic], sample{at, end})
		if len(s) > sm.keep {
			s = s[len(s)-sm.keep:]
		}
		sm.samples[topic] = s
	}
}

// sampleLoop records every topic's end offsets each SampleInterval until ctx ends.
func (s *Server) sampleLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SampleInterval)
	defer t.Stop()
	for {
		s.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) sampleOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	td, err := s.adm.ListTopics(ctx)
	if err != nil {
		return
	}
	ends, err := s.adm.ListEndOffsets(ctx, td.Names()...)
	if err != nil {
		return
	}
	sums := map[string]int64{}
	for topic, ps := range ends {
		for _, o := range ps {
			if o.Err == nil {
				sums[topic] += o.Offset
			}
		}
	}
	s.sampler.record(time.Now(), sums)
}

// sparkline is a topic's recent produce rate, drawn as an inline SVG polyline.
type sparkline struct {
	Points string  // SVG polyline points, empty when there are fewer than two samples
	Rate   float64 // records per second over the last interval
	Window string  // how long the line covers
}

// Sparkline geometry.
const sparkW, sparkH = 120.0, 24.0

func (sm *sampler) sparkline(topic string) sparkline {
	sm.mu.Lock()
	s := append([]sample(nil), sm.samples[topic]...)
	sm.mu.Unlock()
	if len(s) < 2 {
		return sparkline{}
	}
	rates := make([]float64, 0, len(s)-1)
	peak := 0.0
	for i := 1; i < len(s); i++ {
		dt := s[i].at.Sub(s[i-1].at).Seconds()
		r := 0.0
		if dt > 0 && s[i].end > s[i-1].end {
			r = float64(s[i].end-s[i-1].end) / dt
		}
		rates = append(rates, r)
		peak = max(peak, r)
	}
	var pts strings.Builder
	for i, r := range rates {
		x := sparkW
		if len(rates) > 1 {
			x = float64(i) * sparkW / float64(len(rates)-1)
		}
		y := sparkH - 1
		if peak > 0 {
			y = sparkH - 1 - r/peak*(sparkH-2)
		}
		fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
	}
	return sparkline{Points: strings.TrimSpace(pts.String()), Rate: rates[len(rates)-1],
		Window: s[len(s)-1].at.Sub(s[0].at).Round(time.Second).String()}
}
