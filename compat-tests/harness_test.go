// This file is the harness: thin test wrappers over internal/testcluster (which builds, starts,
// kills and restarts sluice processes) and raw Kafka request framing. The package doc is in doc.go.

package compattests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/testcluster"
)

// startDeadline bounds how long a sluice process may take to answer ApiVersions after start.
const startDeadline = testcluster.StartDeadline

// stopDeadline bounds how long a SIGTERMed sluice may take to exit before it is SIGKILLed.
const stopDeadline = testcluster.StopDeadline

// maxLogInFailure bounds the log tail printed into a failed test's output.
const maxLogInFailure = 32 << 10

func TestMain(m *testing.M) {
	code := m.Run()
	testcluster.RemoveBuilt()
	os.Exit(code)
}

// moduleRoot is the directory holding go.mod.
func moduleRoot() (string, error) { return testcluster.ModuleRoot() }

// sluiceBinary builds cmd/sluice once per test binary run and returns its path. SLUICE_BIN,
// when set, names an already built binary to use instead.
func sluiceBinary(t testing.TB) string {
	t.Helper()
	bin, err := testcluster.Binary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct free ports (see testcluster.FreePorts).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := testcluster.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// Broker is one running (or stopped) sluice process with a fixed data dir and port: a
// testcluster.Node whose failures fail the test.
type Broker struct {
	*testcluster.Node
	t    testing.TB
	bin  string   // the command run (a wrapper's, when there is one)
	args []string // its arguments
	Port int
	log  *testcluster.TailBuffer // every run's stderr/stdout, runs separated by a marker line
}

// StartBroker starts sluice with a fresh data dir on a free port plus the given extra
// "key=value" broker settings, and waits until it answers ApiVersions. It is stopped in
// t.Cleanup; its log is printed if the test failed.
func StartBroker(t testing.TB, settings ...string) *Broker {
	t.Helper()
	return StartBrokerWith(t, BrokerOptions{}, settings...)
}

// BrokerOptions change how StartBrokerWith starts sluice.
type BrokerOptions struct {
	// Dir is log.dirs; empty means a fresh temporary directory.
	Dir string
	// Wrapper runs sluice under another command, given as its argv before sluice's (e.g.
	// prlimit --nofile=256:256 --).
	Wrapper []string
	// Port is the client listener's port; 0 means a free one.
	Port int
	// Flags are further command-line flags for sluice (e.g. --http-addr ADDR).
	Flags []string
}

// StartBrokerWith is StartBroker with options.
func StartBrokerWith(t testing.TB, opts BrokerOptions, settings ...string) *Broker {
	t.Helper()
	b := newBroker(t, opts, settings...)
	b.start()
	return b
}

// newBroker prepares a Broker (stopped in t.Cleanup, its log printed if the test failed)
// without starting it.
func newBroker(t testing.TB, opts BrokerOptions, settings ...string) *Broker {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Port == 0 {
		opts.Port = freePort(t)
	}
	log := &testcluster.TailBuffer{}
	node, err := testcluster.NewNode(testcluster.NodeConfig{
		Bin:      sluiceBinary(t),
		Wrapper:  opts.Wrapper,
		Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)),
		Dir:      opts.Dir,
		Settings: settings,
		Flags:    opts.Flags,
		Output:   log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return wrapNode(t, node, log, opts.Port)
}

// wrapNode makes node (its output in log) into a Broker that is stopped in t.Cleanup and whose
// log is printed if the test failed.
func wrapNode(t testing.TB, node *testcluster.Node, log *testcluster.TailBuffer, port int) *Broker {
	t.Helper()
	argv := node.Args()
	b := &Broker{Node: node, t: t, bin: argv[0], args: argv[1:], Port: port, log: log}
	t.Cleanup(func() {
		b.Stop()
		if t.Failed() {
			out := b.log.String()
			if len(out) > maxLogInFailure {
				out = fmt.Sprintf("[... %d earlier bytes ...]\n%s", len(out)-maxLogInFailure, out[len(out)-maxLogInFailure:])
			}
			t.Logf("sluice log (%s, args %q):\n%s", b.Dir, b.args, out)
		}
	})
	return b
}

// start launches the process and waits until it answers ApiVersions.
func (b *Broker) start() {
	b.t.Helper()
	if err := b.Node.Start(); err != nil {
		b.t.Fatal(err)
	}
}

// probeApiVersions sends an ApiVersions v3 request on a new connection and checks error 0.
func probeApiVersions(addr string) error { return testcluster.ProbeApiVersions(addr) }

// Kill SIGKILLs the process and waits for it to be gone.
func (b *Broker) Kill() {
	b.t.Helper()
	if err := b.Node.Kill(); err != nil {
		b.t.Fatal(err)
	}
}

// Restart starts the process again on the same data dir and port (after Kill or Stop).
func (b *Broker) Restart() {
	b.t.Helper()
	if err := b.Node.Restart(); err != nil {
		b.t.Fatal(err)
	}
}

// Log returns the captured output of every run so far.
func (b *Broker) Log() string { return b.log.String() }

// ---- raw Kafka framing with kmsg ----

// writeRequest frames req with a request header (client id "compat") and writes it.
func writeRequest(conn net.Conn, req kmsg.Request, correlationID int32) error {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("compat")).AppendRequest(nil, req, correlationID)
	_, err := conn.Write(frame)
	return err
}

