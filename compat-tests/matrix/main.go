package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CellFunc runs one scenario with one client. It returns nil for pass, an error made by na for
// a scenario the client cannot express, and any other error for a failure.
type CellFunc func(ctx context.Context, e *Env) error

// Client is one row of the matrix.
type Client struct {
	ID     string // file-name safe
	Name   string // as shown in COMPAT.md
	Family string // TestQuickMatrix runs one scenario per family
	// Prepare checks or installs what the client needs once per run (nil: nothing).
	Prepare func(ctx context.Context, t *Tools) error
	// Run runs a scenario.
	Run CellFunc
	// Share runs the share scenario (share.go) with the client's share consumer; nil: the
	// cell is n/a with NoShare as the reason (default "no share consumer in <Name>").
	Share   CellFunc
	NoShare string
	// Quick names the scenario the fast subset runs for this client ("" means none).
	Quick string
	// Timeout bounds one cell (default defaultCellTimeout).
	Timeout time.Duration
	// PrepareTimeout bounds Prepare (default 10 minutes; a first Rust or Maven build is longer).
	PrepareTimeout time.Duration
}

// defaultCellTimeout bounds one cell.
const defaultCellTimeout = 90 * time.Second

// Outcome is a cell's result.
type Outcome int

const (
	Pass Outcome = iota
	Fail
	NA
)

func (o Outcome) String() string { return [...]string{"pass", "FAIL", "n/a"}[o] }

// Cell is one client × scenario result.
type Cell struct {
	Client, Scenario string
	Outcome          Outcome
	Detail           string       // failure cause or n/a reason
	LogPath          string       // relative to the logs dir
	Old              []apiVersion // requests older than Kafka 4's floor
	Elapsed          time.Duration
	// Nodes is the size of the cluster the cell ran against (0 in results from before the
	// three-node run existed, meaning 1).
	Nodes int `json:",omitempty"`
}

// nodes is the cell's cluster size.
func (c Cell) nodes() int { return max(c.Nodes, 1) }

// Matrix runs cells against one broker or one cluster.
type Matrix struct {
	broker  *Broker
	bin     string
	logsDir string
	nodes   int
	sub     string // logsDir's subdirectory of this matrix's logs: "" for one node, "3-nodes"
	tools   *Tools
	seq     int
	prepErr map[string]error
	secure  bool // the broker has the security section's listeners
}

// moduleRoot is the directory holding go.mod, found relative to this source file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// NewMatrix builds sluice (unless bin is given) and starts it, as one process when nodes is 1
// and as a nodes-node cluster otherwise, with its log in logsDir (the cluster's logs and cells
// under logsDir/<nodes>-nodes).
func NewMatrix(bin, logsDir string, nodes int) (*Matrix, error) {
	return newMatrix(bin, logsDir, nodes, false)
}

// newMatrix is NewMatrix that, with secure, starts the broker with the security section's
// listeners too.
func newMatrix(bin, logsDir string, nodes int, secure bool) (*Matrix, error) {
	root := moduleRoot()
	if bin == "" {
		bin = filepath.Join(root, "bin", "sluice")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
		}
	}
	if err := os.MkdirAll(logsDir, 0o755); err != nil {
		return nil, err
	}
	tools, err := NewTools(root)
	if err != nil {
		return nil, err
	}
	m := &Matrix{bin: bin, logsDir: logsDir, tools: tools, prepErr: map[string]error{}, nodes: max(nodes, 1), secure: secure}
	if m.nodes > 1 {
		m.sub = fmt.Sprintf("%d-nodes", m.nodes)
		if err := os.MkdirAll(filepath.Join(logsDir, m.sub), 0o755); err != nil {
			return nil, err
		}
	}
	if m.broker, err = startBroker(bin, filepath.Join(logsDir, m.sub, "sluice.log"), m.nodes, secure); err != nil {
		return nil, err
	}
	return m, nil
}

