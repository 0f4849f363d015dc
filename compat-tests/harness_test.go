// This file is the harness: it builds, starts, kills and restarts sluice processes and frames
// raw Kafka requests. The package doc is in doc.go.

package compattests

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// startDeadline bounds how long a sluice process may take to answer ApiVersions after start.
const startDeadline = 30 * time.Second

// stopDeadline bounds how long a SIGTERMed sluice may take to exit before it is SIGKILLed.
const stopDeadline = 15 * time.Second

// maxLogBytes bounds the broker log kept in memory per process; older output is dropped.
const maxLogBytes = 4 << 20

// maxLogInFailure bounds the log tail printed into a failed test's output.
const maxLogInFailure = 32 << 10

var (
	buildOnce sync.Once
	buildDir  string // temporary directory holding the binary; removed by TestMain
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// moduleRoot is the directory holding go.mod, found relative to this source file.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("runtime.Caller failed")
	}
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("module root not found next to %s: %w", file, err)
	}
	return root, nil
}

// sluiceBinary builds cmd/sluice once per test binary run and returns its path. SLUICE_BIN,
// when set, names an already built binary to use instead.
func sluiceBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if prebuilt := os.Getenv("SLUICE_BIN"); prebuilt != "" {
			binPath, buildErr = filepath.Abs(prebuilt)
			return
		}
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		buildDir, err = os.MkdirTemp("", "sluice-compat-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(buildDir, "sluice")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/sluice")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct free ports: all n are held open until every one is chosen, so
// the kernel cannot hand the same port out twice (as n calls of freePort could).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// tailBuffer keeps the last maxLogBytes bytes written to it. Safe for concurrent use.
type tailBuffer struct {
	mu struct {
		sync.Mutex
		buf     []byte
		dropped int64 // bytes discarded from the front
	}
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.buf = append(b.mu.buf, p...)
	if over := len(b.mu.buf) - maxLogBytes; over > 0 {
		b.mu.buf = append([]byte(nil), b.mu.buf[over:]...)
		b.mu.dropped += int64(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.dropped > 0 {
		return fmt.Sprintf("[... %d earlier bytes dropped ...]\n%s", b.mu.dropped, b.mu.buf)
	}
	return string(b.mu.buf)
}

// Broker is one running (or stopped) sluice process with a fixed data dir and port.
type Broker struct {
	t    testing.TB
	bin  string
	Dir  string // log.dirs
	Port int
	Addr string // 127.0.0.1:Port
	args []string
	log  tailBuffer // every run's stderr/stdout, runs separated by a marker line

	mu struct {
		sync.Mutex
		cmd     *exec.Cmd
		exited  chan struct{} // closed when cmd has been waited for; nil when never started
		exitErr error         // cmd.Wait's result for the last run; valid once exited is closed
		runs    int
	}
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
	b := &Broker{t: t, bin: sluiceBinary(t), Dir: opts.Dir}
	b.Port = opts.Port
	if b.Port == 0 {
		b.Port = freePort(t)
	}
	b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	b.args = []string{
		"--set", "log.dirs=" + b.Dir,
		"--set", fmt.Sprintf("listeners=PLAINTEXT://%s", b.Addr),
	}
	if len(opts.Wrapper) > 0 {
		b.args = append(append(slices.Clone(opts.Wrapper[1:]), b.bin), b.args...)
		b.bin = opts.Wrapper[0]
	}
	for _, s := range settings {
		b.args = append(b.args, "--set", s)
	}
	t.Cleanup(func() {
		b.Stop()
		if t.Failed() {
			log := b.log.String()
			if len(log) > maxLogInFailure {
				log = fmt.Sprintf("[... %d earlier bytes ...]\n%s", len(log)-maxLogInFailure, log[len(log)-maxLogInFailure:])
			}
			t.Logf("sluice log (%s, args %q):\n%s", b.Dir, b.args, log)
		}
	})
	return b
}

// start launches the process and waits until it answers ApiVersions.
func (b *Broker) start() {
	b.t.Helper()
	b.waitReady(b.launch())
}

// launch starts the process and returns a channel closed when it has exited.
func (b *Broker) launch() chan struct{} {
	b.t.Helper()
	b.mu.Lock()
	if b.mu.exited != nil {
		select {
		case <-b.mu.exited:
		default:
			b.mu.Unlock()
			b.t.Fatal("sluice is already running")
		}
	}
	b.mu.runs++
	fmt.Fprintf(&b.log, "===== sluice run %d: %s %s =====\n", b.mu.runs, b.bin, strings.Join(b.args, " "))
	cmd := exec.Command(b.bin, b.args...)
	cmd.Stdout = &b.log
	cmd.Stderr = &b.log
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		b.t.Fatalf("starting sluice: %v", err)
	}
	exited := make(chan struct{})
	b.mu.cmd = cmd
	b.mu.exited = exited
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(&b.log, "===== sluice exited: %v =====\n", err)
		b.mu.Lock()
		b.mu.exitErr = err
		b.mu.Unlock()
		close(exited)
	}()
	return exited
}