// readFrame reads one size-prefixed frame and returns its body.
func readFrame(conn net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d out of range", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	return body, nil
}

// readResponse reads one response, checks its correlation id and decodes it into resp, whose
// version must already be set to the request's version.
func readResponse(conn net.Conn, resp kmsg.Response, correlationID int32) error {
	body, err := readFrame(conn)
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	// Response header v1 (flexible) carries tagged fields; ApiVersions always uses header v0.
	if resp.IsFlexible() && resp.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("unexpected response header tagged fields % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	return resp.ReadFrom(body)
}

// roundTrip writes req and reads its response into resp (version copied from req).
func roundTrip(conn net.Conn, req kmsg.Request, resp kmsg.Response, correlationID int32) error {
	resp.SetVersion(req.GetVersion())
	if err := writeRequest(conn, req, correlationID); err != nil {
		return err
	}
	return readResponse(conn, resp, correlationID)
}

// ---- running external clients ----

// runCmd runs name with args and stdin under a deadline and returns stdout; it fails the test
// with both streams on a non-zero exit or a timeout.
func runCmd(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runCmdErr(timeout, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, clip(stdout), clip(stderr))
	}
	return stdout
}

// clipBytes bounds client output quoted in a failure message.
const clipBytes = 3000

// clip shortens s to its first and last clipBytes/2 bytes.
func clip(s string) string {
	if len(s) <= clipBytes {
		return s
	}
	return fmt.Sprintf("%s\n[... %d bytes ...]\n%s", s[:clipBytes/2], len(s)-clipBytes, s[len(s)-clipBytes/2:])
}

// runCmdErr is runCmd returning the error instead of failing.
func runCmdErr(timeout time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v (%v)", timeout, err)
	}
	return out.String(), errOut.String(), err
}

// lookPath finds a client binary or fails the test naming the install script.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (run scripts/install-test-deps.sh): %v", name, err)
	}
	return p
}

// waitFor polls cond every interval until it returns nil or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v: %v", what, timeout, err)
		}
		<-tick.C
	}
}

// TestHarnessStartKillRestart checks the harness itself: start, SIGKILL, restart on the same
// dir and port, clean SIGTERM exit.
func TestHarnessStartKillRestart(t *testing.T) {
	b := StartBroker(t)
	if !b.Alive() {
		t.Fatal("not alive after start")
	}
	b.Kill()
	if b.Alive() {
		t.Fatal("alive after Kill")
	}
	if err := probeApiVersions(b.Addr); err == nil {
		t.Fatal("port still answers after Kill")
	}
	b.Restart()
	if err := probeApiVersions(b.Addr); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if !b.Stop() {
		t.Fatal("sluice did not exit on SIGTERM")
	}
	if err := b.ExitErr(); err != nil {
		t.Fatalf("sluice exit after SIGTERM: %v", err)
	}
	if !strings.Contains(b.Log(), "sluice started") {
		t.Fatalf("log has no \"sluice started\" line")
	}
}

// signalAndWait sends sig and waits up to wait for the exit; returns whether it exited.
func (b *Broker) signalAndWait(sig syscall.Signal, wait time.Duration) bool {
	return b.Node.SignalAndWait(sig, wait)
}
