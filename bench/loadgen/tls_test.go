package main

import (
	"slices"
	"strings"
	"testing"
)

// The tls mode runs the default mode's 1 KiB acks=all produce rows, with 1 and 4 producers,
// over each listener, so every TLS row has a PLAINTEXT row of the same broker to be costed
// against.
func TestTLSPlanRows(t *testing.T) {
	rows := fullPlan(runConfig{}, "tls")
	listeners := map[string]int{}
	for _, w := range rows {
		if w.Tool != toolLoadgenProduce || !w.AcksAll || w.RecordSize != 1024 || (w.Producers != 1 && w.Producers != 4) || w.NoE2E {
			t.Errorf("tls workload %s: tool %q, acks=all %v, size %d, producers %d, no e2e %v", w.ID, w.Tool, w.AcksAll, w.RecordSize, w.Producers, w.NoE2E)
		}
		listeners[w.Listener]++
	}
	for _, l := range []string{listenerPlain, listenerSSL, listenerSASLSSL} {
		if listeners[l] != 2 {
			t.Errorf("listener %q has %d rows, want 2 (1 and 4 producers)", l, listeners[l])
		}
	}
	for _, id := range []string{"plain-1k-all-p1", "ssl-1k-all-p1", "sasl-ssl-1k-all-p4"} {
		if !slices.ContainsFunc(rows, func(w workload) bool { return w.ID == id }) {
			t.Errorf("no row %s (renderTLSCost looks rows up by these IDs)", id)
		}
	}
}

// Both brokers get the same TLS and SASL keys, Kafka's names for PEM files.
func TestTLSSettings(t *testing.T) {
	m := &tlsMaterial{caFile: "/x/ca.crt", serverPEM: "/x/server.pem"}
	got := strings.Join(m.settings(), "\n")
	for _, want := range []string{"ssl.keystore.type=PEM", "ssl.keystore.location=/x/server.pem", "ssl.truststore.type=PEM",
		"ssl.truststore.location=/x/ca.crt", "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512"} {
		if !strings.Contains(got, want) {
			t.Errorf("settings lack %s:\n%s", want, got)
		}
	}
}