// waitReady polls ApiVersions until it succeeds, the process exits, or startDeadline passes.
func (b *Broker) waitReady(exited chan struct{}) {
	b.t.Helper()
	if err := b.ready(exited); err != nil {
		b.t.Fatal(err)
	}
}

// ready is waitReady's wait, with the failure returned (safe off the test's goroutine).
func (b *Broker) ready(exited chan struct{}) error {
	deadline := time.Now().Add(startDeadline)
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	var lastErr error
	for {
		if lastErr = probeApiVersions(b.Addr); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sluice did not answer ApiVersions on %s within %v: %v", b.Addr, startDeadline, lastErr)
		}
		select {
		case <-exited:
			return fmt.Errorf("sluice exited before answering ApiVersions (last probe: %v)", lastErr)
		case <-retry.C:
		}
	}
}

// probeApiVersions sends an ApiVersions v3 request on a new connection and checks error 0.
func probeApiVersions(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "sluice-compat-tests"
	req.ClientSoftwareVersion = "1"
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(conn, req, resp, 1); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	if len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions listed no APIs")
	}
	return nil
}

// Alive reports whether the process is running.
func (b *Broker) Alive() bool {
	b.mu.Lock()
	exited := b.mu.exited
	b.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// signalAndWait sends sig and waits up to wait for the exit; returns whether it exited.
func (b *Broker) signalAndWait(sig os.Signal, wait time.Duration) bool {
	b.mu.Lock()
	cmd, exited := b.mu.cmd, b.mu.exited
	b.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	default:
	}
	_ = cmd.Process.Signal(sig)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-exited:
		return true
	case <-timer.C:
		return false
	}
}

// Kill SIGKILLs the process and waits for it to be gone.
func (b *Broker) Kill() {
	b.t.Helper()
	if !b.signalAndWait(syscall.SIGKILL, stopDeadline) {
		b.t.Fatal("sluice did not exit after SIGKILL")
	}
}

// Stop sends SIGTERM, waits up to stopDeadline, then SIGKILLs. It reports whether the process
// exited on SIGTERM (a test that cares may fail on false).
func (b *Broker) Stop() bool {
	if b.signalAndWait(syscall.SIGTERM, stopDeadline) {
		return true
	}
	fmt.Fprintf(&b.log, "===== sluice ignored SIGTERM for %v; sending SIGKILL =====\n", stopDeadline)
	b.signalAndWait(syscall.SIGKILL, stopDeadline)
	return false
}

// ExitErr is the last run's exit result (nil for status 0); meaningful once it exited.
func (b *Broker) ExitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.exitErr
}

// Restart starts the process again on the same data dir and port (after Kill or Stop).
func (b *Broker) Restart() {
	b.t.Helper()
	if b.Alive() {
		b.t.Fatal("Restart of a running sluice; Kill or Stop it first")
	}
	b.start()
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
