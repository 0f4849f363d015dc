package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"sluice/internal/testcluster"
)

// TestChaosTxnShort is the short transactional chaos run: three real nodes, the
// consume-transform-produce workload and the aborter, kill -9 of a transaction coordinator
// and of an output partition's leader, then the final reads. Any anomaly fails it, and so
// does a run without a committed transform transaction or a deliberate abort.
func TestChaosTxnShort(t *testing.T) {
	bin, err := testcluster.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunTxn(ctx, TxnConfig{Config: Config{
		Bin: bin, Nodes: 3, Nemeses: []string{KillTxnCoordinator, KillOutputLeader},
		Duration: 45 * time.Second, Seed: 1, Log: logWriter{t},
		// A quicker retry of the produce answered CONCURRENT_TRANSACTIONS after each commit:
		// transactions of about 250 ms instead of 5 s, so many more of them meet a kill.
		MetadataMinAge: 250 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Committed == 0 || r.WantAborted == 0 {
		t.Fatalf("no transform transaction committed, or none aborted on purpose: %s", r.Summary())
	}
	for _, c := range append(r.Classes(), r.Input.Classes()...) {
		if c.Class.Count > 0 {
			t.Errorf("%s: %d, e.g. %v", c.Name, c.Class.Count, c.Class.Examples)
		}
	}
	if !r.FinalComplete || !r.Input.FinalComplete {
		t.Error("a final read did not reach every partition's end")
	}
	if t.Failed() {
		for _, path := range res.NodeLogs {
			if data, err := os.ReadFile(path); err == nil {
				t.Logf("%s (last 8 KiB):\n%s", path, tail(data, 8<<10))
			}
		}
	}
}
