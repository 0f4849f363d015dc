package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"sluice/internal/testcluster"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testcluster.RemoveBuilt()
	os.Exit(code)
}

// logWriter sends a run's timeline to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaosShort is make test's chaos run: three real nodes, RF 3, min.insync.replicas=2, the
// queue workload, and two nemeses in turn (kill -9 of a partition leader, the leader cut off
// from the other nodes), then the final read. Any anomaly fails it.
func TestChaosShort(t *testing.T) {
	bin, err := testcluster.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Bin: bin, Nodes: 3, Nemeses: []string{KillLeader, PartitionLeader},
		Duration: 55 * time.Second, Seed: 1, Log: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Acked == 0 {
		t.Fatal("no send was acknowledged")
	}
	for _, c := range r.Classes() {
		if c.Class.Count > 0 {
			t.Errorf("%s: %d, e.g. %v", c.Name, c.Class.Count, c.Class.Examples)
		}
	}
	if !r.FinalComplete {
		t.Error("the final read did not reach every partition's end")
	}
	if t.Failed() {
		for _, path := range res.NodeLogs {
			if data, err := os.ReadFile(path); err == nil {
				t.Logf("%s (last 8 KiB):\n%s", path, tail(data, 8<<10))
			}
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
