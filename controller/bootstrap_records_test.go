package controller

import "testing"

// TestBootstrapRecordsWrittenWithClusterID: the first leader of a new log writes
// Config.ClusterID (the formatted one) and Config.BootstrapRecords (sluice format
// --add-scram) with it, and a restart on that log writes them no second time.
func TestBootstrapRecordsWrittenWithClusterID(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.ClusterID = "Zm9ybWF0dGVkLWNsdXN0ZQ"
	cred := &UserScramCredentialRecord{Name: "admin", Mechanism: ScramSHA512, Salt: []byte("salt"),
		StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: 4096}
	cfg.BootstrapRecords = []Record{cred}
	c := startTest(t, cfg)
	im := c.Image()
	if im.ClusterID != cfg.ClusterID {
		t.Errorf("cluster ID %q, want the formatted %q", im.ClusterID, cfg.ClusterID)
	}
	got, ok := im.ScramCredential("admin", ScramSHA512)
	if !ok || string(got.StoredKey) != "stored" || got.Iterations != 4096 {
		t.Fatalf("admin's SCRAM-SHA-512 credential: %+v %v", got, ok)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened with other bootstrap records: the log has its cluster ID, so none is applied.
	cfg.ClusterID = "b3RoZXItY2x1c3Rlci1pZA"
	cfg.BootstrapRecords = []Record{&UserScramCredentialRecord{Name: "late", Mechanism: ScramSHA512, Salt: []byte("s"),
		StoredKey: []byte("k"), ServerKey: []byte("k"), Iterations: 4096}}
	c = startTest(t, cfg)
	im = c.Image()
	if _, ok := im.ScramCredential("late", ScramSHA512); ok || im.ClusterID != "Zm9ybWF0dGVkLWNsdXN0ZQ" {
		t.Errorf("after restart: cluster ID %q, late credential applied %v", im.ClusterID, ok)
	}
}
