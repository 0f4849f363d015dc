package broker

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/batch"
	"sluice/internal/config"
)

// Each test here runs a broker over a log directory, stops it, damages a file the way a crash,
// a disk or an operator can, starts a new broker over the same directory and looks at what a
// client sees.

// withBroker runs fn against a broker over logDir and stops it when fn returns.
func withBroker(t *testing.T, logDir string, fn func(t *testing.T, tb *testBroker)) {
	t.Helper()
	name := "run"
	if !t.Run(name, func(t *testing.T) { fn(t, startTestBroker(t, map[string]string{"log.dirs": logDir})) }) {
		t.FailNow()
	}
}

// consumeValues reads the partition from its start until n records came back and returns
// their values.
func consumeValues(t *testing.T, tb *testBroker, topic string, partition int32, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	var values []string
	for len(values) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records before the deadline", len(values), n)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	return values
}

func wantValues(t *testing.T, got []string, n int) {
	t.Helper()
	for i := range n {
		if got[i] != "v"+strconv.Itoa(i) {
			t.Fatalf("record %d is %q, want %q", i, got[i], "v"+strconv.Itoa(i))
		}
	}
}

// An empty partition.metadata (a write cut short by a crash, a hand edit) named no other
// topic: the directory used to be taken for a previous topic of the same name and deleted
// with every acknowledged record. Now the data stays and is served, and the file is rewritten.
func TestEmptyPartitionMetadataKeepsData(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "keep", 1, nil)
		tb.produce(t, "keep", 0, 50)
	})
	meta := filepath.Join(logDir, "keep-0", partitionMetadataFile)
	if err := os.WriteFile(meta, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		wantValues(t, consumeValues(t, tb, "keep", 0, 50), 50)
		data, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		id := tb.Ctrl.Image().Topics["keep"].ID
		if got, err := parsePartitionMetadata(data); err != nil || got != id {
			t.Fatalf("partition.metadata not rewritten with the topic ID: %q %v", data, err)
		}
	})
}

// A partition.metadata Kafka would read — CRLF endings, padding, extra whitespace — is the
// same topic: the data stays.
func TestPartitionMetadataParsedAsKafka(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	var idText string
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "crlf", 1, nil)
		tb.produce(t, "crlf", 0, 20)
		id := tb.Ctrl.Image().Topics["crlf"].ID
		idText = string(encodePartitionMetadata(id))[len("version: 0\ntopic_id: "):]
		idText = idText[:len(idText)-1]
	})
	meta := filepath.Join(logDir, "crlf-0", partitionMetadataFile)
	if err := os.WriteFile(meta, []byte("  version:0\r\n\r\ntopic_id:   "+idText+"==\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		wantValues(t, consumeValues(t, tb, "crlf", 0, 20), 20)
	})
}

// A partition.metadata that cannot be parsed takes that partition offline: produce and fetch
// answer KAFKA_STORAGE_ERROR, other partitions are served, and no file is deleted. Deleting the
// topic then removes the directory.
func TestGarbagePartitionMetadataTakesPartitionOffline(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "bad", 2, nil)
		tb.produce(t, "bad", 0, 10)
		tb.produce(t, "bad", 1, 10)
	})
	dir := filepath.Join(logDir, "bad-0")
	meta := filepath.Join(dir, partitionMetadataFile)
	if err := os.WriteFile(meta, []byte("\x00\x17garbage that is no partition metadata"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		id := tb.Ctrl.Image().Topics["bad"].ID
		cause := tb.Broker.offlineCause(topicPartition{"bad", 0})
		offline := cause != nil
		var pe *os.PathError
		if !offline || !errors.As(cause, &pe) || pe.Path != meta {
			t.Fatalf("bad-0 offline=%v cause=%v, want offline naming %s", offline, cause, meta)
		}
		produce := kmsg.NewPtrProduceRequest()
		produce.Acks = 1
		produce.TimeoutMillis = 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "bad"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]batch.Record{{Value: []byte("x")}})
		pt.Partitions = append(pt.Partitions, pp)
		produce.Topics = append(produce.Topics, pt)
		produce.Version = 9
		presp := tb.direct(t, produce).(*kmsg.ProduceResponse)
		if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce to offline partition: error %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
		}
		fetch := kmsg.NewPtrFetchRequest()
		fetch.Version = 13
		fetch.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		fresp := tb.direct(t, fetch).(*splicedFetchResponse)
		if code := fresp.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Fatalf("fetch from offline partition: error %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
		}
		wantValues(t, consumeValues(t, tb, "bad", 1, 10), 10)
		if after := dirFiles(t, dir); !equalFileSets(before, after) {
			t.Fatalf("files of the offline partition changed:\n before %v\n after  %v", before, after)
		}

		resp, err := tb.Admin.DeleteTopics(testContext(t), "bad")
		if err != nil || resp["bad"].Err != nil {
			t.Fatalf("delete topic: %v %v", err, resp["bad"].Err)
		}
		tb.Broker.waitForImage(testContext(t), tb.Ctrl.Image().Offset)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the offline partition's directory is still there after its topic was deleted: %v", err)
		}
		if tb.Broker.offlineCause(topicPartition{"bad", 0}) != nil {
			t.Fatal("deleted topic's partition still listed offline")
		}
	})
}

