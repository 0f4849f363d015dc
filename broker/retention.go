package broker

import (
	"time"
)

// retentionLoop applies retention (and time-based segment rolls) to every hosted partition
// every log.retention.check.interval.ms, as Kafka's LogManager does.
func (b *Broker) retentionLoop() {
	defer b.done.Done()
	b.startCleaners() // compaction's workers (cleaner.go), counted in b.done as this loop is
	interval := time.Duration(b.cfg.Static.LogRetentionCheckIntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-b.closing:
			return
		case <-ticker.C:
		}
		b.mu.RLock()
		parts := make([]*Partition, 0, len(b.mu.partitions))
		for _, p := range b.mu.partitions {
			parts = append(parts, p)
		}
		b.mu.RUnlock()
		for _, p := range parts {
			if b.offlineCause(p.tp) != nil {
				continue // a failed log refuses work; the storage recovery loop owns it
			}
			// Through the replica: the log start never passes the high watermark.
			if err := p.replica.EnforceRetention(); err != nil {
				b.logger.Warn("retention", "partition", p.tp.String(), "err", err)
			}
		}
	}
}
