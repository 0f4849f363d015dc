package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The rf3 rows need what the issue asks for: three nodes, topics replicated three ways with a
// min ISR of 2, on both brokers alike.
func TestRF3ModeSettings(t *testing.T) {
	if nodesFor("rf3") != 3 || nodesFor("default") != 1 || nodesFor("txn") != 1 {
		t.Fatalf("nodesFor: rf3 %d, default %d, txn %d", nodesFor("rf3"), nodesFor("default"), nodesFor("txn"))
	}
	got := brokerSettings(3, false)
	for _, want := range []string{"default.replication.factor=3", "min.insync.replicas=2", "transaction.state.log.min.isr=2", "offsets.topic.replication.factor=3"} {
		if !slices.Contains(got, want) {
			t.Errorf("brokerSettings(3) = %v, lacks %s", got, want)
		}
	}
	if one := brokerSettings(1, true); !slices.Contains(one, "default.replication.factor=1") || !slices.Contains(one, "log.flush.interval.messages=1") {
		t.Errorf("brokerSettings(1, fsync) = %v", one)
	}
}

func TestPlanRowsPerMode(t *testing.T) {
	cfg := runConfig{BacklogMiB: 1}
	for _, w := range fullPlan(cfg, "rf3") {
		if !w.AcksAll || w.RecordSize != 1024 {
			t.Errorf("rf3 workload %s: acks=all %v, size %d", w.ID, w.AcksAll, w.RecordSize)
		}
	}
	if !slices.ContainsFunc(fullPlan(cfg, "rf3"), func(w workload) bool { return w.PprofNode1 }) {
		t.Error("no rf3 workload profiles sluice's node 1")
	}
	for _, w := range fullPlan(cfg, "txn") {
		if w.Tool != toolLoadgenTxn || w.PerTxn != 100 || w.RecordSize != 1024 {
			t.Errorf("txn workload %s: tool %q, %d per transaction, size %d", w.ID, w.Tool, w.PerTxn, w.RecordSize)
		}
	}
}

func TestKafkaVersionFromJarName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kafka-clients-4.4.0.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := kafkaVersion(dir); got != "4.4.0" {
		t.Errorf("kafkaVersion = %q", got)
	}
	if got := kafkaVersion(t.TempDir()); got != "(unknown version)" {
		t.Errorf("kafkaVersion of an empty dir = %q", got)
	}
}
