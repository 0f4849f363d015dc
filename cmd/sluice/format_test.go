package main

import (
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
