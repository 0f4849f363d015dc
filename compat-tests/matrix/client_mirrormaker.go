package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/internal/testcluster"
)

// MirrorMaker 2's row: MirrorSourceConnector and MirrorCheckpointConnector (connect-mirror
// 4.3.1, the release whose runtime the Connect rows run) in a distributed Connect worker,
// replicating the cell's topic and group from the sluice under test (alias "src": one node, or
// the three-node cluster) to a second, one-node sluice the cell starts (alias "dst"). The
// replicated topic is src.<topic> on the target. consume-begin and keys-headers check every
// record arrives with the same key, value, headers and timestamp; group checks that the
// checkpoint connector translates the group's committed offset (the source's log starts at 4, so
// source offset 10 is target offset 6) and (sync.group.offsets.enabled) commits it for
// src.<topic> in the same group on the target; exactly-once runs the worker with
// exactly.once.source.support=enabled and the source connector with exactly.once.support=required
// (each record once read_committed, transaction markers in the target partition).
//
// The mirrormaker2-from-kafka row is the migration case with the roles turned: a one-node Apache
// Kafka 4.4.0 the cell starts (holding a copy of the seeded records) is the source, and the sluice
// under test is the target and the store of the worker's internal topics.

// startTargetSluice starts a one-node sluice of the cell's own under its scratch directory and
// returns its bootstrap address and a function that stops it.
func startTargetSluice(e *Env) (string, func(), error) {
	logf, err := os.Create(filepath.Join(e.Dir, "target-sluice.log"))
	if err != nil {
		return "", nil, err
	}
	c, err := testcluster.Start(testcluster.Options{
		Nodes: 1, Bin: e.Bin, BaseDir: filepath.Join(e.Dir, "target-data"),
		Output: func(int) io.Writer { return logf },
	})
	if err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start the target sluice: %w", err)
	}
	e.Log.Printf("[harness] target sluice (one node) at %s", c.Bootstrap()[0])
	return c.Bootstrap()[0], func() { c.Close(); logf.Close() }, nil
}

func runMirrorMaker(ctx context.Context, e *Env) error { return mirrorCell(ctx, e, false) }

// runMirrorMakerFromKafka is the migration case: Apache Kafka 4.4.0 is the source and the sluice
// under test the target (and the store of the Connect worker's internal topics).
func runMirrorMakerFromKafka(ctx context.Context, e *Env) error { return mirrorCell(ctx, e, true) }

// mirrorEnd is one side of a replication: a bootstrap address, the topic there, and the
// replication factor topics created there get.
type mirrorEnd struct {
	addr  string
	topic string
	rf    int16
}

