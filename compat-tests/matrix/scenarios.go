package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedCount is how many records the consume, group and delete-records scenarios seed.
const seedCount = 10

// Scenario is one column of the matrix.
type Scenario struct {
	ID    string
	Title string
	// Codec is the compression codec of a produce scenario ("" otherwise).
	Codec string
	// Seed is how many conventional records the harness writes before the client runs.
	Seed int
	// Tail makes the harness produce "tail-<n>" records while the cell runs.
	Tail bool
	// NoTopic leaves topic creation to the client.
	NoTopic bool
	// Security names the mechanism of a security-section scenario (security.go; "" for the
	// main table's scenarios).
	Security string
}

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// Scenarios is the column order of COMPAT.md.
var Scenarios = func() []Scenario {
	s := []Scenario{{ID: "admin", Title: "metadata / topic admin", NoTopic: true}}
	for _, c := range codecs {
		s = append(s, Scenario{ID: "produce-" + c, Title: "produce " + c, Codec: c})
	}
	s = append(s,
		Scenario{ID: "consume-begin", Title: "consume from beginning", Seed: seedCount},
		Scenario{ID: "consume-end", Title: "consume from end", Seed: seedCount, Tail: true},
		Scenario{ID: "consume-ts", Title: "consume from timestamp", Seed: seedCount},
		Scenario{ID: "keys-headers", Title: "keys + headers round-trip", Seed: 3},
		Scenario{ID: "group", Title: "group commit + resume", Seed: seedCount},
		Scenario{ID: "configs", Title: "configs describe / alter"},
		Scenario{ID: "delete-records", Title: "delete records", Seed: seedCount},
		Scenario{ID: "transactions", Title: "transactions"},
		Scenario{ID: "exactly-once", Title: "exactly-once (consume-transform-produce)", Seed: seedCount},
		Scenario{ID: shareScenario, Title: "share group (KIP-932): 2 consumers, release, reject", Seed: seedCount},
	)
	return append(s, securityScenarios...)
}()

// Env is what one cell gets: where the broker is, its own topic and group, and a log.
type Env struct {
	Scenario Scenario
	Addr     string // bootstrap address
	Topic    string // created with one partition unless Scenario.NoTopic
	Group    string // a group id no other cell uses
	TSBase   int64  // timestamp in ms of seeded record 0
	Dir      string // scratch directory
	DataDir  string // sluice's log.dirs (kafka-dump-log reads segments there)
	Log      *cellLog
	Tools    *Tools
	Bin      string // the sluice binary under test (a cell may start a sluice of its own)
	Nodes    int    // cluster size
	RF       int16  // replication factor of the topics the harness creates (3 on a cluster)
	// Sec is the secured listeners and credentials; set for security scenarios only.
	Sec *Security
}

// Args are the conventional arguments of the client scripts.
func (e *Env) Args() []string {
	return []string{e.Scenario.ID, e.Addr, e.Topic, e.Group, strconv.FormatInt(e.TSBase, 10), e.Scenario.Codec}
}

// client is a franz-go client for the harness. Its batches are uncompressed (franz-go's default
// is snappy), so seeded records are readable by clients that lack a codec.
func (e *Env) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Addr), kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
}

// setup creates the cell's topic and seeds records as the scenario asks.
func (e *Env) setup(ctx context.Context) error {
	if e.Scenario.NoTopic {
		return nil
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, e.RF, nil, e.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("setup: create topic %s: %w", e.Topic, err)
	}
	if e.Scenario.ID == "exactly-once" {
		if resp, err := adm.CreateTopic(ctx, 1, e.RF, nil, e.Topic+"-out"); err != nil || resp.Err != nil {
			return fmt.Errorf("setup: create topic %s-out: %v %v", e.Topic, err, resp.Err)
		}
	}
	var recs []*kgo.Record
	for i := 0; i < e.Scenario.Seed; i++ {
		recs = append(recs, &kgo.Record{
			Topic: e.Topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("x%d", i))}, {Key: "trace", Value: []byte(fmt.Sprintf("s%d", i))}},
			Timestamp: time.UnixMilli(e.TSBase + int64(i)*1000),
		})
	}
	if len(recs) > 0 {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("setup: seed %s: %w", e.Topic, err)
		}
	}
	e.Log.Printf("[harness] topic %s created, %d records seeded (ts base %d)", e.Topic, len(recs), e.TSBase)
	if e.Scenario.ID == shareScenario {
		return e.setupShare(ctx, cl)
	}
	return nil
}

