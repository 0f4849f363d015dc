package main

// The one-node side-by-side subcommands (scale, conns, omb, share) share their frame: the same
// flags naming the brokers and where things go, one fresh node of each broker in turn under the
// scratch directory, and a report written as <date>-<name>.md (the rows also as JSON in the
// scratch directory).

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// singleNodeRun is the frame's configuration; each subcommand's config embeds it.
type singleNodeRun struct {
	KafkaLib, SluiceBin, WorkDir, OutDir string
	Brokers                              []string

	brokers *string // the -brokers flag until prepare splits it
}

// registerFlags adds the frame's flags to fs; name picks the default scratch directory.
func (r *singleNodeRun) registerFlags(fs *flag.FlagSet, name string) {
	fs.StringVar(&r.KafkaLib, "kafka-lib", "", "directory of Apache Kafka's jars (scripts/fetch-kafka.sh prints it)")
	fs.StringVar(&r.SluiceBin, "sluice-bin", "bin/sluice", "sluice binary")
	fs.StringVar(&r.WorkDir, "workdir", filepath.Join(os.TempDir(), "sluice-bench-"+name), "scratch directory on the data disk (wiped)")
	fs.StringVar(&r.OutDir, "out", "bench/results", "where the report goes")
	r.brokers = fs.String("brokers", "kafka,sluice", "brokers to run, in order")
}

// prepare checks the flags once parsed, wipes the scratch directory and makes both directories.
func (r *singleNodeRun) prepare() error {
	if r.KafkaLib == "" && strings.Contains(*r.brokers, "kafka") {
		return errors.New("-kafka-lib is required")
	}
	r.Brokers = strings.Split(*r.brokers, ",")
	if err := os.RemoveAll(r.WorkDir); err != nil {
		return err
	}
	for _, d := range []string{r.WorkDir, r.OutDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// startNode starts one fresh node of broker name ("kafka" or "sluice") under the scratch
// directory; with profile, sluice serves pprof (brokerProc.DebugAddr).
func (r *singleNodeRun) startNode(name string, profile bool) (*brokerProc, error) {
	dir := filepath.Join(r.WorkDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	slog.Info("starting broker", "broker", name)
	switch name {
	case "kafka":
		return startKafka(r.KafkaLib, dir, 1, false)
	case "sluice":
		return startSluice(r.SluiceBin, dir, 1, false, profile)
	}
	return nil, fmt.Errorf("unknown broker %q", name)
}

// stopNode stops b and removes its data.
func stopNode(b *brokerProc) {
	_ = b.stop()
	os.RemoveAll(b.DataDir)
}

// writeReport writes rows as <date>-<name>.json in the scratch directory and md as
// <date>-<name>.md in the output directory.
func (r *singleNodeRun) writeReport(started time.Time, name string, rows any, md string) error {
	stem := started.Format("2006-01-02") + "-" + name
	_ = writeJSON(filepath.Join(r.WorkDir, stem+".json"), rows)
	path := filepath.Join(r.OutDir, stem+".md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	slog.Info("report written", "markdown", path)
	return nil
}
