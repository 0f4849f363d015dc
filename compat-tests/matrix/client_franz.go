package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func kadmClient(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }

var franzCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// franzProduce writes the conventional records k<i>=v<i> with codec.
func franzProduce(ctx context.Context, e *Env, codec string) error {
	cl, err := e.client(kgo.ProducerBatchCompression(franzCodecs[codec]), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := 0; i < seedCount; i++ {
		recs = append(recs, &kgo.Record{Topic: e.Topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(payload(i))})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// franzCommit commits offset at for the cell's group with a group member that then leaves.
func franzCommit(ctx context.Context, e *Env, at int64) error {
	cl, err := e.client(kgo.ConsumerGroup(e.Group), kgo.ConsumeTopics(e.Topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < int(at) {
		fs := cl.PollRecords(ctx, int(at)-len(got))
		if err := ctx.Err(); err != nil {
			return err
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return errs[0].Err
		}
		got = append(got, fs.Records()...)
	}
	if err := cl.CommitRecords(ctx, got[len(got)-1]); err != nil {
		return err
	}
	cl.LeaveGroup()
	return nil
}

// pollValues polls cl until n records arrive and returns their values.
func pollValues(ctx context.Context, cl *kgo.Client, n int) ([]*kgo.Record, error) {
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollRecords(ctx, n-len(got))
		if err := ctx.Err(); err != nil {
			return got, fmt.Errorf("got %d of %d records: %w", len(got), n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return got, errs[0].Err
		}
		got = append(got, fs.Records()...)
	}
	return got, nil
}

func expectValues(recs []*kgo.Record, from int) error {
	for i, r := range recs {
		if string(r.Value) != fmt.Sprintf("v%d", from+i) {
			return fmt.Errorf("record %d is %q, want v%d", i, r.Value, from+i)
		}
	}
	return nil
}

func runFranz(ctx context.Context, e *Env) error {
	s := e.Scenario
	switch {
	case s.ID == "admin":
		cl, err := e.client()
		if err != nil {
			return err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		if resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("86400000")}, e.Topic); err != nil || resp.Err != nil {
			return fmt.Errorf("create: %v %v", err, resp.Err)
		}
		td, err := adm.ListTopics(ctx, e.Topic)
		if err != nil {
			return err
		}
		if d := td[e.Topic]; d.Err != nil || len(d.Partitions) != 3 {
			return fmt.Errorf("metadata: %d partitions (%v), want 3", len(d.Partitions), d.Err)
		}
		if _, err := adm.CreatePartitions(ctx, 2, e.Topic); err != nil {
			return fmt.Errorf("create partitions: %w", err)
		}
		if resp, err := adm.DeleteTopic(ctx, e.Topic); err != nil || resp.Err != nil {
			return fmt.Errorf("delete: %v %v", err, resp.Err)
		}
		return nil
	case s.Codec != "":
		if err := franzProduce(ctx, e, s.Codec); err != nil {
			return err
		}
		return e.verifyScenario(ctx)
	case s.ID == "consume-begin", s.ID == "consume-end", s.ID == "consume-ts":
		off, from, n := kgo.NewOffset().AtStart(), 0, seedCount
		if s.ID == "consume-end" {
			off, n = kgo.NewOffset().AtEnd(), 1
		} else if s.ID == "consume-ts" {
			off, from, n = kgo.NewOffset().AfterMilli(e.TSBase+5000), 5, 5
		}
		cl, err := e.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{e.Topic: {0: off}}))
		if err != nil {
			return err
		}
		defer cl.Close()
		recs, err := pollValues(ctx, cl, n)
		if err != nil {
			return err
		}
		if s.ID == "consume-end" {
			if len(recs[0].Value) < 5 || string(recs[0].Value[:5]) != "tail-" {
				return fmt.Errorf("first record from end is %q, want a tail record", recs[0].Value)
			}
			return nil
		}
		return expectValues(recs, from)
	case s.ID == "keys-headers":
		cl, err := e.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{e.Topic: {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			return err
		}
		defer cl.Close()
		for i := 0; i < 3; i++ {
			r := &kgo.Record{Topic: e.Topic, Key: []byte(fmt.Sprintf("ck%d", i)), Value: []byte(fmt.Sprintf("c%d", i)),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("y%d", i))}, {Key: "trace", Value: []byte(fmt.Sprintf("t%d", i))}}}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				return err
			}
		}
		recs, err := pollValues(ctx, cl, 3)
		if err != nil {
			return err
		}
		for i, r := range recs[:3] {
			if string(r.Key) != fmt.Sprintf("k%d", i) || len(r.Headers) != 2 || string(r.Headers[0].Value) != fmt.Sprintf("x%d", i) {
				return fmt.Errorf("seed %d: key %q headers %v", i, r.Key, r.Headers)
			}
		}
		return e.VerifyKeysHeaders(ctx, true)
	case s.ID == "group":
		if err := franzCommit(ctx, e, 5); err != nil {
			return err
		}
		if err := e.VerifyCommitted(ctx, 5); err != nil {
			return err
		}
		cl, err := e.client(kgo.ConsumerGroup(e.Group), kgo.ConsumeTopics(e.Topic))
		if err != nil {
			return err
		}
		defer cl.Close()
		recs, err := pollValues(ctx, cl, 1)
		if err != nil {
			return err
		}
		return expectValues(recs[:1], 5)
	case s.ID == "configs":
		cl, err := e.client()
		if err != nil {
			return err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		if _, err := adm.DescribeTopicConfigs(ctx, e.Topic); err != nil {
			return err
		}
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, e.Topic)
		if err == nil {
			_, err = resp.On(e.Topic, nil)
		}
		if err != nil {
			return err
		}
		if _, err := adm.DescribeBrokerConfigs(ctx); err != nil {
			return err
		}
		return e.VerifyRetention(ctx)
	case s.ID == "delete-records":
		cl, err := e.client()
		if err != nil {
			return err
		}
		defer cl.Close()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: e.Topic, Partition: 0, At: 5})
		resp, err := kadm.NewClient(cl).DeleteRecords(ctx, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return err
		}
		return e.VerifyStartOffset(ctx, 5)
	case s.ID == "transactions":
		cl, err := e.client(kgo.TransactionalID(e.Topic+"-txn"), kgo.DefaultProduceTopic(e.Topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return err
		}
		defer cl.Close()
		txn := func(prefix string, from, to int, commit kgo.TransactionEndTry) error {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
			for i := from; i < to; i++ {
				r := &kgo.Record{Key: []byte(fmt.Sprintf("%sk%d", prefix, i)), Value: []byte(fmt.Sprintf("%s%d", prefix, i))}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					return err
				}
			}
			return cl.EndTransaction(ctx, commit)
		}
		if err := txn("c", 0, 3, kgo.TryCommit); err != nil {
			return err
		}
		if err := txn("a", 0, 3, kgo.TryAbort); err != nil {
			return err
		}
		if err := txn("c", 3, 6, kgo.TryCommit); err != nil {
			return err
		}
		return e.verifyScenario(ctx)
	case s.ID == "exactly-once":
		// GroupTransactSession: the first poll is transformed into "aborted-" records and the
		// transaction aborted, which rewinds the session to the group's committed offsets; then
		// every record is transformed and committed with its offset.
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(e.Addr), kgo.TransactionalID(e.Topic+"-txn"),
			kgo.ConsumerGroup(e.Group), kgo.ConsumeTopics(e.Topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return err
		}
		defer sess.Close()
		aborted := false
		seen := map[string]bool{}
		for len(seen) < seedCount {
			fs := sess.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return err
			}
			if errs := fs.Errors(); len(errs) > 0 {
				return errs[0].Err
			}
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				return err
			}
			prefix := "out-"
			if !aborted {
				prefix = "aborted-"
			}
			var perr error
			var got []string
			fs.EachRecord(func(r *kgo.Record) {
				out := &kgo.Record{Topic: e.Topic + "-out", Key: r.Key, Value: append([]byte(prefix), r.Value...)}
				if err := sess.ProduceSync(ctx, out).FirstErr(); err != nil {
					perr = err
				}
				got = append(got, string(r.Value))
			})
			if perr != nil {
				return perr
			}
			if !aborted {
				aborted = true
				if _, err := sess.End(ctx, kgo.TryAbort); err != nil {
					return err
				}
				e.Log.Printf("[franz-go] aborted a transaction of %v", got)
				continue
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				return err
			}
			if !committed {
				return errors.New("transaction not committed")
			}
			for _, v := range got {
				seen[v] = true
			}
		}
		return e.verifyScenario(ctx)
	}
	return na("not mapped")
}
