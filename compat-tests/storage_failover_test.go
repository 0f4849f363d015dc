package compattests

// A leader whose disk fills up hands its partitions to the other in-sync replicas, on real
// processes: node 2's log directory is a small tmpfs that the test fills to ENOSPC and frees
// again (storage_full_test.go has the helpers).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStorageFailureMovesLeadership: t-0 on replicas 2,3,1 (min.insync.replicas=2), led by 2,
// whose log directory is a tmpfs. With the tmpfs full, 2's append fails (KAFKA_STORAGE_ERROR)
// and 2 reports its log directory offline in its heartbeat: the controller moves leadership to
// 3 and drops 2 from the ISR, so a franz-go producer (acks=all) keeps writing through the
// failure. Once the disk has room again, 2 reopens the log, reports the directory online,
// catches up as a follower and rejoins the ISR, without a restart; every acknowledged record
// is readable. Before, t-0 kept leader 2 and refused every produce and fetch with
// KAFKA_STORAGE_ERROR until the disk had room, although 3 and 1 held its data.
func TestStorageFailureMovesLeadership(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	meta := t.TempDir() // node 2's metadata log stays off the tmpfs: only its partition logs fail
	c := startClusterNodes(t, []string{RoleCombined, RoleBroker, RoleBroker},
		map[int]clusterNode{1: {Dir: filepath.Join(mnt, "data"), Settings: []string{"metadata.log.dir=" + meta}}},
		clusterSettings...)
	n1, b2 := c.Nodes[0], c.Nodes[1]
	waitFor(t, clusterDeadline, "three brokers in Metadata", func() error {
		ids, err := liveBrokers(n1.Addr)
		if err != nil || len(ids) != 3 {
			return fmt.Errorf("brokers %v (%v)", ids, err)
		}
		return nil
	})
	createAssigned(t, n1.Addr, "t", []int32{2, 3, 1}, "min.insync.replicas=2")
	waitPartition(t, n1.Addr, "t", "a full ISR led by 2", elrState{Leader: 2, ISR: []int32{1, 2, 3}})
	cl := franzClient(t, n1.Addr, kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceAckedValues(t, cl, "t", "before", 50)

	filler := fillDisk(t, mnt)
	// A batch larger than a page needs new blocks: the leader's append fails.
	code, _, closed := produceRaw(t, b2.Addr, produceRequest("t", bigBatch("full")))
	if closed || (code != kerr.KafkaStorageError.Code && code != kerr.NotLeaderForPartition.Code) {
		t.Fatalf("produce to 2 on a full disk: code %d (closed %v), want KAFKA_STORAGE_ERROR (or NOT_LEADER_OR_FOLLOWER once it moved)", code, closed)
	}
	waitFor(t, clusterDeadline, "leadership moved off 2", func() error {
		p, err := describeTopicPartition(n1.Addr, "t")
		if err != nil {
			return err
		}
		if p.Leader == 2 || p.Leader == -1 || slices.Contains(p.ISR, 2) || len(p.ISR) != 2 {
			return fmt.Errorf("t-0: %v, want another leader and 2 out of the ISR", p)
		}
		return nil
	})
	acked = append(acked, produceAckedValues(t, cl, "t", "during", 50)...)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, storageRecoverTimeout, "2 back in the ISR", func() error {
		p, err := describeTopicPartition(n1.Addr, "t")
		if err != nil {
			return err
		}
		if !slices.Contains(p.ISR, 2) || len(p.ISR) != 3 {
			return fmt.Errorf("t-0: %v, want 2 back in the ISR", p)
		}
		return nil
	})
	acked = append(acked, produceAckedValues(t, cl, "t", "after", 10)...)
	checkAllPresent(t, consumeAll(t, n1.Addr, "t"), acked)
	if !b2.Alive() {
		t.Fatal("node 2 exited")
	}
}
