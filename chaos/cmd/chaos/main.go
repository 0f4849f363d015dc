// Command chaos is make chaos: it runs N nemesis runs of package chaos against real sluice
// processes and writes CHAOS.md (every run's nemesis, anomaly counts and availability, with a
// link to its log under chaos/logs/) and the command that reproduces each run.
//
//	go run ./chaos/cmd/chaos -bin bin/sluice -runs 20 -out CHAOS.md -logs chaos/logs
//	go run ./chaos/cmd/chaos -bin bin/sluice -runs 1 -first 7 -nemesis kill-leader   # run 7 again
//
// Run i (from 0) uses nemesis kinds[i % len(kinds)] and seed i; -first skips to run i.
// It must run as root (network namespaces). CHAOS.md is rewritten after every run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sluice/chaos"
	"sluice/internal/testcluster"
)

// maxNodeLines bounds the warning and error lines of each node kept in a run's log.
const maxNodeLines = 40

func main() {
	bin := flag.String("bin", "", "sluice binary (default: $SLUICE_BIN, else built)")
	runs := flag.Int("runs", 20, "number of runs")
	first := flag.Int("first", 0, "index of the first run (runs are numbered and seeded from it)")
	nodes := flag.Int("nodes", 3, "cluster size (3 or 5)")
	nemeses := flag.String("nemesis", strings.Join(append(append([]string(nil), chaos.Kinds...), chaos.Mixed), ","), "comma-separated nemesis kinds, one per run in turn")
	duration := flag.Duration("duration", 60*time.Second, "nemesis time per run")
	out := flag.String("out", "CHAOS.md", "report to write")
	logs := flag.String("logs", "chaos/logs", "directory for run logs (full node logs go to its full/ subdirectory)")
	appendRuns := flag.Bool("append", false, "add these runs to those recorded in <logs>/runs.json instead of starting afresh")
	control := flag.Bool("control-acks1", false, "control runs: producers with acks=1 and no idempotence, which may lose acknowledged writes on kill -9 of a leader")
	metaAge := flag.Duration("metadata-min-age", 0, "producers' kgo.MetadataMinAge (0: franz-go's default, 5s)")
	renderOnly := flag.Bool("render", false, "only rewrite -out from <logs>/runs.json (no runs)")
	controlUncommitted := flag.Bool("control-uncommitted", false, "transactional control runs: the output read with read_uncommitted, so the checker must find aborted reads")
	workload := flag.String("workload", "queue", "queue (chaos.Run) or txn (chaos.RunTxn: consume-transform-produce transactions; default nemeses "+strings.Join(chaos.TxnKinds, ",")+")")
	flag.Parse()
	if *workload == "txn" && !flagSet("nemesis") {
		*nemeses = strings.Join(chaos.TxnKinds, ",")
	}
	if *bin == "" {
		b, err := testcluster.Binary()
		if err != nil {
			log.Fatal(err)
		}
		*bin = b
	}
	defer testcluster.RemoveBuilt()
	kinds := strings.Split(*nemeses, ",")
	if err := os.MkdirAll(filepath.Join(*logs, "full"), 0o755); err != nil {
		log.Fatal(err)
	}
	rep := &report{Started: time.Now().UTC(), Duration: *duration, Commit: gitCommit()}
	runsPath := filepath.Join(*logs, "runs.json")
	if *appendRuns || *renderOnly {
		if data, err := os.ReadFile(runsPath); err == nil {
			if err := json.Unmarshal(data, &rep.Runs); err != nil {
				log.Fatalf("%s: %v", runsPath, err)
			}
		}
	}
	if *renderOnly {
		if len(rep.Runs) > 0 {
			rep.Started = rep.Runs[len(rep.Runs)-1].Started
		}
		if err := os.WriteFile(*out, []byte(rep.markdown(*out)), 0o644); err != nil {
			log.Fatal(err)
		}
		return
	}
	for i := *first; i < *first+*runs; i++ {
		kind := kinds[(i-*first)%len(kinds)]
		if *workload == "txn" {
			rep.Runs = append(rep.Runs, txnRun(i, kind, *nodes, *duration, *metaAge, *controlUncommitted, *bin, *logs, rep.Commit))
			rep.write(*out, runsPath)
			continue
		}
		name := fmt.Sprintf("run-%02d-%dn-%s", i, *nodes, kind)
		if *control {
			name += "-control-acks1"
		}
		if *metaAge > 0 {
			name += "-metadata-" + metaAge.String()
		}
		var timeline bytes.Buffer
		work, err := os.MkdirTemp("", "sluice-chaos-run-")
		if err != nil {
			log.Fatal(err)
		}
		log.Printf("%s: starting", name)
		res, err := chaos.Run(context.Background(), chaos.Config{
			Bin: *bin, Nodes: *nodes, Nemeses: []string{kind}, Duration: *duration, Seed: uint64(i),
			WorkDir: work, KeepWorkDir: true, Log: &timeline, LeaderAcks: *control, MetadataMinAge: *metaAge,
		})
		row := runRow{Index: i, Name: name, Kind: kind, MetadataMinAge: *metaAge, Seed: i, Nodes: *nodes, Commit: rep.Commit, Started: time.Now().UTC(), Control: *control, Unclean: kind == chaos.UncleanElection,
			Command: fmt.Sprintf("go run ./chaos/cmd/chaos -runs 1 -first %d -nemesis %s -nodes %d -duration %v -out /tmp/CHAOS-%d.md -logs /tmp/chaos-logs-%d%s", i, kind, *nodes, *duration, i, i, map[bool]string{true: " -control-acks1"}[*control]+map[bool]string{true: " -metadata-min-age " + metaAge.String()}[*metaAge > 0])}
		if err != nil {
			row.Err = err.Error()
			log.Printf("%s: harness error: %v", name, err)
		}
		if res != nil {
			row.Report = &res.Report
			row.Elapsed = res.Elapsed
			for j, path := range res.NodeLogs {
				copyFile(path, filepath.Join(*logs, "full", fmt.Sprintf("%s-node-%d.log", name, j+1)))
			}
		}
		row.Log = filepath.Join(*logs, name+".log")
		writeRunLog(row.Log, name, &timeline, row, res)
		os.RemoveAll(work)
		rep.Runs = append(rep.Runs, row)
		if err := os.WriteFile(*out, []byte(rep.markdown(*out)), 0o644); err != nil {
			log.Fatal(err)
		}
		data, _ := json.MarshalIndent(rep.Runs, "", " ")
		if err := os.WriteFile(runsPath, data, 0o644); err != nil {
			log.Fatal(err)
		}
		if row.Report != nil {
			log.Printf("%s: %s", name, row.Report.Summary())
		}
	}
}

