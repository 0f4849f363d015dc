package compattests

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerOffsetsAreCompacted: sluice's own __consumer_offsets is compacted too. A group
// committing many times over small segments ends with the superseded commits cleaned away
// (few segments left), and after a restart (the coordinator replays the compacted log) the
// group's committed offset is the last one committed.
func TestConsumerOffsetsAreCompacted(t *testing.T) {
	b := StartBroker(t, "log.cleaner.backoff.ms=100", "offsets.topic.segment.bytes=1048576", "offsets.topic.num.partitions=1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	const commits = 600 // with 2×3000 bytes of metadata each: several 1 MiB segments
	for i := 1; i <= commits; i++ {
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: int64(i), LeaderEpoch: -1, Metadata: strings.Repeat("m", 3000)})
		offs.Add(kadm.Offset{Topic: "orders", Partition: 1, At: int64(2 * i), LeaderEpoch: -1, Metadata: strings.Repeat("n", 3000)})
		resp, err := adm.CommitOffsets(ctx, "compacted-group", offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	cl.Close()
	dir := filepath.Join(b.Dir, "__consumer_offsets-0")
	waitFor(t, 60*time.Second, "__consumer_offsets compacted", func() error {
		if !strings.Contains(b.Log(), "partition=__consumer_offsets-0") {
			return fmt.Errorf("no cleaner line for __consumer_offsets-0 yet")
		}
		if n := len(segmentBases(t, dir)); n > 3 {
			return fmt.Errorf("%d segments left", n)
		}
		return nil
	})
	if !b.Stop() {
		t.Fatal("sluice did not stop cleanly")
	}
	b.Restart()
	cl2, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	got, err := groupsCommitted(t, kadm.NewClient(cl2), "compacted-group", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != commits || got[1] != 2*commits {
		t.Fatalf("committed offsets after compaction and a restart: %v, want 0:%d 1:%d", got, commits, 2*commits)
	}
}