// Close stops the broker, trims its log and removes scratch files.
func (m *Matrix) Close() {
	m.broker.Stop()
	logs, _ := filepath.Glob(filepath.Join(m.logsDir, m.sub, "sluice*.log"))
	for _, l := range logs {
		trimFile(l, maxBrokerLog)
	}
	m.tools.Close()
}

// trimFile keeps the last max bytes of path.
func trimFile(path string, max int) {
	data, err := os.ReadFile(path)
	if err != nil || len(data) <= max {
		return
	}
	cut := data[len(data)-max:]
	os.WriteFile(path, append([]byte(fmt.Sprintf("[... %d earlier bytes cut ...]\n", len(data)-max)), cut...), 0o644)
}

// RunCell runs one client × scenario cell.
func (m *Matrix) RunCell(ctx context.Context, c *Client, s Scenario) (cell Cell) {
	m.seq++
	rel := filepath.Join(m.sub, c.ID, s.ID+".log")
	cell = Cell{Client: c.ID, Scenario: s.ID, LogPath: rel, Nodes: m.nodes}
	log := &cellLog{}
	start := time.Now()
	defer func() {
		cell.Elapsed = time.Since(start)
		log.Printf("[harness] %s × %s: %s %s (%v)", c.Name, s.ID, cell.Outcome, cell.Detail, cell.Elapsed.Round(time.Millisecond))
		log.save(filepath.Join(m.logsDir, rel))
	}()
	if !m.broker.Alive() {
		log.Printf("[harness] sluice had exited; restarting it with a fresh data dir")
		m.broker.Stop()
		b, err := startBroker(m.bin, filepath.Join(m.logsDir, m.sub, fmt.Sprintf("sluice-restart-%d.log", m.seq)), m.nodes, m.secure)
		if err != nil {
			cell.Outcome, cell.Detail = Fail, "sluice restart: "+err.Error()
			return cell
		}
		m.broker = b
	}
	run := c.Run
	if s.ID == shareScenario {
		if run = c.Share; run == nil {
			cell.Outcome, cell.Detail = NA, cmp.Or(c.NoShare, "no share consumer in "+c.Name)
			return cell
		}
	}
	if c.Prepare != nil {
		if _, done := m.prepErr[c.ID]; !done {
			pctx, cancel := context.WithTimeout(ctx, cmp.Or(c.PrepareTimeout, 10*time.Minute))
			m.prepErr[c.ID] = c.Prepare(pctx, m.tools)
			cancel()
		}
		if err := m.prepErr[c.ID]; err != nil {
			cell.Outcome, cell.Detail = Fail, "client setup: "+err.Error()
			log.Printf("[harness] %v", err)
			return cell
		}
	}
	dir, err := os.MkdirTemp(m.tools.scratch, c.ID+"-")
	if err != nil {
		cell.Outcome, cell.Detail = Fail, err.Error()
		return cell
	}
	name := fmt.Sprintf("m%d-%s-%s", m.seq, c.ID, s.ID)
	e := &Env{
		Scenario: s, Addr: m.broker.Addr, Topic: name, Group: name + "-g",
		TSBase: time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli(),
		Dir:    dir, DataDir: m.broker.DataDir(), Log: log, Tools: m.tools, Bin: m.bin,
		Nodes: m.nodes, RF: int16(min(m.nodes, 3)),
	}
	if s.Security != "" {
		if e.Sec = m.broker.sec; e.Sec == nil {
			cell.Outcome, cell.Detail = Fail, "the broker was started without the security listeners"
			return cell
		}
		if run = secRunner(c.ID); run == nil {
			cell.Outcome, cell.Detail = NA, "not driven by the security section"
			return cell
		}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = defaultCellTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m.broker.take()
	err = e.setup(cctx)
	m.broker.take() // the harness's own requests are not the client's
	if err == nil {
		var stopTail func()
		if s.Tail {
			stopTail = e.startTail(cctx)
		}
		err = runWithWatchdog(cctx, run, e)
		if stopTail != nil {
			stopTail()
		}
		cell.Old = oldRequests(m.broker.take())
	}
	var naErr *naError
	switch {
	case errors.As(err, &naErr):
		cell.Outcome, cell.Detail = NA, naErr.reason
	case err != nil:
		cell.Outcome, cell.Detail = Fail, err.Error()
	default:
		cell.Outcome = Pass
	}
	if cell.Outcome == Fail && !m.broker.Alive() {
		cell.Detail += " (sluice exited)"
	}
	return cell
}

// abandonGrace is how long a cell may outlive its deadline before the harness gives up on it.
const abandonGrace = 10 * time.Second

// runWithWatchdog runs an in-process client and abandons it (its goroutine leaks; the matrix is
// a one-shot program) when it ignores its context past the deadline, so that one hung client
// cannot stall the whole matrix.
func runWithWatchdog(ctx context.Context, run CellFunc, e *Env) error {
	done := make(chan error, 1)
	go func() { done <- run(ctx, e) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return err
	case <-time.After(abandonGrace):
		return fmt.Errorf("client ignored its deadline (%v); cell abandoned", ctx.Err())
	}
}

func main() {
	out := flag.String("out", "COMPAT.md", "the report to write")
	logsDir := flag.String("logs", "compat-tests/matrix/logs", "where cell logs go (the report links to them)")
	bin := flag.String("bin", "", "a built sluice binary (default: go build ./cmd/sluice into bin/)")
	clients := flag.String("clients", "", "regexp of client ids to run (default all)")
	scenarios := flag.String("scenarios", "", "regexp of scenario ids to run (default all, e.g. '^(transactions|exactly-once)$')")
	nodes := flag.String("nodes", "1,3", "cluster sizes to run the cells against, comma-separated (1: one process; 3: three nodes, replication factor 3)")
	franz := flag.Bool("franz-suite", true, "also run franz-go's live-broker suite")
	merge := flag.Bool("merge", false, "keep the results.json a previous run left in -logs and replace only the cells run now (and the suite, if run)")
	render := flag.Bool("render", false, "only re-render -out from the results.json a previous run left in -logs")
	install := flag.String("install", "", "only install (into the cache) the clients whose ids match this regexp, then exit (scripts/install-test-deps.sh)")
	flag.Parse()
	if *install != "" {
		if err := installClients(*install); err != nil {
			fmt.Fprintln(os.Stderr, "matrix:", err)
			os.Exit(1)
		}
		return
	}
	if *render {
		if err := rerender(*out, *logsDir); err != nil {
			fmt.Fprintln(os.Stderr, "matrix:", err)
			os.Exit(1)
		}
		return
	}
	var sizes []int
	for _, f := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "matrix: -nodes %q: want positive integers\n", *nodes)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	if err := run(*out, *logsDir, *bin, *clients, *scenarios, sizes, *franz, *merge); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

// installClients runs the Prepare step (which installs what a client needs into the cache) of
// every client whose id matches pat.
func installClients(pat string) error {
	re, err := regexp.Compile(pat)
	if err != nil {
		return err
	}
	tools, err := NewTools(moduleRoot())
	if err != nil {
		return err
	}
	defer tools.Close()
	for _, c := range Clients() {
		if !re.MatchString(c.ID) || c.Prepare == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(c.PrepareTimeout, 10*time.Minute))
		err := c.Prepare(ctx, tools)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", c.ID, err)
		}
	}
	return nil
}