// A partition.metadata that positively names another topic ID is a leftover of a deleted
// topic with the same name: it is discarded (Kafka's behaviour, kept).
func TestOtherTopicIDDirectoryDiscarded(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "old", 1, nil)
		tb.produce(t, "old", 0, 5)
	})
	meta := filepath.Join(logDir, "old-0", partitionMetadataFile)
	var other [16]byte
	other[0] = 0xee
	if err := os.WriteFile(meta, encodePartitionMetadata(other), 0o644); err != nil {
		t.Fatal(err)
	}
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		ctx := testContext(t)
		offs, err := tb.Admin.ListEndOffsets(ctx, "old")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := offs.Lookup("old", 0); o.Err != nil || o.Offset != 0 {
			t.Fatalf("end offset of a discarded directory's partition: %+v", o)
		}
	})
}

func dirFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = info.Size()
	}
	return out
}

func equalFileSets(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// copyDir copies a directory tree (files and subdirectories) from src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A metadata log that comes back older than what the node acted on (restored from an older
// copy) used to be taken as the truth: partitions of topics created later looked like
// leftovers, and creating such a topic again discarded its data. The broker now refuses to
// start, naming the directory and both offsets.
func TestRewoundMetadataWALRefusesStart(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	metadata := filepath.Join(logDir, metadataDirName)
	old := filepath.Join(t.TempDir(), "old-metadata")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "early", 1, nil)
	})
	copyDir(t, metadata, old)
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "late", 1, nil)
		tb.produce(t, "late", 0, 10)
	})
	if err := os.RemoveAll(metadata); err != nil {
		t.Fatal(err)
	}
	copyDir(t, old, metadata)

	ctrl, err := controller.Start(controller.Config{NodeID: 1, Dir: metadata,
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	static, err := config.ParseBroker(map[string]string{"node.id": "1", "log.dirs": logDir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Static: static, LogDir: logDir, Logger: slog.New(slog.DiscardHandler)}, ctrl)
	if err == nil {
		b.Close()
		t.Fatal("broker started on a rewound metadata log")
	}
	if !strings.Contains(err.Error(), logDir) || !strings.Contains(err.Error(), "rewound") {
		t.Fatalf("refusal does not name the directory and the cause: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logDir, "late-0", "00000000000000000000.log")); err != nil {
		t.Fatalf("the unknown topic's data is gone: %v", err)
	}
}

// A topic deletion a crash interrupted (committed, directory not yet removed) leaves a
// directory of a topic ID the metadata no longer knows: it is removed at start, so a new
// topic of the same name starts empty.
func TestInterruptedDeletionDirectoryRemovedAtStart(t *testing.T) {
	logDir := filepath.Join(t.TempDir(), "data")
	saved := filepath.Join(t.TempDir(), "gone-0")
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		tb.createTopic(t, "gone", 1, nil)
		tb.produce(t, "gone", 0, 10)
	})
	copyDir(t, filepath.Join(logDir, "gone-0"), saved)
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		resp, err := tb.Admin.DeleteTopics(testContext(t), "gone")
		if err != nil || resp["gone"].Err != nil {
			t.Fatalf("delete: %v %v", err, resp["gone"].Err)
		}
	})
	copyDir(t, saved, filepath.Join(logDir, "gone-0")) // as if the removal never ran
	withBroker(t, logDir, func(t *testing.T, tb *testBroker) {
		if _, err := os.Stat(filepath.Join(logDir, "gone-0")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("stray directory of the deleted topic still there: %v", err)
		}
		tb.createTopic(t, "gone", 1, nil)
		offs, err := tb.Admin.ListEndOffsets(testContext(t), "gone")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := offs.Lookup("gone", 0); o.Err != nil || o.Offset != 0 {
			t.Fatalf("recreated topic is not empty: %+v", o)
		}
	})
}
