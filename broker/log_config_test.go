package broker

import (
	"testing"

	"sluice/internal/config"
)

// TestCompactedTopicKeepsItsDataPastRetention: a topic whose cleanup.policy lacks delete (such
// as __consumer_offsets) is not cut by retention.ms or retention.bytes, as in Kafka; before,
// the offsets of a group that had not committed for retention.ms were deleted with their
// segments.
func TestCompactedTopicKeepsItsDataPastRetention(t *testing.T) {
	b := &Broker{cfg: Config{Static: config.DefaultBroker()}}
	for _, tc := range []struct {
		policy            string
		wantMs, wantBytes int64
	}{
		{"delete", 1000, 5000},
		{"compact,delete", 1000, 5000},
		{"compact", -1, -1},
	} {
		s := config.ResolveTopic(map[string]string{"cleanup.policy": tc.policy, "retention.ms": "1000", "retention.bytes": "5000"}, nil, nil, b.cfg.Static)
		lc := b.logConfig(&s)
		if lc.RetentionMs != tc.wantMs || lc.RetentionBytes != tc.wantBytes {
			t.Errorf("cleanup.policy=%s: retention %d ms / %d bytes, want %d / %d", tc.policy, lc.RetentionMs, lc.RetentionBytes, tc.wantMs, tc.wantBytes)
		}
	}
}
