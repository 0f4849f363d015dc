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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

// Broker is the sluice cluster under test (one process, or several forming one cluster) and a
// recording proxy in front of every node.
type Broker struct {
	dataDir string
	// Addr is what clients bootstrap to: node 1's proxy, which node 1 advertises (every node
	// advertises its own proxy, so the metadata clients learn routes through the proxies too).
	Addr    string
	nodes   []*testcluster.Node
	logs    []*os.File
	proxies []*proxy
	// sec is the secured listeners (nil: PLAINTEXT only); SSL, SASLSSL and SASLPlain are
	// node 1's.
	sec *Security
}

// clusterSettings are what every node of a multi-node matrix cluster gets: replication factor
// 3 for the internal topics and the harness's topics, and min.insync.replicas 2, so that every
// acks=all write and every transaction marker is on at least two nodes.
var clusterSettings = []string{
	"default.replication.factor=3", "min.insync.replicas=2",
	"offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3",
	"transaction.state.log.min.isr=2",
}

// StartBroker starts bin at a fresh data dir, behind recording proxies: one process when nodes
// is 1 (its log in logPath), else a nodes-node cluster of combined nodes with a static quorum
// (node i's log in logPath with "-node-<i>" before the extension) that answers with every
// broker registered.
func StartBroker(bin, logPath string, nodes int) (*Broker, error) {
	return startBroker(bin, logPath, nodes, false)
}

// startBroker is StartBroker that, with secure, also gives every node the security section's
// listeners (security.go) and creates the SCRAM credential once the cluster is up.
func startBroker(bin, logPath string, nodes int, secure bool) (*Broker, error) {
	dir, err := os.MkdirTemp("", "sluice-matrix-data-")
	if err != nil {
		return nil, err
	}
	b := &Broker{dataDir: dir}
	ports, err := testcluster.FreePorts(2 * nodes)
	if err != nil {
		return nil, err
	}
	var secPorts [][]string
	if secure {
		if b.sec, err = newSecurity(); err != nil {
			return nil, err
		}
		p, err := testcluster.FreePorts(3 * nodes)
		if err != nil {
			return nil, err
		}
		secPorts = secAddrs(p)
		b.sec.SSL, b.sec.SASLSSL, b.sec.SASLPlain = secPorts[0][0], secPorts[0][1], secPorts[0][2]
	}
	var voters []string
	for i := range nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[nodes+i]))
	}
	for i := range nodes {
		path := logPath
		if nodes > 1 {
			ext := filepath.Ext(logPath)
			path = fmt.Sprintf("%s-node-%d%s", strings.TrimSuffix(logPath, ext), i+1, ext)
		}
		lf, err := os.Create(path)
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.logs = append(b.logs, lf)
		pl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Stop()
			return nil, err
		}
		brokerAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		px := newProxy(pl, brokerAddr)
		b.proxies = append(b.proxies, px)
		go px.serve()
		cfg := testcluster.NodeConfig{
			Bin: bin, Addr: brokerAddr, Dir: dir, Output: lf,
			Settings: []string{"advertised.listeners=PLAINTEXT://" + pl.Addr().String()},
		}
		if nodes > 1 {
			cfg.Dir = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
			cfg.ControllerAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[nodes+i]))
			cfg.Settings = append(append(cfg.Settings, fmt.Sprintf("node.id=%d", i+1),
				"controller.listener.names=CONTROLLER", "controller.quorum.voters="+strings.Join(voters, ",")),
				clusterSettings...)
		}
		if secure { // replaces the advertised listeners, names every listener
			cfg.Settings = append(cfg.Settings[1:], b.sec.settings(brokerAddr, pl.Addr().String(), cfg.ControllerAddr, secPorts[i])...)
		}
		node, err := testcluster.NewNode(cfg)
		if err != nil {
			b.Stop()
			return nil, err
		}
		b.nodes = append(b.nodes, node)
	}
	b.Addr = b.proxies[0].l.Addr().String()
	// Every node at once: a node of a cluster opens its client port only once the quorum has
	// registered it.
	for _, n := range b.nodes {
		if err := n.Launch(); err != nil {
			b.Stop()
			return nil, err
		}
	}
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i, n := range b.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.WaitReady(testcluster.StartDeadline)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Stop()
		return nil, fmt.Errorf("%v; see %s", err, logPath)
	}
	if nodes > 1 {
		if err := b.waitBrokers(nodes); err != nil {
			b.Stop()
			return nil, err
		}
	}
	if secure {
		var saslSSL []string
		for _, a := range secPorts {
			saslSSL = append(saslSSL, a[1])
		}
		if err := b.sec.createCredentials(b.Addr, saslSSL); err != nil {
			b.Stop()
			return nil, err
		}
	}
	return b, nil
}

// waitBrokers waits until the metadata lists n brokers, so that a replication factor n topic
// can be created.
func (b *Broker) waitBrokers(n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), testcluster.StartDeadline)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err == nil && len(md.Brokers) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %d brokers registered, want %d: %v", len(md.Brokers), n, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Nodes is the number of sluice processes.
func (b *Broker) Nodes() int { return len(b.nodes) }

// Alive reports whether every sluice process is still running.
func (b *Broker) Alive() bool {
	for _, n := range b.nodes {
		if !n.Alive() {
			return false
		}
	}
	return true
}

// Stop sends every node SIGTERM (SIGKILL after 15s), closes the proxies and removes the data
// dir.
func (b *Broker) Stop() {
	var wg sync.WaitGroup
	for _, n := range b.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Stop() }()
	}
	wg.Wait()
	for _, p := range b.proxies {
		p.close()
	}
	for _, lf := range b.logs {
		lf.Close()
	}
	os.RemoveAll(b.dataDir)
	b.sec.close()
}

// DataDir is node 1's log.dirs (with replication factor 3 it holds a replica of every
// partition the harness creates).
func (b *Broker) DataDir() string {
	if len(b.nodes) == 0 {
		return b.dataDir
	}
	return b.nodes[0].Dir
}

// take returns the requests every proxy recorded since the last take.
func (b *Broker) take() map[apiVersion]int {
	all := map[apiVersion]int{}
	for _, p := range b.proxies {
		for av, n := range p.take() {
			all[av] += n
		}
	}
	return all
}

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

// kafka4Floor is the oldest version of each API that Apache Kafka 4.x serves
// (ApiKeys.oldestVersion() in kafka-clients 4.4.0, the same as in 4.1.1, after KIP-896; the
// share group APIs 76–79, which sluice does not serve, are left out); APIs not listed start
// at 0.
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
