package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sluice/internal/testcluster"
)

// maxCellLog bounds one cell's committed log; the head and tail are kept.
const maxCellLog = 24 << 10

// maxBrokerLog bounds the broker log written next to the cell logs (tail kept).
const maxBrokerLog = 256 << 10

// naError marks a scenario that a client cannot express; the cell shows n/a with the reason.
type naError struct{ reason string }

func (e *naError) Error() string { return "n/a: " + e.reason }

// na returns an error that makes a cell n/a.
func na(format string, args ...any) error { return &naError{fmt.Sprintf(format, args...)} }

// Broker is the sluice process under test and the recording proxy in front of it.
type Broker struct {
	dataDir string
	// Addr is what clients bootstrap to: the proxy, which sluice advertises.
	Addr  string
	log   *os.File
	node  *testcluster.Node
	proxy *proxy
}

// StartBroker starts bin at a fresh data dir with its log in logPath, behind a recording proxy.
func StartBroker(bin, logPath string) (*Broker, error) {
	dir, err := os.MkdirTemp("", "sluice-matrix-data-")
	if err != nil {
		return nil, err
	}
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	b := &Broker{dataDir: dir, log: lf, Addr: pl.Addr().String()}
	brokerAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	b.proxy = newProxy(pl, brokerAddr)
	go b.proxy.serve()
	b.node, err = testcluster.NewNode(testcluster.NodeConfig{
		Bin: bin, Addr: brokerAddr, Dir: dir, Output: lf,
		Settings: []string{"advertised.listeners=PLAINTEXT://" + b.Addr},
	})
	if err != nil {
		return nil, err
	}
	if err := b.node.Start(); err != nil {
		b.Stop()
		return nil, fmt.Errorf("%v; see %s", err, logPath)
	}
	return b, nil
}

// Alive reports whether the sluice process is still running.
func (b *Broker) Alive() bool { return b.node.Alive() }

// Stop sends SIGTERM (SIGKILL after 15s), closes the proxy and removes the data dir.
func (b *Broker) Stop() {
	b.node.Stop()
	b.proxy.close()
	b.log.Close()
	os.RemoveAll(b.dataDir)
}

// DataDir is sluice's log.dirs.
func (b *Broker) DataDir() string { return b.dataDir }

// apiVersion is one (API key, version) pair seen on the wire.
type apiVersion struct{ Key, Version int16 }

// proxy forwards TCP connections to the broker and records the API key and version of every
// request frame a client sends. Responses are copied through untouched.
type proxy struct {
	l      net.Listener
	target string
	mu     struct {
		sync.Mutex
		seen  map[apiVersion]int // requests since the last take; never nil
		conns map[net.Conn]struct{}
	}
}

func newProxy(l net.Listener, target string) *proxy {
	p := &proxy{l: l, target: target}
	p.mu.seen = map[apiVersion]int{}
	p.mu.conns = map[net.Conn]struct{}{}
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.mu.conns[c] = struct{}{}
	} else {
		delete(p.mu.conns, c)
	}
}

func (p *proxy) handle(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	defer func() {
		client.Close()
		server.Close()
		p.track(client, false)
		p.track(server, false)
	}()
	go func() {
		io.Copy(client, server)
		client.Close()
	}()
	// Client to broker: frame by frame, recording each request header's key and version.
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(client, hdr[:4]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(hdr[:4]))
		if size < 4 || size > 200<<20 {
			io.Copy(server, io.MultiReader(bytes.NewReader(hdr[:4]), client)) // not Kafka framing
			return
		}
		if _, err := io.ReadFull(client, hdr[4:8]); err != nil {
			return
		}
		p.record(apiVersion{Key: int16(binary.BigEndian.Uint16(hdr[4:6])), Version: int16(binary.BigEndian.Uint16(hdr[6:8]))})
		if _, err := server.Write(hdr[:8]); err != nil {
			return
		}
		if _, err := io.CopyN(server, client, int64(size-4)); err != nil {
			return
		}
	}
}