func mirrorCell(ctx context.Context, e *Env, fromKafka bool) error {
	s := e.Scenario
	switch s.ID {
	case "consume-begin", "keys-headers", "group", "exactly-once":
	case "admin":
		return na("MirrorMaker creates the target topics itself; the other cells check them")
	case "transactions":
		return na("MirrorMaker's transactions are those of exactly-once source support: see exactly-once")
	default:
		if s.Codec != "" {
			return na("MirrorMaker copies records a producer wrote; its own producer is the Java producer (the java-producer row)")
		}
		return na("MirrorMaker replicates topics and group offsets; it does not consume from the end or a timestamp, or alter configs")
	}
	src := mirrorEnd{addr: e.Addr, topic: e.Topic, rf: e.RF}
	var dst mirrorEnd
	if fromKafka {
		addr, stop, err := startSourceKafka(ctx, e)
		if err != nil {
			return err
		}
		defer stop()
		src = mirrorEnd{addr: addr, topic: e.Topic, rf: 1}
		if err := copySeed(ctx, e, addr); err != nil {
			return err
		}
		dst = mirrorEnd{addr: e.Addr, topic: "src." + e.Topic, rf: e.RF}
	} else {
		target, stopTarget, err := startTargetSluice(e)
		if err != nil {
			return err
		}
		defer stopTarget()
		dst = mirrorEnd{addr: target, topic: "src." + e.Topic, rf: 1}
	}
	if s.ID == "group" {
		// The source's log starts at offset groupLogStart (records deleted), so the mirrored
		// topic's offsets are the source's minus groupLogStart and the group's committed offset
		// must be translated, not copied. The group has consumed the whole topic on the source.
		cl, err := kgo.NewClient(kgo.SeedBrokers(src.addr))
		if err != nil {
			return err
		}
		adm := kadm.NewClient(cl)
		var del kadm.Offsets
		del.Add(kadm.Offset{Topic: src.topic, Partition: 0, At: groupLogStart, LeaderEpoch: -1})
		dresp, err := adm.DeleteRecords(ctx, del)
		if err == nil {
			err = dresp.Error()
		}
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: src.topic, Partition: 0, At: seedCount, LeaderEpoch: -1})
		if err == nil {
			var resp kadm.OffsetResponses
			resp, err = adm.CommitOffsets(ctx, e.Group, offs)
			if err == nil {
				err = resp.Error()
			}
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("harness delete records / commit: %w", err)
		}
	}
	const class = "org.apache.kafka.connect.cli.ConnectDistributed"
	bytesConv := "org.apache.kafka.connect.converters.ByteArrayConverter"
	rf := strconv.Itoa(int(dst.rf))
	settings := []string{
		"bootstrap.servers=" + dst.addr,
		"config.storage.replication.factor=" + rf, "offset.storage.replication.factor=" + rf, "status.storage.replication.factor=" + rf,
	}
	if s.ID == "exactly-once" {
		settings = append(settings, "exactly.once.source.support=enabled")
	}
	w, err := startWorker(ctx, e, class, settings)
	if err != nil {
		return err
	}
	common := func(class string) map[string]string {
		return map[string]string{
			"connector.class":      "org.apache.kafka.connect.mirror." + class,
			"source.cluster.alias": "src", "target.cluster.alias": "dst",
			"source.cluster.bootstrap.servers": src.addr, "target.cluster.bootstrap.servers": dst.addr,
			"key.converter": bytesConv, "value.converter": bytesConv, "header.converter": bytesConv,
			"replication.factor": rf, "checkpoints.topic.replication.factor": rf, "heartbeats.topic.replication.factor": rf,
			"offset-syncs.topic.replication.factor": strconv.Itoa(int(src.rf)),
		}
	}
	source := common("MirrorSourceConnector")
	source["topics"] = src.topic
	source["sync.topic.acls.enabled"] = "false"
	source["offset.lag.max"] = "0" // an offset sync per record, so translation is exact
	if s.ID == "exactly-once" {
		source["exactly.once.support"] = "required"
		source["source.consumer.isolation.level"] = "read_committed" // the connector refuses EOS without it
	}
	err = w.createConnector(ctx, "mirror-source", source)
	want := int64(s.Seed)
	if s.ID == "group" {
		want -= groupLogStart
	}
	if err == nil {
		err = waitFor(w.wctx, func() error { return sameRecords(ctx, e, src, dst, int(want)) })
	}
	if err == nil && s.ID == "group" {
		cp := common("MirrorCheckpointConnector")
		cp["groups"] = e.Group
		cp["emit.checkpoints.interval.seconds"] = "1"
		cp["sync.group.offsets.enabled"] = "true"
		cp["sync.group.offsets.interval.seconds"] = "1"
		err = w.createConnector(ctx, "mirror-checkpoint", cp)
		if err == nil {
			err = waitFor(w.wctx, func() error { return targetCommitted(ctx, e, dst.addr, dst.topic, seedCount-groupLogStart) })
		}
	}
	if err == nil && s.ID == "exactly-once" {
		err = targetTransactional(ctx, dst.addr, dst.topic, want)
	}
	return errors.Join(err, w.stop())
}