// startTail produces "tail-<n>" records until stop is called, for consume-end cells.
func (e *Env) startTail(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl, err := e.client()
		if err != nil {
			return
		}
		defer cl.Close()
		for n := 0; ; n++ {
			rec := &kgo.Record{Topic: e.Topic, Key: []byte("tail"), Value: []byte(fmt.Sprintf("tail-%d", n))}
			cl.ProduceSync(ctx, rec)
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// readAll reads every data record of partition 0 of topic from the log start to the end: the
// high watermark, or with committed the last stable offset, read with read_committed so that
// the client (franz-go) drops aborted records.
func (e *Env) readAll(ctx context.Context, topic string, committed bool) ([]*kgo.Record, error) {
	data, _, err := e.readPartition(ctx, topic, committed)
	return data, err
}

// readAtLeast is readAll repeated until it returns at least n records or 10 s pass: a
// client producing with acks=1 is answered once the leader has its records, and on a cluster
// the high watermark (what a consumer may read) follows when the followers have them.
func (e *Env) readAtLeast(ctx context.Context, topic string, n int) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		recs, err := e.readAll(ctx, topic, false)
		if err != nil || len(recs) >= n {
			return recs, err
		}
		select {
		case <-ctx.Done():
			return recs, nil // the caller reports the shortfall
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readPartition is readAll that also returns the control records (transaction markers) it
// passed. The read ends at the last offset below the end, which is often a marker: a client
// never returns a marker unless asked to keep control records, so the harness keeps them.
func (e *Env) readPartition(ctx context.Context, topic string, committed bool) (data, control []*kgo.Record, err error) {
	cl, err := e.client()
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets // the last stable offset
	}
	ends, err := list(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return nil, nil, fmt.Errorf("end offset of %s: %v", topic, end.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	start, _ := starts.Lookup(topic, 0)
	if end.Offset <= start.Offset {
		return nil, nil, nil
	}
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.KeepControlRecords()}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	rd, err := e.client(opts...)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	last := int64(-1)
	for last < end.Offset-1 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return data, control, fmt.Errorf("read %s: reached offset %d of end %d (%d records, %d markers): %w", topic, last, end.Offset, len(data), len(control), err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return data, control, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if r.Attrs.IsControl() {
				control = append(control, r)
			} else {
				data = append(data, r)
			}
		})
	}
	return data, control, nil
}

// markerTypes names the transaction markers among control records ("commit" or "abort"; a
// control record's key is a version and a type, 0 abort and 1 commit).
func markerTypes(control []*kgo.Record) []string {
	var out []string
	for _, r := range control {
		switch {
		case len(r.Key) < 4:
			out = append(out, "short-key")
		case r.Key[3] == 0 && r.Key[2] == 0:
			out = append(out, "abort")
		case r.Key[3] == 1 && r.Key[2] == 0:
			out = append(out, "commit")
		default:
			out = append(out, fmt.Sprintf("type-%d", binary.BigEndian.Uint16(r.Key[2:4])))
		}
	}
	return out
}

// payload is the value of record i in produce scenarios: long enough that every client's
// compressor shrinks the batch (clients send uncompressed batches when compression does not
// help).
func payload(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 100)) }

// VerifyProduced checks that the topic holds n records produced by the client with the
// conventional keys and values (unless valuesAny) and that every stored batch carries the
// scenario's codec.
func (e *Env) VerifyProduced(ctx context.Context, n int, valuesAny bool) error {
	recs, err := e.readAtLeast(ctx, e.Topic, n)
	if err != nil {
		return err
	}
	if len(recs) != n {
		return fmt.Errorf("verify: topic holds %d records, want %d", len(recs), n)
	}
	if !valuesAny {
		for i, r := range recs {
			if string(r.Value) != payload(i) || string(r.Key) != fmt.Sprintf("k%d", i) {
				return fmt.Errorf("verify: record %d is %q=%q, want k%d=%s", i, r.Key, r.Value, i, payload(i))
			}
		}
	}
	if e.Scenario.Codec != "" {
		return e.verifyCodec(ctx)
	}
	return nil
}