func (p *proxy) record(av apiVersion) {
	p.mu.Lock()
	p.mu.seen[av]++
	p.mu.Unlock()
}

// take returns the requests recorded since the last take and resets the record.
func (p *proxy) take() map[apiVersion]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.mu.seen
	p.mu.seen = map[apiVersion]int{}
	return seen
}

func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.mu.conns {
		c.Close()
	}
}

// kafka4Floor is the oldest version of each API that Apache Kafka 4.1 serves
// (ApiKeys.oldestVersion() in kafka-clients 4.1.1, after KIP-896); APIs not listed start at 0.
var kafka4Floor = map[int16]int16{
	0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 27: 1, 29: 1, 30: 1, 31: 1, 32: 1,
	34: 1, 35: 1, 38: 1, 39: 1, 40: 1, 41: 1, 56: 2,
}

// apiNames names the APIs that old clients use, for the report.
var apiNames = map[int16]string{
	0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit", 9: "OffsetFetch",
	10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
	19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords", 23: "OffsetForLeaderEpoch",
	32: "DescribeConfigs", 33: "AlterConfigs",
}

// oldRequests lists the requests in seen that are older than Kafka 4's floor, formatted as
// "Name vN" and sorted.
func oldRequests(seen map[apiVersion]int) []apiVersion {
	var old []apiVersion
	for av := range seen {
		if floor, ok := kafka4Floor[av.Key]; ok && av.Version < floor {
			old = append(old, av)
		}
	}
	sort.Slice(old, func(i, j int) bool {
		if old[i].Key != old[j].Key {
			return old[i].Key < old[j].Key
		}
		return old[i].Version < old[j].Version
	})
	return old
}

func (av apiVersion) String() string {
	name := apiNames[av.Key]
	if name == "" {
		name = "key" + strconv.Itoa(int(av.Key))
	}
	return fmt.Sprintf("%s v%d", name, av.Version)
}

// cellLog collects one cell's output and writes a bounded copy to disk.
type cellLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *cellLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *cellLog) Printf(format string, args ...any) {
	fmt.Fprintf(l, format+"\n", args...)
}

// save writes the log to path, keeping the head and the tail when it is over maxCellLog.
func (l *cellLog) save(path string) error {
	l.mu.Lock()
	data := l.buf.Bytes()
	if len(data) > maxCellLog {
		head, tail := data[:maxCellLog/4], data[len(data)-maxCellLog*3/4:]
		data = append(append(append([]byte(nil), head...), fmt.Sprintf("\n[... %d bytes cut ...]\n", len(data)-len(head)-len(tail))...), tail...)
	}
	l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// runProgram runs name with args under ctx, feeding stdin and logging the command line and
// its output to log. It returns stdout; a non-zero exit or a timeout is an error carrying the
// last line of stderr.
func runProgram(ctx context.Context, log io.Writer, dir string, env []string, stdin string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, log)
	cmd.Stderr = io.MultiWriter(&stderr, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	fmt.Fprintf(log, "$ %s %s\n", name, shellQuote(args))
	start := time.Now()
	err := cmd.Run()
	fmt.Fprintf(log, "[exit after %v: %v]\n", time.Since(start).Round(time.Millisecond), err)
	if err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("%s timed out: %w", filepath.Base(name), ctx.Err())
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			// The scripts exit 3 for a scenario the client cannot express; the reason is the
			// last line of stdout.
			return stdout.String(), na("%s", lastLine(stdout.String()))
		}
		return stdout.String(), fmt.Errorf("%s: %v: %s", filepath.Base(name), err, lastLine(stderr.String()+"\n"+stdout.String()))
	}
	return stdout.String(), nil
}

func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'$*;|&<>(){}") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "at ") && !strings.HasPrefix(l, "[exit after") && !strings.HasPrefix(l, "}") {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	return ""
}

// quietSlog is a logger for harness diagnostics written into a cell log.
func quietSlog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