func run(out, logsDir, bin, clientPat, scenarioPat string, sizes []int, franz, merge bool) error {
	cre, err := regexp.Compile(clientPat)
	if err != nil {
		return err
	}
	sre, err := regexp.Compile(scenarioPat)
	if err != nil {
		return err
	}
	absLogs, err := filepath.Abs(logsDir)
	if err != nil {
		return err
	}
	var prev results
	if merge {
		data, err := os.ReadFile(filepath.Join(absLogs, "results.json"))
		if err != nil {
			return fmt.Errorf("-merge: %w", err)
		}
		if err := json.Unmarshal(data, &prev); err != nil {
			return fmt.Errorf("-merge: %w", err)
		}
	} else {
		os.RemoveAll(absLogs)
	}
	ctx := context.Background()
	start := time.Now()
	var cells []Cell
	secure := false
	for _, s := range Scenarios {
		secure = secure || (s.Security != "" && sre.MatchString(s.ID))
	}
	for _, n := range sizes {
		m, err := newMatrix(bin, absLogs, n, secure)
		if err != nil {
			return err
		}
		bin = m.bin // built once
		for _, c := range Clients() {
			if !cre.MatchString(c.ID) {
				continue
			}
			for _, s := range Scenarios {
				if !sre.MatchString(s.ID) || (s.Security != "" && secRunner(c.ID) == nil) {
					continue
				}
				cell := m.RunCell(ctx, c, s)
				fmt.Fprintf(os.Stderr, "%d node(s) %-22s %-16s %-5s %6.1fs %s\n", n, c.ID, s.ID, cell.Outcome, cell.Elapsed.Seconds(), oneLine(cell.Detail))
				cells = append(cells, cell)
			}
		}
		m.Close()
	}
	var suite *SuiteResult
	if franz {
		suite = RunFranzSuite(ctx, bin, absLogs)
	}
	relLogs, err := filepath.Rel(filepath.Dir(mustAbs(out)), absLogs)
	if err != nil {
		relLogs = absLogs
	}
	res := results{Cells: cells, Suite: suite, Elapsed: time.Since(start), At: time.Now().UTC()}
	if merge {
		res = prev.merge(res, clientPat, scenarioPat, sizes)
	}
	if data, err := json.MarshalIndent(res, "", " "); err == nil {
		os.WriteFile(filepath.Join(absLogs, "results.json"), data, 0o644)
	}
	return os.WriteFile(out, []byte(res.report(relLogs)), 0o644)
}

