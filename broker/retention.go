package broker

import (
	"time"
)

// retentionLoop applies retention (and time-based segment rolls) to every hosted partition
// every log.retention.check.interval.ms, as Kafka's LogManager does.
func (b *Broker) retentionLoop() {
	b.startCleaners() // compaction's workers (cleaner.go), counted in b.done as this loop is
	b.every(time.Duration(b.cfg.Static.LogRetentionCheckIntervalMs)*time.Millisecond, 5*time.Minute, b.retentionPass)
}

// retentionPass is one round of retention over every hosted partition: time and size
// retention first (logstore), then retention.consumed.groups (retention_consumed.go) on the
// partitions this node leads.
func (b *Broker) retentionPass() {
	parts := b.partitionsSnapshot()
	for _, p := range parts {
		if b.offlineCause(p.tp) != nil {
			continue // a failed log refuses work; the storage recovery loop owns it
		}
		// Through the replica: the log start never passes the high watermark.
		if err := p.replica.EnforceRetention(); err != nil {
			b.logger.Warn("retention", "partition", p.tp.String(), "err", err)
		}
	}
	b.enforceConsumedRetention(parts)
}
