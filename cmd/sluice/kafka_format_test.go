package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKafkaFormatted: only a metadata directory holding Kafka's bootstrap checkpoint and
// nothing else counts as freshly formatted by kafka-storage format.
func TestKafkaFormatted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"missing", nil, false},
		{"empty", map[string]string{}, false},
		{"bootstrap checkpoint", map[string]string{kafkaBootstrapCheckpoint: "x"}, true},
		{"empty checkpoint", map[string]string{kafkaBootstrapCheckpoint: ""}, false},
		{"a log that ran", map[string]string{kafkaBootstrapCheckpoint: "x", "00000000000000000000.log": "y"}, false},
		{"sluice state", map[string]string{kafkaBootstrapCheckpoint: "x", "raft.wal": "z"}, false},
	} {
		dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
		if tc.files != nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got, err := kafkaFormatted(dir); err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