var codecAttr = map[string]int16{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// verifyCodec fetches partition 0 raw and checks the compression bits of every batch.
func (e *Env) verifyCodec(ctx context.Context) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, e.Topic)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 8 << 20
	req.ReplicaID = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = e.Topic
	rt.TopicID = td[e.Topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 8 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// A raw Fetch goes to the partition's leader (on a cluster another node answers
	// NOT_LEADER_OR_FOLLOWER).
	leader := td[e.Topic].Partitions[0].Leader
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("verify codec: unexpected fetch response shape")
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
		return fmt.Errorf("verify codec: fetch error code %d", p.ErrorCode)
	}
	data := resp.Topics[0].Partitions[0].RecordBatches
	e.Log.Printf("[harness] raw fetch: %d bytes", len(data))
	want := codecAttr[e.Scenario.Codec]
	var seen []string
	for len(data) >= 23 {
		length := int(int32(binary.BigEndian.Uint32(data[8:12])))
		if length < 11 || 12+length > len(data) {
			break
		}
		magic := data[16]
		var codec int16
		if magic >= 2 {
			codec = int16(binary.BigEndian.Uint16(data[21:23])) & 7
		} else {
			codec = int16(data[21]) & 7 // legacy message set: attributes follow crc and magic
		}
		seen = append(seen, fmt.Sprintf("magic %d codec %d", magic, codec))
		if codec != want {
			return fmt.Errorf("verify codec: stored batch has codec %d, want %d (%s); batches: %s", codec, want, e.Scenario.Codec, strings.Join(seen, ", "))
		}
		data = data[12+length:]
	}
	if len(seen) == 0 {
		return fmt.Errorf("verify codec: no batches fetched")
	}
	e.Log.Printf("[harness] stored batches: %s", strings.Join(seen, ", "))
	return nil
}

// VerifyKeysHeaders checks that records after the 3 seeds, if any, carry the conventional
// client-produced keys and headers.
func (e *Env) VerifyKeysHeaders(ctx context.Context, wantProduced bool) error {
	want := 3
	if wantProduced {
		want = 6
	}
	recs, err := e.readAtLeast(ctx, e.Topic, want)
	if err != nil {
		return err
	}
	produced := recs[min(3, len(recs)):]
	if wantProduced && len(produced) != 3 {
		return fmt.Errorf("verify: client produced %d records, want 3", len(produced))
	}
	for i, r := range produced {
		h := map[string]string{}
		for _, hd := range r.Headers {
			h[hd.Key] = string(hd.Value)
		}
		if string(r.Key) != fmt.Sprintf("ck%d", i) || string(r.Value) != fmt.Sprintf("c%d", i) ||
			h["h"] != fmt.Sprintf("y%d", i) || h["trace"] != fmt.Sprintf("t%d", i) {
			return fmt.Errorf("verify: produced record %d is key %q value %q headers %v", i, r.Key, r.Value, h)
		}
	}
	e.Log.Printf("[harness] verified %d client-produced records with keys and headers", len(produced))
	return nil
}

// VerifyRetention checks that the client's alter set retention.ms=3600000 on the topic.
func (e *Env) VerifyRetention(ctx context.Context) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, e.Topic)
	if err != nil {
		return err
	}
	rc, err := rcs.On(e.Topic, nil)
	if err != nil {
		return err
	}
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			if c.MaybeValue() != "3600000" {
				return fmt.Errorf("verify: retention.ms is %q, want 3600000", c.MaybeValue())
			}
			e.Log.Printf("[harness] retention.ms=3600000 (%s)", c.Source)
			return nil
		}
	}
	return fmt.Errorf("verify: retention.ms not described")
}

// VerifyStartOffset checks the topic's log start offset.
func (e *Env) VerifyStartOffset(ctx context.Context, want int64) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, e.Topic)
	if err != nil {
		return err
	}
	s, _ := starts.Lookup(e.Topic, 0)
	if s.Err != nil || s.Offset != want {
		return fmt.Errorf("verify: log start offset %d (%v), want %d", s.Offset, s.Err, want)
	}
	e.Log.Printf("[harness] log start offset is %d", want)
	return nil
}

// VerifyCommitted checks the group's committed offset on partition 0 is at least want.
func (e *Env) VerifyCommitted(ctx context.Context, want int64) error {
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, e.Group)
	if err != nil {
		return err
	}
	o, ok := offs.Lookup(e.Topic, 0)
	if !ok || o.Err != nil || o.At < want {
		return fmt.Errorf("verify: group %s committed %d (%v, found %v), want >= %d", e.Group, o.At, o.Err, ok, want)
	}
	e.Log.Printf("[harness] group %s committed offset %d", e.Group, o.At)
	return nil
}

// The transactions scenario: the client, with transactional id <topic>-txn, commits a
// transaction of ck0..ck2=c0..c2 to partition 0, aborts one of ak0..ak2=a0..a2, and commits one
// of ck3..ck5=c3..c5.
const txnCommitted, txnAborted = 6, 3

