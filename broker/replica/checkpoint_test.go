package replica

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"sluice/logstore"
)

func TestHighWatermarkCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	hws := map[TopicPartition]int64{{"b", 1}: 7, {"a", 10}: 0, {"a", 2}: 123456789012}
	if err := WriteHighWatermarks(logstore.OSFS{}, dir, hws); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, HighWatermarkCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's format, sorted.
	if want := "0\n3\na 2 123456789012\na 10 0\nb 1 7\n"; string(data) != want {
		t.Fatalf("file is %q, want %q", data, want)
	}
	got, err := ReadHighWatermarks(logstore.OSFS{}, dir)
	if err != nil || !maps.Equal(got, hws) {
		t.Fatalf("read %v, %v; want %v", got, err, hws)
	}
}

func TestHighWatermarkCheckpointMissingIsEmpty(t *testing.T) {
	got, err := ReadHighWatermarks(logstore.OSFS{}, t.TempDir())
	if err != nil || len(got) != 0 {
		t.Fatalf("read %v, %v; want empty", got, err)
	}
}

func TestParseHighWatermarksRefusesDamage(t *testing.T) {
	for _, in := range []string{
		"", "1\n0\n", "0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "0\n1\nt 0 -1\n",
		"0\n1\nt -1 5\n", "0\n1\n 0 5\n", "0\n1\nt 0 5 6\n", "0\n-1\n", "0\n1\nt 99999999999 1\n",
	} {
		if _, err := ParseHighWatermarks([]byte(in)); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("ParseHighWatermarks(%q) = %v, want ErrCorruptCheckpoint", in, err)
		}
	}
}

func FuzzParseHighWatermarks(f *testing.F) {
	f.Add([]byte("0\n2\na 0 5\nb 3 9\n"))
	f.Add([]byte("0\n0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hws, err := ParseHighWatermarks(data)
		if err != nil {
			return
		}
		again, err := ParseHighWatermarks(EncodeHighWatermarks(hws))
		if err != nil || !maps.Equal(again, hws) {
			t.Fatalf("re-encoded %v parses to %v, %v", hws, again, err)
		}
	})
}
