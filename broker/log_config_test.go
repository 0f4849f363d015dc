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

// TestFetchMaxBytesCapsTheRequest: fetch.max.bytes bounds a fetch that asks for more, as in
// Kafka; the first batch is still returned whole.
func TestFetchMaxBytesCapsTheRequest(t *testing.T) {
	tb := startTestBroker(t, map[string]string{"fetch.max.bytes": "1024"})
	tb.createTopic(t, "capped", 1, nil)
	tb.produce(t, "capped", 0, 20) // one small batch per record
	got := partitionsIn(t, tb.direct(t, fetchReq(0, -1, "capped", map[int32]int64{0: 0})))
	if got[0] == 0 || got[0] > 1024+200 {
		t.Fatalf("fetch.max.bytes=1024, a 1 MiB fetch returned %d record bytes", got[0])
	}
	uncapped := startTestBroker(t, nil)
	uncapped.createTopic(t, "capped", 1, nil)
	uncapped.produce(t, "capped", 0, 20)
	if all := partitionsIn(t, uncapped.direct(t, fetchReq(0, -1, "capped", map[int32]int64{0: 0}))); all[0] <= got[0] {
		t.Fatalf("without the cap the same fetch returned %d bytes, with it %d", all[0], got[0])
	}
}
