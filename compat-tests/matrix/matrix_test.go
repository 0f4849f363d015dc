package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickMatrix is the fast subset of the matrix that `make test` runs: one scenario per
// client family (each Client's Quick scenario), against one real sluice process. It fails if
// any of those cells fails; n/a is not expected for a quick scenario. The full matrix is
// `make compat`.
func TestQuickMatrix(t *testing.T) {
	logs := t.TempDir()
	m, err := NewMatrix(os.Getenv("SLUICE_BIN"), logs, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	byID := map[string]Scenario{}
	for _, s := range Scenarios {
		byID[s.ID] = s
	}
	for _, c := range Clients() {
		if c.Quick == "" {
			continue
		}
		t.Run(c.ID+"/"+c.Quick, func(t *testing.T) {
			cell := m.RunCell(context.Background(), c, byID[c.Quick])
			if cell.Outcome != Pass {
				log, _ := os.ReadFile(filepath.Join(logs, cell.LogPath))
				t.Errorf("%s × %s: %s: %s\nlog:\n%s", c.Name, c.Quick, cell.Outcome, cell.Detail, log)
			}
		})
	}
	// The share scenario (KIP-932) with franz-go's share consumer: about a second.
	t.Run("franz-go/"+shareScenario, func(t *testing.T) {
		cell := m.RunCell(context.Background(), Clients()[0], byID[shareScenario])
		if cell.Outcome != Pass {
			log, _ := os.ReadFile(filepath.Join(logs, cell.LogPath))
			t.Errorf("franz-go × share: %s: %s\nlog:\n%s", cell.Outcome, cell.Detail, log)
		}
	})
}

// TestShareLedger: the share scenario's ledger check passes the KIP-932 outcome and names each
// way a share group can get it wrong.
func TestShareLedger(t *testing.T) {
	good := func() []shareDelivery {
		var ds []shareDelivery
		for i := 0; i < seedCount; i++ {
			v := fmt.Sprintf("v%d", i)
			ds = append(ds, shareDelivery{Consumer: []string{"c1", "c2"}[i%2], Offset: int64(i), Value: v, Count: 1, Ack: shareAck(v, 1)})
		}
		return append(ds, shareDelivery{Consumer: "c2", Offset: 3, Value: shareReleased, Count: 2, Ack: shareAck(shareReleased, 2)})
	}
	if err := verifyShareLedger(good()); err != nil {
		t.Fatalf("the KIP-932 outcome fails: %v", err)
	}
	var lines []string
	for _, d := range good() {
		lines = append(lines, d.String())
	}
	parsed, err := parseShareLedger("noise\n" + strings.Join(lines, "\n") + "\n")
	if err != nil || verifyShareLedger(parsed) != nil || !shareLedgerComplete(parsed) {
		t.Fatalf("parsed ledger: %v %v", err, verifyShareLedger(parsed))
	}
	for name, c := range map[string]struct {
		edit func([]shareDelivery) []shareDelivery
		want string
	}{
		"missing":           {func(ds []shareDelivery) []shareDelivery { return ds[1:] }, "v0 delivered [], want [1 accept]"},
		"accepted twice":    {func(ds []shareDelivery) []shareDelivery { return append(ds, shareDelivery{"c2", 5, "v5", 2, "accept"}) }, "v5 delivered [c2#1 accept, c2#2 accept]"},
		"released not back": {func(ds []shareDelivery) []shareDelivery { return ds[:seedCount] }, "v3 delivered [c2#1 release], want [1 release, 2 accept]"},
		"rejected back":     {func(ds []shareDelivery) []shareDelivery { return append(ds, shareDelivery{"c1", 7, "v7", 2, "reject"}) }, "v7 delivered [c2#1 reject, c1#2 reject]"},
		"stranger":          {func(ds []shareDelivery) []shareDelivery { return append(ds, shareDelivery{"c1", 10, "x", 1, "accept"}) }, `unexpected record "x"`},
	} {
		err := verifyShareLedger(c.edit(good()))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.want)
		}
	}
}

