package compattests

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fdLimit is the open-file limit (soft and hard) the brokers of these tests run under. sluice
// gives half of it to segment files (128 here); hosted partitions are not bounded by it.
const fdLimit = 256

// startBrokerWithFileLimit is StartBroker with the process's RLIMIT_NOFILE set to nofile (soft
// and hard, so sluice cannot raise it) by util-linux's prlimit, which execs sluice itself:
// signals and restarts work as for StartBroker, every run under the same limit.
func startBrokerWithFileLimit(t *testing.T, nofile int, settings ...string) *Broker {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to run sluice under a lowered file limit: %v", err)
	}
	return StartBrokerWith(t, BrokerOptions{Wrapper: []string{prlimit, fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--"}}, settings...)
}

// Regression for the descriptor exhaustion: every partition held its segments' three files
// open, so a broker under `ulimit -n 256` could host about 80 single-segment partitions; past
// that, creates reported success for partitions it never opened, accept() failed for new
// clients, and the broker failed at every restart with "too many open files".
//
// Under a 256-descriptor limit: 150 partitions of several segments each (well over a thousand
// segment files; more partitions than the 128 files the cache keeps open, which until issue 20
// was also the most partitions CreateTopics admitted) are created, produced to and read back;
// twenty new clients connect while all of that is open; after a kill -9 the broker restarts
// under the same limit and every acknowledged record reads back.
func TestFdLimitManyPartitionsSurviveRestart(t *testing.T) {
	b := startBrokerWithFileLimit(t, fdLimit, "auto.create.topics.enable=false")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	newClient := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0), kgo.RequestRetries(3), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newClient()
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Small segments: each partition gets several, so the files far exceed the limit.
	segment := "4096"
	topics := map[string]int32{"fd-a": 60, "fd-b": 40, "fd-c": 50}
	for name, n := range topics {
		resp, err := adm.CreateTopic(ctx, n, 1, map[string]*string{"internal.segment.bytes": &segment}, name)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s (%d partitions): %v %v %s", name, n, err, resp.Err, resp.ErrMessage)
		}
	}

	const perPartition = 40
	value := func(topic string, p int32, i int) []byte {
		v := fmt.Appendf(nil, "%s/%d/%d/", topic, p, i)
		for len(v) < 200 {
			v = append(v, 'x')
		}
		return v
	}
	produce := func(cl *kgo.Client, from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for name, n := range topics {
			for p := int32(0); p < n; p++ {
				for i := from; i < to; i++ {
					recs = append(recs, &kgo.Record{Topic: name, Partition: p, Value: value(name, p, i)})
				}
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	for from := 0; from < perPartition/2; from += 10 { // one ~2.5 KB batch per partition each
		produce(cl, from, from+10)
	}

	// New clients connect and are served while every partition is open and written.
	connectMany := func() {
		t.Helper()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; i < 20; i++ {
			if err := probeApiVersions(b.Addr); err != nil {
				t.Fatalf("new client %d: %v", i, err)
			}
			c, err := net.DialTimeout("tcp", b.Addr, time.Second)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, c)
		}
		if err := probeApiVersions(b.Addr); err != nil {
			t.Fatalf("a client with 20 other connections open: %v", err)
		}
	}
	connectMany()
	for from := perPartition / 2; from < perPartition; from += 10 {
		produce(cl, from, from+10)
	}
	cl.Close()

	// The premise: far more segment files than the process may hold open.
	segmentFiles := 0
	filepath.WalkDir(b.Dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".log") || strings.HasSuffix(path, ".index") || strings.HasSuffix(path, ".timeindex")) {
			segmentFiles++
		}
		return nil
	})
	t.Logf("%d segment files under a limit of %d descriptors", segmentFiles, fdLimit)
	if segmentFiles < 3*fdLimit {
		t.Fatalf("%d segment files; the test wants several times the limit of %d", segmentFiles, fdLimit)
	}

	b.Kill()
	b.Restart() // under the same limit: it must open every partition it hosted

	cl2 := newClient()
	defer cl2.Close()
	connectMany()
	for name, n := range topics {
		readTopicExactly(ctx, t, b.Addr, name, n, perPartition, value)
	}
	// And it still takes writes to all of them.
	produce(cl2, perPartition, perPartition+1)
}

// readTopicExactly consumes every partition of topic from the start and checks each holds
// exactly n records, the i-th of partition p being value(topic, p, i).
func readTopicExactly(ctx context.Context, t *testing.T, addr, topic string, partitions int32, n int, value func(string, int32, int) []byte) {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make([]int, partitions)
	done := int32(0)
	for done < partitions {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: read %v of %d records per partition: %v", topic, got, n, err)
		}
		for _, fe := range fetches.Errors() {
			t.Fatalf("%s-%d: fetch error %v", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			i := got[p]
			if i >= n || r.Offset != int64(i) || string(r.Value) != string(value(topic, p, i)) {
				t.Fatalf("%s-%d offset %d: %q, want offset %d %q", topic, p, r.Offset, r.Value, i, value(topic, p, i))
			}
			got[p]++
			if got[p] == n {
				done++
			}
		})
	}
}
