package compattests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var errNotYet = errors.New("not yet")

// TestVersionFlag: `sluice --version` prints one line naming sluice, the commit and the Kafka
// protocol it follows, and exits 0 without starting a broker.
func TestVersionFlag(t *testing.T) {
	out := runCmd(t, 30*time.Second, "", sluiceBinary(t), "--version")
	if !strings.HasPrefix(out, "sluice ") || !strings.Contains(out, "commit ") || !strings.Contains(out, "Kafka 4.4 protocol") ||
		strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("--version printed %q", out)
	}
}

// TestLogFormatJSON: with --log-format json every line the broker writes is one JSON object
// with time, level and msg, and the start line carries the version and node; a wrong format
// is refused before anything starts.
func TestLogFormatJSON(t *testing.T) {
	b := StartBrokerWith(t, BrokerOptions{Flags: []string{"--log-format", "json"}})
	// The listener answers a moment before the start line is written.
	waitFor(t, 30*time.Second, "the start line", func() error {
		if !strings.Contains(b.Log(), `"msg":"sluice started"`) {
			return errNotYet
		}
		return nil
	})
	var started map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.Log()))
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "=====") { // the harness's own markers
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Fatalf("log line lacks %q: %q", k, line)
			}
		}
		lines++
		if rec["msg"] == "sluice started" {
			started = rec
		}
	}
	if started == nil || !strings.HasPrefix(started["version"].(string), "sluice ") || started["node.id"] == nil {
		t.Fatalf("no JSON start line with version and node.id among %d lines:\n%s", lines, b.Log())
	}
	_, stderr, err := runCmdErr(30*time.Second, "", sluiceBinary(t), "--log-format", "xml")
	if err == nil || !strings.Contains(stderr, `--log-format "xml": want text or json`) {
		t.Fatalf("--log-format xml: err %v, stderr %q", err, stderr)
	}
}

// TestStartupReportsOpenedLogs: a broker restarted on 120 partitions says at start how many
// logs it opened, with their segments and bytes and how long it took.
func TestStartupReportsOpenedLogs(t *testing.T) {
	b := StartBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 120, 1, nil, "many"); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Kill()
	b.Restart()
	waitFor(t, time.Minute, "the opened-logs line of the restart", func() error {
		_, second, _ := strings.Cut(b.Log(), "===== sluice run 2")
		for _, line := range strings.Split(second, "\n") {
			if strings.Contains(line, `msg="partition logs opened"`) && strings.Contains(line, "partitions=120") &&
				strings.Contains(line, "segments=120") && strings.Contains(line, "took=") {
				return nil
			}
		}
		return errNotYet
	})
}