// TestQuickSecurity is the security section's fast subset for `make test`: franz-go over each
// of the four secured listeners and librdkafka (kcat) over SASL_SSL with SCRAM-SHA-512, against
// one sluice started with the security listeners.
func TestQuickSecurity(t *testing.T) {
	logs := t.TempDir()
	m, err := newMatrix(os.Getenv("SLUICE_BIN"), logs, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	byID := map[string]*Client{}
	for _, c := range Clients() {
		byID[c.ID] = c
	}
	cells := []struct{ client, scenario string }{{"kcat", "sec-scram-sha-512"}}
	for _, s := range securityScenarios {
		cells = append(cells, struct{ client, scenario string }{"franz-go", s.ID})
	}
	for _, cs := range cells {
		var s Scenario
		for _, sc := range securityScenarios {
			if sc.ID == cs.scenario {
				s = sc
			}
		}
		t.Run(cs.client+"/"+cs.scenario, func(t *testing.T) {
			cell := m.RunCell(context.Background(), byID[cs.client], s)
			if cell.Outcome != Pass {
				log, _ := os.ReadFile(filepath.Join(logs, cell.LogPath))
				t.Errorf("%s × %s: %s: %s\nlog:\n%s", cs.client, cs.scenario, cell.Outcome, cell.Detail, log)
			}
		})
	}
}

// TestReportSecuritySection: security cells are rendered in their own table, not as columns of
// the main one, and a security n/a says it is the client's.
func TestReportSecuritySection(t *testing.T) {
	cells := []Cell{
		{Client: "franz-go", Scenario: "group", Outcome: Pass, LogPath: "franz-go/group.log"},
		{Client: "kafka-go", Scenario: "sec-plain", Outcome: Pass, LogPath: "kafka-go/sec-plain.log"},
		{Client: "kafka-go", Scenario: "sec-oauthbearer", Outcome: NA, Detail: "no OAUTHBEARER", LogPath: "kafka-go/sec-oauthbearer.log"},
	}
	out := Report(cells, nil, "logs", time.Second, time.Now(), nil)
	main, sec, ok := strings.Cut(out, "## Security: TLS, mTLS and SASL")
	if !ok {
		t.Fatalf("no security section:\n%s", out)
	}
	if strings.Contains(main, "SASL_PLAINTEXT + PLAIN") {
		t.Errorf("the main table has a security column:\n%s", main)
	}
	sec, _, _ = strings.Cut(sec, "## Failing cells")
	for _, want := range []string{
		"| segmentio/kafka-go v0.4.51 | – | – | [pass](logs/kafka-go/sec-plain.log) | [n/a (client)](logs/kafka-go/sec-oauthbearer.log) |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("security section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "franz-go v1.22") {
		t.Errorf("a client with no security cell has a security row:\n%s", sec)
	}
}

// TestConsoleShareLedger: the console share cell's ledger check (reject v0, release, accept).
func TestConsoleShareLedger(t *testing.T) {
	out := "Offset:0\tDelivery:1\tv0\nProcessed a total of 1 messages\n"
	ds, err := parseConsoleShare("rejecter", "reject", out)
	if err != nil || len(ds) != 1 || ds[0] != (shareDelivery{"rejecter", 0, "v0", 1, "reject"}) {
		t.Fatalf("parse: %+v %v", ds, err)
	}
	for i := 1; i < seedCount; i++ {
		ds = append(ds, shareDelivery{"releaser", int64(i), fmt.Sprintf("v%d", i), 1, "release"})
	}
	for i := 1; i < seedCount; i++ {
		ds = append(ds, shareDelivery{[]string{"c1", "c2"}[i%2], int64(i), fmt.Sprintf("v%d", i), 2, "accept"})
	}
	if err := verifyConsoleShareLedger(ds); err != nil {
		t.Fatalf("the KIP-932 outcome fails: %v", err)
	}
	for name, c := range map[string]struct {
		ds   []shareDelivery
		want string
	}{
		"rejected back":     {append(ds[:len(ds):len(ds)], shareDelivery{"c1", 0, "v0", 2, "accept"}), "v0 delivered [rejecter#1 reject, c1#2 accept]"},
		"accepted twice":    {append(ds[:len(ds):len(ds)], shareDelivery{"c1", 4, "v4", 3, "accept"}), "v4 delivered [releaser#1 release, c1#2 accept, c1#3 accept]"},
		"count not rising":  {append(append(ds[:10:10], shareDelivery{"c1", 1, "v1", 1, "accept"}), ds[11:]...), "v1 delivered [releaser#1 release, c1#1 accept]"},
		"released not back": {ds[:len(ds)-1], "v9 delivered [releaser#1 release]"},
	} {
		err := verifyConsoleShareLedger(c.ds)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, c.want)
		}
	}
}
