package main

import (
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
	// Quick names the scenario the fast subset runs for this client ("" means none).
	Quick string
	// Timeout bounds one cell (default defaultCellTimeout).
	Timeout time.Duration
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
}

// Matrix runs cells against one broker.
type Matrix struct {
	broker  *Broker
	bin     string
	logsDir string
	tools   *Tools
	seq     int
	prepErr map[string]error
}

// moduleRoot is the directory holding go.mod, found relative to this source file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// NewMatrix builds sluice (unless bin is given) and starts it with its log in logsDir.
func NewMatrix(bin, logsDir string) (*Matrix, error) {
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
	m := &Matrix{bin: bin, logsDir: logsDir, tools: tools, prepErr: map[string]error{}}
	if m.broker, err = StartBroker(bin, filepath.Join(logsDir, "sluice.log")); err != nil {
		return nil, err
	}
	return m, nil
}

// Close stops the broker, trims its log and removes scratch files.
func (m *Matrix) Close() {
	m.broker.Stop()
	trimFile(filepath.Join(m.logsDir, "sluice.log"), maxBrokerLog)
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
	rel := filepath.Join(c.ID, s.ID+".log")
	cell = Cell{Client: c.ID, Scenario: s.ID, LogPath: rel}
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
		b, err := StartBroker(m.bin, filepath.Join(m.logsDir, fmt.Sprintf("sluice-restart-%d.log", m.seq)))
		if err != nil {
			cell.Outcome, cell.Detail = Fail, "sluice restart: "+err.Error()
			return cell
		}
		m.broker = b
	}
	if c.Prepare != nil {
		if _, done := m.prepErr[c.ID]; !done {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
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
		Dir:    dir, DataDir: m.broker.DataDir(), Log: log, Tools: m.tools,
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = defaultCellTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m.broker.proxy.take()
	err = e.setup(cctx)
	m.broker.proxy.take() // the harness's own requests are not the client's
	if err == nil {
		var stopTail func()
		if s.Tail {
			stopTail = e.startTail(cctx)
		}
		err = runWithWatchdog(cctx, c.Run, e)
		if stopTail != nil {
			stopTail()
		}
		cell.Old = oldRequests(m.broker.proxy.take())
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
	scenarios := flag.String("scenarios", "", "regexp of scenario ids to run (default all)")
	franz := flag.Bool("franz-suite", true, "also run franz-go's live-broker suite")
	render := flag.Bool("render", false, "only re-render -out from the results.json a previous run left in -logs")
	flag.Parse()
	if *render {
		if err := rerender(*out, *logsDir); err != nil {
			fmt.Fprintln(os.Stderr, "matrix:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *logsDir, *bin, *clients, *scenarios, *franz); err != nil {
		fmt.Fprintln(os.Stderr, "matrix:", err)
		os.Exit(1)
	}
}

func run(out, logsDir, bin, clientPat, scenarioPat string, franz bool) error {
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
	os.RemoveAll(absLogs)
	m, err := NewMatrix(bin, absLogs)
	if err != nil {
		return err
	}
	ctx := context.Background()
	start := time.Now()
	var cells []Cell
	for _, c := range Clients() {
		if !cre.MatchString(c.ID) {
			continue
		}
		for _, s := range Scenarios {
			if !sre.MatchString(s.ID) {
				continue
			}
			cell := m.RunCell(ctx, c, s)
			fmt.Fprintf(os.Stderr, "%-22s %-16s %-5s %6.1fs %s\n", c.ID, s.ID, cell.Outcome, cell.Elapsed.Seconds(), oneLine(cell.Detail))
			cells = append(cells, cell)
		}
	}
	m.Close()
	var suite *SuiteResult
	if franz {
		suite = RunFranzSuite(ctx, m.bin, absLogs)
	}
	relLogs, err := filepath.Rel(filepath.Dir(mustAbs(out)), absLogs)
	if err != nil {
		relLogs = absLogs
	}
	res := results{Cells: cells, Suite: suite, Elapsed: time.Since(start), At: time.Now().UTC()}
	if data, err := json.MarshalIndent(res, "", " "); err == nil {
		os.WriteFile(filepath.Join(absLogs, "results.json"), data, 0o644)
	}
	report := Report(cells, suite, relLogs, res.Elapsed, res.At)
	return os.WriteFile(out, []byte(report), 0o644)
}

// results is what a run leaves in the logs dir, so that the report can be re-rendered.
type results struct {
	Cells   []Cell
	Suite   *SuiteResult
	Elapsed time.Duration
	At      time.Time
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
	return os.WriteFile(out, []byte(Report(res.Cells, res.Suite, relLogs, res.Elapsed, res.At)), 0o644)
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