// startSourceKafka starts a one-node Apache Kafka 4.4.0 (the jars of the Java rows) under the
// cell's scratch directory and returns its bootstrap address and a function that stops it.
func startSourceKafka(ctx context.Context, e *Env) (string, func(), error) {
	lib, err := e.Tools.KafkaLib(ctx)
	if err != nil {
		return "", nil, err
	}
	logf, err := os.Create(filepath.Join(e.Dir, "source-kafka.log"))
	if err != nil {
		return "", nil, err
	}
	c, err := testcluster.StartKafka(testcluster.KafkaOptions{
		Nodes: 1, Lib: lib, BaseDir: filepath.Join(e.Dir, "source-kafka"),
		JVMOpts: []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"},
		Output:  func(int) io.Writer { return logf },
	})
	if err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start the source Apache Kafka: %w", err)
	}
	e.Log.Printf("[harness] source Apache Kafka 4.4.0 (one node) at %s", c.Bootstrap()[0])
	return c.Bootstrap()[0], func() { c.Close(); logf.Close() }, nil
}

// copySeed creates the cell's topic on addr and writes to it the records the harness seeded on
// sluice, with the same keys, values, headers and timestamps.
func copySeed(ctx context.Context, e *Env, addr string) error {
	recs, err := e.readAll(ctx, e.Topic, false)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, e.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create %s on the source: %w", e.Topic, err)
	}
	var out []*kgo.Record
	for _, r := range recs {
		out = append(out, &kgo.Record{Topic: e.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
	}
	if err := cl.ProduceSync(ctx, out...).FirstErr(); err != nil {
		return fmt.Errorf("seed %s on the source: %w", e.Topic, err)
	}
	e.Log.Printf("[harness] %d seeded records copied to %s on the source", len(out), e.Topic)
	return nil
}

// groupLogStart is where the group cell's source log starts (DeleteRecords).
const groupLogStart = 4

// targetTransactional checks that topic's partition 0 on the target holds more offsets than its
// n records: the transaction markers an exactly-once source writes.
func targetTransactional(ctx context.Context, target, topic string, n int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(target))
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil || o.Offset <= n {
		return fmt.Errorf("%s on the target ends at %d (%v) with %d records: no transaction markers", topic, o.Offset, o.Err, n)
	}
	return nil
}

// sameRecords checks that dst's topic holds the n records of src's topic, each with the same
// key, value, headers and timestamp, in order.
func sameRecords(ctx context.Context, e *Env, src, dst mirrorEnd, n int) error {
	want, err := readTarget(ctx, src.addr, src.topic, n)
	if err != nil {
		return fmt.Errorf("the source: %w", err)
	}
	got, err := readTarget(ctx, dst.addr, dst.topic, n)
	if err != nil {
		return err
	}
	for i, w := range want {
		g := got[i]
		same := bytes.Equal(g.Key, w.Key) && bytes.Equal(g.Value, w.Value) && g.Timestamp.Equal(w.Timestamp) && len(g.Headers) == len(w.Headers)
		for j := 0; same && j < len(w.Headers); j++ {
			same = g.Headers[j].Key == w.Headers[j].Key && bytes.Equal(g.Headers[j].Value, w.Headers[j].Value)
		}
		if !same {
			return fmt.Errorf("%s record %d is %q=%q %v at %v, the source's is %q=%q %v at %v", dst.topic, i,
				g.Key, g.Value, g.Headers, g.Timestamp.UnixMilli(), w.Key, w.Value, w.Headers, w.Timestamp.UnixMilli())
		}
	}
	e.Log.Printf("[harness] %s on the target holds the %d records with the same keys, values, headers and timestamps", dst.topic, n)
	return nil
}

// readTarget reads partition 0 of topic at addr (read_committed) from the start until it has n
// records (more is a failure: a record copied twice) or a few seconds pass.
func readTarget(ctx context.Context, target, topic string, n int) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(target), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != n {
		return nil, fmt.Errorf("%s on %s holds %d records, want %d", topic, target, len(recs), n)
	}
	return recs, nil
}

// targetCommitted checks the group's committed offset for topic partition 0 on the target.
func targetCommitted(ctx context.Context, e *Env, target, topic string, want int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(target))
	if err != nil {
		return err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, e.Group)
	if err != nil {
		return err
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil || o.At != want {
		return fmt.Errorf("group %s on the target: committed %d for %s (%v, found %v), want %d", e.Group, o.At, topic, o.Err, ok, want)
	}
	e.Log.Printf("[harness] group %s on the target committed %d for %s (translated from %d on the source, whose log starts at %d)", e.Group, o.At, topic, seedCount, groupLogStart)
	return nil
}
