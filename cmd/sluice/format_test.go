package main

import (
	"sluice/broker"
	"sluice/controller"
	"strings"
	"testing"
)

// TestParseInitialControllers: Kafka's --initial-controllers syntax, ID@HOST:PORT:DIRECTORY_ID
// (the directory ID a Kafka Uuid), and its refusals.
func TestParseInitialControllers(t *testing.T) {
	got, err := parseInitialControllers("1@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAA,2@[::1]:9095:AQEBAQEBAQEBAQEBAQEBAQ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].NodeID != 1 || got[0].Host != "127.0.0.1" || got[0].Port != 9093 ||
		got[1].NodeID != 2 || got[1].Host != "::1" || got[1].Port != 9095 || got[1].DirectoryID[0] != 1 {
		t.Fatalf("parsed %+v", got)
	}
	for _, bad := range []string{
		"1@127.0.0.1:9093",                                          // no directory ID
		"x@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAA",                   // bad ID
		"1@127.0.0.1:0:AAAAAAAAAAAAAAAAAAAAAA",                      // bad port
		"1@127.0.0.1:9093:short",                                    // not a Uuid
		"1@a:1:AAAAAAAAAAAAAAAAAAAAAA,1@b:2:AAAAAAAAAAAAAAAAAAAAAA", // twice
	} {
		if _, err := parseInitialControllers(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestFormatRefusesConflictingModes: --standalone and --initial-controllers exclude each other,
// and format a controller only.
func TestFormatRefusesConflictingModes(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--set", "log.dirs=" + dir, "--set", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		"--set", "controller.listener.names=CONTROLLER", "--set", "controller.quorum.bootstrap.servers=127.0.0.1:9093"}
	var out strings.Builder
	if err := format(append(base, "--standalone", "--initial-controllers", "1@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAA"), &out); err == nil {
		t.Fatal("--standalone with --initial-controllers accepted")
	}
	if err := format(append(base, "--cluster-id", "abc", "--standalone"), &out); err != nil || !strings.Contains(out.String(), "abc") {
		t.Fatalf("format --standalone: %v %q", err, out.String())
	}
	if err := format(append(base, "--cluster-id", "abc", "--standalone"), &out); err == nil {
		t.Fatal("formatting twice accepted")
	}
	if err := format(append(base, "--cluster-id", "abc", "--standalone", "--ignore-formatted"), &out); err != nil {
		t.Fatalf("--ignore-formatted on the same cluster: %v", err)
	}
}

// TestParseAddScram: Kafka's --add-scram syntax, MECHANISM=[name=NAME,password=PASSWORD] with
// optional iterations and quoted values, salted into a credential the SCRAM server accepts;
// its refusals never repeat the password.
func TestParseAddScram(t *testing.T) {
	r, err := parseAddScram(`SCRAM-SHA-512=[name=admin,password="se,cret",iterations=8192]`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "admin" || r.Mechanism != controller.ScramSHA512 || r.Iterations != 8192 || len(r.Salt) == 0 {
		t.Fatalf("parsed %+v", r)
	}
	if len(r.StoredKey) != 64 || len(r.ServerKey) != 64 { // SHA-512 digests
		t.Fatalf("stored key %d bytes, server key %d", len(r.StoredKey), len(r.ServerKey))
	}
	if r, err := parseAddScram("scram-sha-256=[name=bob,password=pw]"); err != nil || r.Mechanism != controller.ScramSHA256 || r.Iterations != 4096 {
		t.Fatalf("SCRAM-SHA-256 default iterations: %+v %v", r, err)
	}
	for _, bad := range []string{
		"SCRAM-SHA-512=name=admin,password=hunter2",                 // no brackets
		"PLAIN=[name=admin,password=hunter2]",                       // not SCRAM
		"SCRAM-SHA-512=[name=admin]",                                // no password
		"SCRAM-SHA-512=[password=hunter2]",                          // no name
		"SCRAM-SHA-512=[name=admin,password=hunter2,iterations=10]", // too few
		"SCRAM-SHA-512=[name=admin,password=hunter2,salt=abc]",      // not supported
		"SCRAM-SHA-512=[name=admin,password=\"hunter2]",             // unterminated
		"SCRAM-SHA-512=[name=admin,name=b,password=hunter2]",        // twice
	} {
		_, err := parseAddScram(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error repeats the password: %v", bad, err)
		}
	}
}

// TestFormatAddScramWritesBootstrapRecords: format --add-scram on a static quorum leaves the
// credential in bootstrap.records, which reads back as the record the controller applies.
func TestFormatAddScramWritesBootstrapRecords(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--set", "log.dirs=" + dir, "--set", "node.id=1", "--set", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		"--set", "controller.listener.names=CONTROLLER", "--set", "controller.quorum.voters=1@127.0.0.1:9093",
		"--cluster-id", "c2x1aWNlLXNjcmFtLXRscw", "--add-scram", "SCRAM-SHA-512=[name=admin,password=secret]"}
	var out strings.Builder
	if err := format(args, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 SCRAM credential") {
		t.Errorf("output %q", out.String())
	}
	recs, found, err := readBootstrapRecords(dir)
	if err != nil || !found || len(recs) != 1 {
		t.Fatalf("bootstrap records: %v %v %v", recs, found, err)
	}
	r, ok := recs[0].(*controller.UserScramCredentialRecord)
	if !ok || r.Name != "admin" || r.Mechanism != controller.ScramSHA512 {
		t.Fatalf("record %+v", recs[0])
	}
	if _, found, err := readBootstrapRecords(t.TempDir()); found || err != nil {
		t.Errorf("an unformatted directory: found %v, %v", found, err)
	}
}

// TestFormatEveryLogDir: with several log.dirs, `sluice format` writes a meta.properties in
// each, every one of the same cluster and node with its own directory.id, as kafka-storage
// format does.
func TestFormatEveryLogDir(t *testing.T) {
	root := t.TempDir()
	dirs := []string{root + "/d1", root + "/d2", root + "/d3"}
	args := []string{"--set", "log.dirs=" + strings.Join(dirs, ","), "--set", "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		"--set", "controller.listener.names=CONTROLLER", "--set", "controller.quorum.bootstrap.servers=127.0.0.1:9093",
		"--cluster-id", "jbodcluster", "--standalone"}
	var out strings.Builder
	if err := format(args, &out); err != nil {
		t.Fatalf("format: %v", err)
	}
	ids := map[string]bool{}
	for _, d := range dirs {
		mp, err := broker.ReadMetaProperties(d)
		if err != nil || mp == nil {
			t.Fatalf("%s: meta.properties %v, %v", d, mp, err)
		}
		if mp.ClusterID != "jbodcluster" || mp.NodeID != 1 || mp.DirectoryID == "" {
			t.Fatalf("%s: %+v", d, mp)
		}
		ids[mp.DirectoryID] = true
	}
	if len(ids) != len(dirs) {
		t.Fatalf("directory IDs %v: want one per directory", ids)
	}
}