// write rewrites the report and runs.json.
func (r *report) write(out, runsPath string) {
	if err := os.WriteFile(out, []byte(r.markdown(out)), 0o644); err != nil {
		log.Fatal(err)
	}
	data, _ := json.MarshalIndent(r.Runs, "", " ")
	if err := os.WriteFile(runsPath, data, 0o644); err != nil {
		log.Fatal(err)
	}
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func copyFile(from, to string) {
	data, err := os.ReadFile(from)
	if err == nil {
		_ = os.WriteFile(to, data, 0o644)
	}
}

// writeRunLog writes a run's timeline, its anomalies' examples, and each node's last warning
// and error lines: small enough to commit.
func writeRunLog(path, name string, timeline *bytes.Buffer, row runRow, res *chaos.Result) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n# reproduce: %s\n\n## timeline\n%s\n", name, row.Command, timeline.String())
	if row.Err != "" {
		fmt.Fprintf(&b, "harness error: %s\n", row.Err)
	}
	if row.Report != nil {
		fmt.Fprintf(&b, "## report\n%s\n", row.Report.Summary())
		for _, c := range row.Report.Classes() {
			for _, ex := range c.Class.Examples {
				fmt.Fprintf(&b, "%s: %s\n", c.Name, ex)
			}
		}
	}
	if res != nil {
		for j, p := range res.NodeLogs {
			fmt.Fprintf(&b, "\n## node %d: last %d warnings and errors (full log: full/%s-node-%d.log, not committed)\n", j+1, maxNodeLines, name, j+1)
			for _, l := range warnLines(p, maxNodeLines) {
				fmt.Fprintln(&b, l)
			}
		}
	}
	_ = os.WriteFile(path, b.Bytes(), 0o644)
}

func warnLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.HasPrefix(l, "panic") || strings.HasPrefix(l, "=====") {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