// VerifyTxn checks the transactions scenario exactly once: a read_committed reader sees
// c0..c5 in order, each once, and none of the aborted records; a read_uncommitted reader sees
// the aborted ones too (so the abort really wrote them); and the partition holds one marker per
// transaction: commit, abort, commit.
func (e *Env) VerifyTxn(ctx context.Context) error {
	var want []string
	for i := 0; i < txnCommitted; i++ {
		want = append(want, fmt.Sprintf("ck%d=c%d", i, i))
	}
	if err := e.verifyCommittedExactly(ctx, e.Topic, want); err != nil {
		return err
	}
	all, control, err := e.readPartition(ctx, e.Topic, false)
	if err != nil {
		return err
	}
	aborted := 0
	for _, r := range all {
		if strings.HasPrefix(string(r.Value), "a") {
			aborted++
		}
	}
	if len(all) != txnCommitted+txnAborted || aborted != txnAborted {
		return fmt.Errorf("verify: read_uncommitted sees %d records (%d aborted), want %d (%d aborted): %s", len(all), aborted, txnCommitted+txnAborted, txnAborted, recordList(all))
	}
	if m := strings.Join(markerTypes(control), ","); m != "commit,abort,commit" {
		return fmt.Errorf("verify: transaction markers are [%s], want [commit,abort,commit]", m)
	}
	e.Log.Printf("[harness] read_committed: %s exactly once, no aborted record; read_uncommitted: %d records; markers commit,abort,commit", strings.Join(want, " "), len(all))
	return nil
}

// The exactly-once scenario: the client first aborts a transaction that writes records whose
// values start with "aborted" to <topic>-out and (where the client can) adds offset 3 of the
// input for the group; then, consuming the seeded k<i>=v<i> in the group with read_committed
// from the committed position, it writes k<i>=out-v<i> to <topic>-out and commits the input
// offsets in the same transactions.

// VerifyEOS checks the exactly-once scenario: <topic>-out read with read_committed holds
// k0..k9=out-v0..out-v9 in order, each once, and no aborted record; the aborted records are in
// the log (read_uncommitted); the group's committed offset is 10 (the aborted offset 3 never
// became visible: had it, the group would have started at 3 and out-v0..v2 would be missing).
func (e *Env) VerifyEOS(ctx context.Context) error {
	out := e.Topic + "-out"
	var want []string
	for i := 0; i < seedCount; i++ {
		want = append(want, fmt.Sprintf("k%d=out-v%d", i, i))
	}
	if err := e.verifyCommittedExactly(ctx, out, want); err != nil {
		return err
	}
	all, _, err := e.readPartition(ctx, out, false)
	if err != nil {
		return err
	}
	aborted := 0
	for _, r := range all {
		if strings.HasPrefix(string(r.Value), "aborted") {
			aborted++
		}
	}
	if aborted == 0 {
		return fmt.Errorf("verify: the aborted transaction left no record in %s (read_uncommitted sees %s)", out, recordList(all))
	}
	cl, err := e.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, e.Group)
	if err != nil {
		return err
	}
	o, ok := offs.Lookup(e.Topic, 0)
	if !ok || o.Err != nil || o.At != seedCount {
		return fmt.Errorf("verify: group %s committed %d (%v, found %v), want %d", e.Group, o.At, o.Err, ok, seedCount)
	}
	e.Log.Printf("[harness] read_committed %s: out-v0..out-v9 exactly once; %d aborted records only in read_uncommitted; group offset %d", out, aborted, o.At)
	return nil
}

// verifyCommittedExactly checks that a read_committed reader of topic sees exactly want
// ("key=value" each), in order.
func (e *Env) verifyCommittedExactly(ctx context.Context, topic string, want []string) error {
	recs, err := e.readAll(ctx, topic, true)
	if err != nil {
		return err
	}
	if got := recordList(recs); got != strings.Join(want, " ") {
		return fmt.Errorf("verify: read_committed sees [%s] in %s, want [%s]", got, topic, strings.Join(want, " "))
	}
	return nil
}

// recordList formats records as "key=value ...", clipped.
func recordList(recs []*kgo.Record) string {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", r.Key, r.Value)
		if b.Len() > 600 {
			fmt.Fprintf(&b, " ... (%d records)", len(recs))
			break
		}
	}
	return b.String()
}

// verifyScenario is the harness check that follows a client run that exited cleanly; it is
// used for the script clients, which do their own client-side checks.
func (e *Env) verifyScenario(ctx context.Context) error {
	switch s := e.Scenario; {
	case s.Codec != "":
		return e.VerifyProduced(ctx, seedCount, false)
	case s.ID == "keys-headers":
		return e.VerifyKeysHeaders(ctx, false)
	case s.ID == "group":
		return e.VerifyCommitted(ctx, 5)
	case s.ID == "configs":
		return e.VerifyRetention(ctx)
	case s.ID == "delete-records":
		return e.VerifyStartOffset(ctx, 5)
	case s.ID == "transactions":
		return e.VerifyTxn(ctx)
	case s.ID == "exactly-once":
		return e.VerifyEOS(ctx)
	}
	return nil
}
