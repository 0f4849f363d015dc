package broker

import (
	"errors"
	"math"
	"sync"
	"time"

	"sluice/logstore"
)

// The log cleaner, as Kafka's LogCleaner schedules it: log.cleaner.threads workers (none
// when log.cleaner.enable is false) each take the filthiest compacted log — the largest
// dirty ratio at or above min.cleanable.dirty.ratio, or one with a segment older than
// max.compaction.lag.ms — clean it (logstore.Log.Clean, never past the high watermark) and
// look again; with nothing to clean a worker waits log.cleaner.backoff.ms. The key map of
// each worker gets log.cleaner.dedupe.buffer.size / threads bytes, and every worker's reads
// and writes share one log.cleaner.io.max.bytes.per.second budget.

// cleanerState is what the workers share.
type cleanerState struct {
	mu sync.Mutex
	// inProgress are the partitions a worker is cleaning now. Guarded by mu.
	inProgress map[*Partition]bool
	throttle   *ioThrottle
}

// startCleaners starts the cleaner workers. Called from a goroutine counted in b.done.
func (b *Broker) startCleaners() {
	cfg := b.cfg.Static
	threads := int(cfg.Int32("log.cleaner.threads"))
	if !cfg.Bool("log.cleaner.enable") || threads <= 0 {
		return
	}
	st := &cleanerState{inProgress: map[*Partition]bool{},
		throttle: newIOThrottle(cfg.Float64("log.cleaner.io.max.bytes.per.second"), b.closing)}
	opts := logstore.CleanOptions{
		MapBytes:   cfg.Int64("log.cleaner.dedupe.buffer.size") / int64(threads),
		LoadFactor: cfg.Float64("log.cleaner.io.buffer.load.factor"),
		Throttle:   st.throttle.wait,
	}
	// Each worker makes its key map at its first clean and keeps it, as Kafka's cleaner
	// threads own their dedupe buffers.
	backoff := time.Duration(cfg.Int64("log.cleaner.backoff.ms")) * time.Millisecond
	b.done.Add(threads)
	for i := 0; i < threads; i++ {
		go b.cleanerWorker(st, opts, backoff)
	}
}

func (b *Broker) cleanerWorker(st *cleanerState, opts logstore.CleanOptions, backoff time.Duration) {
	defer b.done.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var m *logstore.CleanerMap
	for {
		select {
		case <-b.closing:
			return
		case <-timer.C:
		}
		for {
			p, hw := b.grabFilthiestLog(st)
			if p == nil {
				break
			}
			if m == nil {
				m = logstore.NewCleanerMap(opts.MapBytes, opts.LoadFactor)
			}
			o := opts
			o.UpTo, o.Map = hw, m
			res, err := p.log.Clean(o)
			st.mu.Lock()
			delete(st.inProgress, p)
			st.mu.Unlock()
			if err != nil {
				if !errors.Is(err, errCleanerStopped) && !errors.Is(err, logstore.ErrClosed) {
					b.logger.Warn("log cleaner", "partition", p.tp.String(), "err", err)
				}
				break // the next round, after the backoff
			}
			if res.Cleaned {
				b.logger.Info("log cleaner: cleaned", "partition", p.tp.String(), "segments", res.Segments,
					"bytesRead", res.BytesRead, "bytesWritten", res.BytesWritten, "recordsRemoved", res.RecordsRemoved)
			} else {
				break // nothing it could do now (min.compaction.lag.ms, the HW): wait
			}
		}
		timer.Reset(backoff)
	}
}

// grabFilthiestLog picks the compacted partition most in need of cleaning and marks it in
// progress; nil if none is (Kafka's LogCleanerManager.grabFilthiestCompactedLog).
func (b *Broker) grabFilthiestLog(st *cleanerState) (*Partition, int64) {
	parts := b.partitionsSnapshot()
	var best *Partition
	var bestHW int64
	bestRatio := -1.0
	for _, p := range parts {
		s := p.settings.Load()
		if s == nil || !s.CleanupCompact || b.offlineCause(p.tp) != nil {
			continue
		}
		st.mu.Lock()
		busy := st.inProgress[p]
		st.mu.Unlock()
		if busy {
			continue
		}
		// Kafka's first uncleanable offset is bounded by the last stable offset: an open
		// transaction's records are not cleaned before its marker decides their fate.
		hw := p.replica.Snapshot().LastStable
		ratio, overdue, ok := p.log.CleanableState(hw)
		if !ok || (ratio < s.MinCleanableDirtyRatio && !overdue) {
			continue
		}
		if overdue {
			ratio = math.Inf(1) // Kafka cleans logs past max.compaction.lag.ms first
		}
		if ratio > bestRatio {
			best, bestRatio, bestHW = p, ratio, hw
		}
	}
	if best == nil {
		return nil, 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.inProgress[best] {
		return nil, 0 // another worker took it meanwhile; the next round looks again
	}
	st.inProgress[best] = true
	return best, bestHW
}

var errCleanerStopped = errors.New("broker: log cleaner stopped")

// ioThrottle holds the cleaners to bytesPerSecond together (Kafka's Throttler): after each
// chunk of I/O, a worker waits until the bytes done since the throttle's start no longer
// exceed the rate.
type ioThrottle struct {
	bytesPerSecond float64
	closing        <-chan struct{}
	mu             sync.Mutex
	start          time.Time // guarded by mu
	done           float64   // bytes since start; guarded by mu
}

func newIOThrottle(bytesPerSecond float64, closing <-chan struct{}) *ioThrottle {
	return &ioThrottle{bytesPerSecond: bytesPerSecond, closing: closing, start: time.Now()}
}

// wait accounts n bytes and blocks while the cleaners are ahead of the rate; it returns
// errCleanerStopped when the broker is closing.
func (t *ioThrottle) wait(n int) error {
	select {
	case <-t.closing:
		return errCleanerStopped
	default:
	}
	if t.bytesPerSecond <= 0 || t.bytesPerSecond >= math.MaxFloat64/2 {
		return nil
	}
	t.mu.Lock()
	now := time.Now()
	if elapsed := now.Sub(t.start); elapsed > time.Second {
		// A fresh window, so that idle time is not saved up as a burst.
		t.start, t.done = now, 0
	}
	t.done += float64(n)
	ahead := time.Duration(t.done/t.bytesPerSecond*float64(time.Second)) - now.Sub(t.start)
	t.mu.Unlock()
	if ahead <= 0 {
		return nil
	}
	timer := time.NewTimer(ahead)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-t.closing:
		return errCleanerStopped
	}
}