// results is what a run leaves in the logs dir, so that the report can be re-rendered.
type results struct {
	Cells   []Cell
	Suite   *SuiteResult
	Elapsed time.Duration
	At      time.Time
	// Reruns are the partial runs merged into these results (-merge), oldest first.
	Reruns []Rerun `json:",omitempty"`
}

// Rerun describes one partial run merged into earlier results.
type Rerun struct {
	At                 time.Time
	Elapsed            time.Duration
	Clients, Scenarios string // the -clients and -scenarios patterns ("" all)
	Nodes              []int
	Cells              int
}

// merge returns r with the cells of the partial run now replacing r's cells of the same client,
// scenario and cluster size, and now's suite replacing r's if one ran.
func (r results) merge(now results, clientPat, scenarioPat string, sizes []int) results {
	type key struct {
		client, scenario string
		nodes            int
	}
	fresh := map[key]Cell{}
	for _, c := range now.Cells {
		fresh[key{c.Client, c.Scenario, c.nodes()}] = c
	}
	var cells []Cell
	for _, c := range r.Cells {
		k := key{c.Client, c.Scenario, c.nodes()}
		if f, ok := fresh[k]; ok {
			c = f
			delete(fresh, k)
		}
		cells = append(cells, c)
	}
	for _, c := range now.Cells { // cells the earlier run did not have, in run order
		if _, ok := fresh[key{c.Client, c.Scenario, c.nodes()}]; ok {
			cells = append(cells, c)
		}
	}
	r.Cells = cells
	if now.Suite != nil {
		r.Suite = now.Suite
	}
	r.Reruns = append(r.Reruns, Rerun{At: now.At, Elapsed: now.Elapsed, Clients: clientPat, Scenarios: scenarioPat, Nodes: sizes, Cells: len(now.Cells)})
	return r
}

func (r results) report(relLogs string) string {
	return Report(r.Cells, r.Suite, relLogs, r.Elapsed, r.At, r.Reruns)
}

func rerender(out, logsDir string) error {
	data, err := os.ReadFile(filepath.Join(logsDir, "results.json"))
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(data, &res); err != nil {
		return err
	}
	relLogs, err := filepath.Rel(filepath.Dir(mustAbs(out)), mustAbs(logsDir))
	if err != nil {
		return err
	}
	return os.WriteFile(out, []byte(res.report(relLogs)), 0o644)
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
