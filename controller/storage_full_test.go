package controller

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// mountTmpfs mounts a small tmpfs on a fresh directory, unmounted in t.Cleanup (registered
// before the controller's Close, so it runs after it). The test runs as root; a failed mount
// fails it.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v: %s (this test needs root)", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes dir/filler until the file system is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for size := len(chunk); size > 0; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			size /= 2
		}
	}
	return path
}

// bigTopic is a CreateTopics whose records take more than a page of WAL.
func bigTopic(name string) CreateTopic {
	return CreateTopic{Name: name, NumPartitions: 200, ReplicationFactor: 1}
}

// TestWALFullRecovers: ENOSPC on the metadata WAL used to stop the controller for good while
// the process kept serving (CreateTopics answered NOT_CONTROLLER after its whole timeout).
// Now a proposal is answered at once with KAFKA_STORAGE_ERROR naming the WAL, the controller
// keeps the failed Ready un-Advanced and retries, and once space returns it serves again; a
// restart then reads a consistent WAL holding every committed change.
func TestWALFullRecovers(t *testing.T) {
	for _, every := range []int{0, 3} {
		mnt := mountTmpfs(t, "2m")
		cfg := testConfig(filepath.Join(mnt, "meta"))
		cfg.SnapshotEvery = every
		c := startTest(t, cfg)
		mustCreate(t, c, CreateTopic{Name: "before", NumPartitions: 1, ReplicationFactor: 1})

		filler := fillDisk(t, mnt)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := c.CreateTopics(ctx, []CreateTopic{bigTopic("while-full")}, false)
		cancel()
		if err != nil {
			t.Fatalf("snapshot every %d: CreateTopics on a full disk: %v, want a per-topic KAFKA_STORAGE_ERROR", every, err)
		}
		if !errors.Is(res[0].Err, kerr.KafkaStorageError) {
			t.Fatalf("snapshot every %d: CreateTopics on a full disk: %v (%s), want KAFKA_STORAGE_ERROR", every, res[0].Err, res[0].Message)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := c.CreateTopics(ctx, []CreateTopic{bigTopic("after")}, false)
			cancel()
			if err == nil && res[0].Err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("snapshot every %d: CreateTopics after space returned: %v / %v (%s)", every, err, res[0].Err, res[0].Message)
			}
			// Each answer comes back at once while the WAL is still being repaired; wait
			// for the controller's next retry.
			select {
			case <-c.Image().Changed():
			case <-time.After(200 * time.Millisecond):
			}
		}
		for i := range every * 2 {
			mustCreate(t, c, CreateTopic{Name: "more-" + string(rune('a'+i)), NumPartitions: 1, ReplicationFactor: 1})
		}
		want := replicatedState(c.Image())
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		c2 := startTest(t, cfg)
		if got := replicatedState(c2.Image()); got != want {
			t.Fatalf("snapshot every %d: after restart\n%s\nwant\n%s", every, got, want)
		}
		if c2.Image().Topics["before"] == nil || c2.Image().Topics["after"] == nil {
			t.Fatalf("snapshot every %d: topics lost across the full disk: %v", every, c2.Image().Topics)
		}
		c2.Close()
	}
}
