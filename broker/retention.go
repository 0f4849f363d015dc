package broker

import (
	"time"
)

// retentionLoop applies retention (and time-based segment rolls) to every hosted partition
// every log.retention.check.interval.ms, as Kafka's LogManager does.
func (b *Broker) retentionLoop() {
	b.startCleaners() // compaction's workers (cleaner.go), counted in b.done as this loop is
	b.every(time.Duration(b.cfg.Static.LogRetentionCheckIntervalMs)*time.Millisecond, 5*time.Minute, func() {
		for _, p := range b.partitionsSnapshot() {
			if b.offlineCause(p.tp) != nil {
				continue // a failed log refuses work; the storage recovery loop owns it
			}
			// Through the replica: the log start never passes the high watermark.
			if err := p.replica.EnforceRetention(); err != nil {
				b.logger.Warn("retention", "partition", p.tp.String(), "err", err)
			}
		}
	})
}
