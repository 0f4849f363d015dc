package broker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/controller"
)

// TestCleanShutdownFile: a registered broker's clean Close writes Kafka's clean shutdown file
// (.kafka_cleanshutdown, {"version":0,"brokerEpoch":N}) in its log directory;
// TakeCleanShutdownEpoch, what a start calls before it registers, returns that epoch and
// removes the file, so a crash after it leaves none (-1 on the next start). A broker without a
// broker epoch writes none. Before, no file was written and every restart looked the same to
// the controller.
func TestCleanShutdownFile(t *testing.T) {
	c := startReplCluster(t, []int32{1}, nil, nil)
	c.publish(1, controller.PartitionInfo{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	c.produce(1, kgo.AllISRAcks(), "a")
	n := c.nodes[1]
	dir := n.cfg.LogDir
	path := filepath.Join(dir, CleanShutdownFileName)

	c.stopNode(1) // fakeMetadata has no broker epoch: not registered
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a broker without a broker epoch left a clean shutdown file: %v", err)
	}

	b, err := New(n.cfg, &epochMetadata{fakeMetadata: n.meta, epoch: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no clean shutdown file after a clean close: %v", err)
	}
	if string(data) != `{"version":0,"brokerEpoch":7}` {
		t.Fatalf("clean shutdown file holds %q, want Kafka's {\"version\":0,\"brokerEpoch\":7}", data)
	}

	epoch, err := TakeCleanShutdownEpoch(dir)
	if err != nil || epoch != 7 {
		t.Fatalf("TakeCleanShutdownEpoch = %d, %v; want 7", epoch, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the start did not remove the clean shutdown file: %v", err)
	}
	// The process that started crashes: the next start finds no file.
	if epoch, err := TakeCleanShutdownEpoch(dir); err != nil || epoch != -1 {
		t.Fatalf("after a crash TakeCleanShutdownEpoch = %d, %v; want -1", epoch, err)
	}
}

// TestCleanShutdownFileAsKafkaWritesIt: a file as Kafka writes it (other fields ignored) is
// read; one that is not a clean shutdown file (garbage, no epoch, too long) counts as an
// unclean shutdown (-1), as Kafka's CleanShutdownFileHandler.read fails on it, and is removed
// all the same.
func TestCleanShutdownFileAsKafkaWritesIt(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    int64
	}{
		{`{"version":0,"brokerEpoch":42}`, 42},
		{`{"brokerEpoch":42,"version":0,"future":"x"}`, 42},
		{`{"version":0}`, -1},
		{`{"version":0,"brokerEpoch":null}`, -1},
		{`not json`, -1},
		{``, -1},
		{`{"version":0,"brokerEpoch":42}` + string(make([]byte, cleanShutdownFileMax)), -1},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, CleanShutdownFileName)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := TakeCleanShutdownEpoch(dir)
		if err != nil || got != tc.want {
			t.Errorf("%.40q: TakeCleanShutdownEpoch = %d, %v; want %d", tc.content, got, err, tc.want)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%.40q: file not removed: %v", tc.content, err)
		}
	}
}
