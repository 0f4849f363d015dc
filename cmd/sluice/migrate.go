package main

// `sluice migrate --from-kafka DIR[,DIR...] [--dry-run] [--check-all-crcs] [--config FILE]
// [--set key=value ...]`: adopts the log directory of a stopped Apache Kafka KRaft broker in
// place (package migrate). --config and --set are the node's, as it will be started: log.dirs
// must be Kafka's directory, node.id Kafka's node.id, offsets.topic.num.partitions and
// transaction.state.log.num.partitions the partition counts of Kafka's __consumer_offsets and
// __transaction_state. The report lists topics, partitions,
// segments, bytes, groups, notes and problems; with a problem nothing is changed and the exit
// status is 1. --dry-run stops after the report.

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"sluice/broker"
	"sluice/controller"
	"sluice/migrate"
)

func runMigrate(args []string, stdout, stderr io.Writer) int {
	if err := migrateCmd(args, stdout); err != nil {
		fmt.Fprintln(stderr, "sluice migrate:", err)
		if errors.Is(err, errFormatUsage) {
			return exitUsage
		}
		return exitFailed
	}
	return 0
}

func migrateCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sluice migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "the node's server.properties file")
	overrides := setFlags{}
	fs.Var(overrides, "set", "key=value config override (repeatable)")
	from := fs.String("from-kafka", "", "the stopped Kafka broker's log.dirs (and metadata.log.dir), comma-separated")
	dryRun := fs.Bool("dry-run", false, "report what would be adopted and change nothing")
	allCRCs := fs.Bool("check-all-crcs", false, "check every batch's CRC in every segment (reads every byte)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errFormatUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errFormatUsage, fs.Arg(0))
	}
	if *from == "" {
		return fmt.Errorf("%w: --from-kafka DIR is required", errFormatUsage)
	}
	cfg, err := loadNodeConfig(*configPath, overrides)
	if err != nil {
		return err
	}
	if !cfg.HasRole("broker") || !cfg.HasRole("controller") || len(cfg.QuorumVoters) > 1 {
		return errors.New("the adopted directory becomes a single-node cluster: process.roles=broker,controller and no other voters")
	}
	var dirs []string
	for _, d := range strings.Split(*from, ",") {
		if d = strings.TrimSpace(d); d != "" {
			abs, err := filepath.Abs(d)
			if err != nil {
				return err
			}
			dirs = append(dirs, abs)
		}
	}
	for _, d := range dirs {
		if err := checkKafkaStopped(d); err != nil {
			return err
		}
	}
	logDir, _ := filepath.Abs(cfg.LogDirs[0])
	metadataDir, _ := filepath.Abs(cfg.MetadataLogDir)
	plan, err := migrate.Prepare(migrate.Options{KafkaDirs: dirs, LogDir: logDir, MetadataDir: metadataDir,
		NodeID: cfg.NodeID, OffsetsTopicPartitions: cfg.OffsetsTopicNumPartitions,
		TransactionTopicPartitions: cfg.TransactionStateLogNumPartitions, CheckAllCRCs: *allCRCs})
	if err != nil {
		return err
	}
	if n := len(encodeBootstrap(plan.Records)); n > maxBootstrapRecordsBytes {
		plan.Problems = append(plan.Problems, fmt.Sprintf("the metadata to adopt takes %d bytes, more than the %d a new sluice cluster's first metadata entry holds (not supported yet)", n, maxBootstrapRecordsBytes))
	}
	plan.Report(stdout, *dryRun)
	if len(plan.Problems) > 0 {
		return fmt.Errorf("%d problem(s): nothing was changed", len(plan.Problems))
	}
	if *dryRun {
		return nil
	}
	if hasMetadata, err := controller.HasState(filepath.Join(metadataDir, "__cluster_metadata-0")); err != nil || hasMetadata {
		return fmt.Errorf("metadata.log.dir %s already holds a sluice metadata log (%v): nothing was changed", metadataDir, err)
	}
	err = plan.Apply(func(p *migrate.Plan) error {
		if filepath.Clean(metadataDir) != filepath.Clean(logDir) {
			if err := os.MkdirAll(metadataDir, 0o755); err != nil {
				return err
			}
			err := broker.FormatLogDir(metadataDir, broker.MetaProperties{ClusterID: p.ClusterID, NodeID: p.NodeID, DirectoryID: broker.NewDirectoryID()}, true)
			if err != nil {
				return err
			}
		}
		return writeBootstrapRecords(metadataDir, p.Records)
	})
	if err != nil {
		return fmt.Errorf("adopting: %w (run sluice migrate again to finish)", err)
	}
	fmt.Fprintf(stdout, "Adopted %s as cluster %s, node %d. Kafka's metadata log is kept as %s. Start sluice with the same --config/--set.\n",
		logDir, plan.ClusterID, plan.NodeID, filepath.Join(filepath.Dir(plan.KafkaMetadata), migrate.KafkaMetadataBackup))
	return nil
}

// encodeBootstrap is the bootstrap.records file writeBootstrapRecords writes.
func encodeBootstrap(recs []controller.Record) []byte {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(base64.StdEncoding.EncodeToString(controller.EncodeRecord(r)))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// checkKafkaStopped refuses a directory a running Kafka holds: Kafka locks <dir>/.lock with
// a POSIX record lock (the JVM's FileChannel.tryLock), sluice with flock; both are tried.
func checkKafkaStopped(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err == nil && lk.Type != syscall.F_UNLCK {
		return fmt.Errorf("%s is locked by process %d (a running Kafka broker?): stop it first", dir, lk.Pid)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("%s is in use by another process (a running sluice?): %v", dir, err)
	}
	return nil
}
