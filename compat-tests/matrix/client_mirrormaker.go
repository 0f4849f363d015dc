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

func runMirrorMaker(ctx context.Context, e *Env) error {
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
	target, stopTarget, err := startTargetSluice(e)
	if err != nil {
		return err
	}
	defer stopTarget()
	if s.ID == "group" {
		// The source's log starts at offset groupLogStart (records deleted), so the mirrored
		// topic's offsets are the source's minus groupLogStart and the group's committed offset
		// must be translated, not copied. The group has consumed the whole topic on the source.
		cl, err := e.client()
		if err != nil {
			return err
		}
		adm := kadm.NewClient(cl)
		var del kadm.Offsets
		del.Add(kadm.Offset{Topic: e.Topic, Partition: 0, At: groupLogStart, LeaderEpoch: -1})
		dresp, err := adm.DeleteRecords(ctx, del)
		if err == nil {
			err = dresp.Error()
		}
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: e.Topic, Partition: 0, At: seedCount, LeaderEpoch: -1})
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
	settings := []string{
		"bootstrap.servers=" + target,
		"config.storage.replication.factor=1", "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
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
			"source.cluster.bootstrap.servers": e.Addr, "target.cluster.bootstrap.servers": target,
			"key.converter": bytesConv, "value.converter": bytesConv, "header.converter": bytesConv,
			"replication.factor": "1", "checkpoints.topic.replication.factor": "1",
			"offset-syncs.topic.replication.factor": strconv.Itoa(int(e.RF)),
			"heartbeats.topic.replication.factor":   "1",
		}
	}
	src := common("MirrorSourceConnector")
	src["topics"] = e.Topic
	src["sync.topic.acls.enabled"] = "false"
	src["offset.lag.max"] = "0" // an offset sync per record, so translation is exact
	if s.ID == "exactly-once" {
		src["exactly.once.support"] = "required"
		src["source.consumer.isolation.level"] = "read_committed" // the connector refuses EOS without it
	}
	err = w.createConnector(ctx, "mirror-source", src)
	mirrored := "src." + e.Topic
	if err == nil {
		err = waitFor(w.wctx, func() error { return sameRecords(ctx, e, target, mirrored) })
	}
	if err == nil && s.ID == "group" {
		cp := common("MirrorCheckpointConnector")
		cp["groups"] = e.Group
		cp["emit.checkpoints.interval.seconds"] = "1"
		cp["sync.group.offsets.enabled"] = "true"
		cp["sync.group.offsets.interval.seconds"] = "1"
		err = w.createConnector(ctx, "mirror-checkpoint", cp)
		if err == nil {
			err = waitFor(w.wctx, func() error { return targetCommitted(ctx, e, target, mirrored, seedCount-groupLogStart) })
		}
	}
	if err == nil && s.ID == "exactly-once" {
		err = targetTransactional(ctx, target, mirrored, seedCount)
	}
	return errors.Join(err, w.stop())
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

// sameRecords checks that topic on the target holds the cell's topic's records, each with the
// same key, value, headers and timestamp, in order.
func sameRecords(ctx context.Context, e *Env, target, topic string) error {
	want, err := e.readAll(ctx, e.Topic, false)
	if err != nil {
		return err
	}
	got, err := readTarget(ctx, target, topic, len(want))
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
			return fmt.Errorf("%s record %d is %q=%q %v at %v, the source's is %q=%q %v at %v", topic, i,
				g.Key, g.Value, g.Headers, g.Timestamp.UnixMilli(), w.Key, w.Value, w.Headers, w.Timestamp.UnixMilli())
		}
	}
	e.Log.Printf("[harness] %s on the target holds the %d records with the same keys, values, headers and timestamps", topic, len(want))
	return nil
}

// readTarget reads partition 0 of topic on the target (read_committed) from the start until it has n records
// (more is a failure: a record copied twice) or a few seconds pass.
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
		return nil, fmt.Errorf("%s on the target holds %d records, want %d", topic, len(recs), n)
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
