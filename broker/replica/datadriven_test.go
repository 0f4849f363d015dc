package replica

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/internal/batch"
	"sluice/logstore"
)

// testNode is this node's ID in every script.
const testNode = 1

// testLogConfig keeps everything (no time or size retention) and never fsyncs per append.
func testLogConfig() logstore.Config {
	return logstore.Config{
		SegmentBytes: 1 << 30, SegmentMs: math.MaxInt64 / 2, SegmentIndexBytes: 10 << 20, IndexIntervalBytes: 4096,
		RetentionMs: -1, RetentionBytes: -1, FlushMessages: math.MaxInt64, FlushMs: math.MaxInt64 / 2,
	}
}

// testBatch is one uncompressed batch of n small records.
func testBatch(n int) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Value: []byte("v")}
	}
	return batch.Build(batch.Header{BaseTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

// traceHarness is one replica (node 1) over a log in a temp directory, a manual clock and a
// purgatory, driven by a script.
type traceHarness struct {
	t         *testing.T
	dir       string
	clock     *ManualClock
	purgatory *Purgatory[string]
	log       *logstore.Log
	replica   *Replica
	lag       time.Duration
	cfg       logstore.Config
	produces  int
	out       *[]string
	wakes     int
	deletes   int
	// fenced are the brokers ReplicaAlive reports dead.
	fenced map[int32]bool
}

// traceDelete is a DeleteRecords held in the purgatory.
type traceDelete struct {
	name string
	wait DeleteRecordsWait
	out  *[]string
}

func (d *traceDelete) TryComplete(expired bool) bool {
	if !d.wait.Check(expired) {
		return false
	}
	*d.out = append(*d.out, fmt.Sprintf("%s answered: %s low watermark %d", d.name, errName(d.wait.Err), d.wait.LowWatermark))
	return true
}

// traceProduce is an acks=all produce held in the purgatory.
type traceProduce struct {
	name string
	wait AckWait
	out  *[]string
}

func (p *traceProduce) TryComplete(expired bool) bool {
	if !p.wait.Check(expired) {
		return false
	}
	*p.out = append(*p.out, fmt.Sprintf("%s answered: %s", p.name, errName(p.wait.Err)))
	return true
}

func errName(err error) string {
	var ke *kerr.Error
	switch {
	case err == nil:
		return "OK"
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, ErrStaleLeaderEpoch):
		return "stale leader epoch"
	case errors.Is(err, ErrUnknownReplica):
		return "unknown replica"
	}
	return err.Error()
}

func (h *traceHarness) open(checkpoint int64, hwMinISR int32) {
	log, err := logstore.Open(h.dir, h.cfg, logstore.Options{Now: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = log
	h.replica = New(log, Options{
		NodeID: testNode, Clock: h.clock, ReplicaLagTimeMax: h.lag, CheckpointedHighWatermark: checkpoint,
		OnChange: func() { h.wakes++; h.purgatory.Wake("p") }, Name: "p",
		ReplicaAlive: func(id int32) bool { return !h.fenced[id] },
	})
	if hwMinISR > 0 {
		h.replica.opts.MinInsync = func() int32 { return hwMinISR }
	}
}

func (h *traceHarness) state() string {
	s := h.replica.Snapshot()
	role, epoch, leader := h.replica.Role()
	isr, pending := h.replica.ISR()
	line := fmt.Sprintf("%s epoch=%d leader=%d logStart=%d hw=%d lso=%d leo=%d", role, epoch, leader, s.LogStart, s.HighWatermark, s.LastStable, s.LogEnd)
	if role == RoleLeader {
		line += fmt.Sprintf(" isr=%s", ids(isr))
		if pending != nil {
			line += fmt.Sprintf(" pending=%s", ids(pending))
		}
	}
	if epoch != s.LeaderEpoch || (role == RoleLeader) != s.Leader {
		line += " SNAPSHOT DISAGREES"
	}
	return line
}

func ids(s []int32) string {
	parts := make([]string, len(s))
	for i, id := range s {
		parts[i] = strconv.Itoa(int(id))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func parseIDs(t *testing.T, d *datadriven.TestData, s string) []int32 {
	if s == "" {
		return nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			d.Fatalf(t, "bad id list %q", s)
		}
		out = append(out, int32(n))
	}
	return out
}

// TestDataDriven runs the scripts in testdata/: each command drives the replica (node 1) and
// prints what a caller would see, then the replica's state; answers of delayed produces that
// completed meanwhile are printed first. Commands:
//
//	open [checkpoint=N] [lag=10s] [segment-bytes=N] [hw-min-isr=N]   a new log and replica (no role yet); hw-min-isr sets Options.MinInsync
//	restart [checkpoint=N]                 close the log and open it again
//	become-leader epoch=E isr=1,2 replicas=1,2,3
//	become-follower epoch=E leader=L
//	append [records=N] [acks=all|1] [min-isr=N] [epoch=E] [origin=client|coordinator|replication] [timeout=5s]
//	fetch replica=R offset=O [log-start=S] [broker-epoch=E]  a follower's fetch (UpdateFollowerFetch), reporting its log start (-1: none)
//	follower-append records=N hw=H         an append replicated from the leader
//	truncate offset=O
//	shrink                                 MaybeShrinkISR now
//	propose-recovered epoch=E              ProposeRecovered (after an unclean election)
//	isr-failed                             the pending ISR proposal was refused
//	delete-records offset=O [timeout=30s]  DeleteRecords; held until the low watermark reaches the offset
//	low-watermark                          LowWatermark now
//	lags                                   FollowerLags now
//	fence id=N / unfence id=N              ReplicaAlive reports broker N dead / alive
//	retention [bytes=N]                    enforce retention (retention.bytes=N)
//	advance d=5s                           move the clock, then run the purgatory
//	state
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var out []string
		h := &traceHarness{t: t, dir: t.TempDir(), clock: NewManualClock(time.Unix(1000, 0)), out: &out, lag: 10 * time.Second}
		h.purgatory = NewPurgatory[string](h.clock)
		defer func() {
			if h.log != nil {
				h.log.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out = out[:0]
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			num := func(key string, def int64) int64 {
				n, err := strconv.ParseInt(arg(key, strconv.FormatInt(def, 10)), 10, 64)
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return n
			}
			dur := func(key, def string) time.Duration {
				v, err := time.ParseDuration(arg(key, def))
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return v
			}
			if d.Cmd != "open" && h.replica == nil {
				d.Fatalf(t, "open first")
			}
			switch d.Cmd {
			case "open":
				h.lag = dur("lag", "10s")
				h.cfg = testLogConfig()
				h.cfg.SegmentBytes = num("segment-bytes", h.cfg.SegmentBytes)
				h.open(num("checkpoint", -1), int32(num("hw-min-isr", 0)))
			case "restart":
				if err := h.log.Close(); err != nil {
					d.Fatalf(t, "close: %v", err)
				}
				h.open(num("checkpoint", -1), int32(num("hw-min-isr", 0)))
			case "become-leader":
				err := h.replica.BecomeLeader(int32(num("epoch", 0)), parseIDs(t, d, arg("isr", "1")), parseIDs(t, d, arg("replicas", arg("isr", "1"))))
				if err != nil {
					out = append(out, "refused: "+errName(err))
				}
			case "become-follower":
				if err := h.replica.BecomeFollower(int32(num("epoch", 0)), int32(num("leader", -1))); err != nil {
					out = append(out, "refused: "+errName(err))
				}
			case "append":
				acks := int16(1)
				if arg("acks", "1") == "all" {
					acks = -1
				}
				origin := map[string]Origin{"client": OriginClient, "coordinator": OriginCoordinator, "replication": OriginReplication}[arg("origin", "client")]
				minISR := int32(num("min-isr", 1))
				records := testBatch(int(num("records", 1)))
				switch {
				case arg("marker", "") != "":
					// marker=commit|abort pid=N: a transaction marker of producer N.
					records = logstore.MarkerBatch(num("pid", 1), 0, 0, arg("marker", "") == "commit", 1)
					origin = OriginCoordinator
				case num("txn-pid", -1) >= 0:
					// txn-pid=N seq=S: a transactional batch of producer N.
					recs := make([]batch.Record, num("records", 1))
					records = batch.Build(batch.Header{Attributes: batch.AttrTransactional, BaseTimestamp: 1, MaxTimestamp: 1,
						ProducerID: num("txn-pid", -1), BaseSequence: int32(num("seq", 0))}, recs)
				}
				info, err := h.replica.AppendAsLeader(origin, records, AppendOptions{
					RequiredAcks: acks, MinInsync: minISR, LeaderEpoch: int32(num("epoch", -1)),
				})
				if err != nil {
					out = append(out, "append refused: "+errName(err))
					break
				}
				out = append(out, fmt.Sprintf("appended %d-%d at epoch %d", info.FirstOffset, info.LastOffset, info.LeaderEpoch))
				if acks == -1 {
					h.produces++
					name := fmt.Sprintf("produce %d (up to %d)", h.produces, info.LastOffset)
					if info.HighWatermark > info.LastOffset {
						out = append(out, name+" answered: OK (at once)")
						break
					}
					op := &traceProduce{name: name, out: &out, wait: AckWait{Replica: h.replica, Required: info.LastOffset + 1, AppendEpoch: info.LeaderEpoch, MinInsync: minISR}}
					h.purgatory.Add(op, []string{"p"}, dur("timeout", "30s"))
					out = append(out, name+" waits")
				}
			case "fetch":
				res, err := h.replica.UpdateFollowerFetch(int32(num("replica", 2)), num("broker-epoch", -1), num("offset", 0), num("log-start", -1), h.clock.Now())
				if err != nil {
					out = append(out, "fetch refused: "+errName(err))
					break
				}
				line := fmt.Sprintf("fetch answered hw=%d", res.HighWatermark)
				if res.Proposal != nil {
					line += fmt.Sprintf("; propose isr=%s at epoch %d", ids(res.Proposal.ISR), res.Proposal.LeaderEpoch)
					if slices.ContainsFunc(res.Proposal.BrokerEpochs, func(e int64) bool { return e >= 0 }) {
						line += fmt.Sprintf(" broker epochs %v", res.Proposal.BrokerEpochs)
					}
				}
				out = append(out, line)
			case "follower-append":
				var batches []byte
				if n := num("records", 0); n > 0 {
					batches = testBatch(int(n))
					// A leader's batch: its offsets and epoch are kept.
					start := h.replica.Snapshot().LogEnd
					binaryPutBaseOffset(batches, start, int32(num("epoch", 0)))
				}
				if _, err := h.replica.AppendAsFollower(batches, num("hw", 0)); err != nil {
					out = append(out, "follower append refused: "+errName(err))
				}
			case "truncate":
				if err := h.replica.TruncateTo(num("offset", 0)); err != nil {
					out = append(out, "truncate refused: "+errName(err))
				}
			case "shrink":
				if c := h.replica.MaybeShrinkISR(h.clock.Now()); c != nil {
					line := fmt.Sprintf("propose isr=%s at epoch %d", ids(c.ISR), c.LeaderEpoch)
					if slices.ContainsFunc(c.BrokerEpochs, func(e int64) bool { return e >= 0 }) {
						line += fmt.Sprintf(" broker epochs %v", c.BrokerEpochs)
					}
					out = append(out, line)
				} else {
					out = append(out, "nothing to propose")
				}
			case "propose-recovered":
				if c := h.replica.ProposeRecovered(int32(num("epoch", 0))); c != nil {
					out = append(out, fmt.Sprintf("propose isr=%s at epoch %d (RECOVERED)", ids(c.ISR), c.LeaderEpoch))
				} else {
					out = append(out, "nothing to propose")
				}
			case "isr-failed":
				h.replica.ISRChangeFailed()
			case "delete-records":
				res, err := h.replica.DeleteRecords(num("offset", -1))
				if err != nil {
					out = append(out, "delete records refused: "+errName(err))
					break
				}
				h.deletes++
				name := fmt.Sprintf("delete %d (to %d)", h.deletes, res.Requested)
				if res.LowWatermark >= res.Requested {
					out = append(out, fmt.Sprintf("%s answered: OK low watermark %d (at once)", name, res.LowWatermark))
					break
				}
				op := &traceDelete{name: name, out: &out, wait: DeleteRecordsWait{Replica: h.replica, Required: res.Requested, LowWatermark: res.LowWatermark}}
				h.purgatory.Add(op, []string{"p"}, dur("timeout", "30s"))
				out = append(out, fmt.Sprintf("%s waits, low watermark %d", name, res.LowWatermark))
			case "low-watermark":
				low, err := h.replica.LowWatermark()
				if err != nil {
					out = append(out, "low watermark refused: "+errName(err))
				} else {
					out = append(out, fmt.Sprintf("low watermark %d", low))
				}
			case "lags":
				for _, l := range h.replica.FollowerLags(h.clock.Now()) {
					out = append(out, fmt.Sprintf("replica %d: logEnd=%d logStart=%d lag=%d sinceCaughtUp=%v caughtUp=%t",
						l.ID, l.LogEnd, l.LogStart, l.LagRecords, l.SinceCaughtUp, l.CaughtUp))
				}
			case "fence", "unfence":
				if h.fenced == nil {
					h.fenced = map[int32]bool{}
				}
				h.fenced[int32(num("id", 0))] = d.Cmd == "fence" // wakes nothing by itself
			case "retention":
				h.cfg.RetentionBytes = num("bytes", h.cfg.RetentionBytes)
				h.log.SetConfig(h.cfg)
				if err := h.replica.EnforceRetention(); err != nil {
					out = append(out, "retention: "+err.Error())
				}
			case "advance":
				h.clock.Advance(dur("d", "1s"))
			case "state":
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			h.purgatory.RunPending()
			out = append(out, h.state())
			if n := h.purgatory.Len(); n > 0 {
				out = append(out, fmt.Sprintf("waiting: %d", n))
			}
			return strings.Join(out, "\n") + "\n"
		})
	})
}

// binaryPutBaseOffset sets a built batch's base offset and partition leader epoch, as a
// leader's append would have (both are outside the CRC).
func binaryPutBaseOffset(b []byte, base int64, epoch int32) {
	for i := range 8 {
		b[i] = byte(base >> (56 - 8*i))
	}
	for i := range 4 {
		b[12+i] = byte(epoch >> (24 - 8*i))
	}
}

// TestSnapshotIsConsistent reads snapshots while appends and HW moves run, and checks every
// one is in order (the seqlock never shows a torn snapshot).
func TestSnapshotIsConsistent(t *testing.T) {
	clock := NewManualClock(time.Unix(0, 0))
	log, err := logstore.Open(t.TempDir(), testLogConfig(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	r := New(log, Options{NodeID: 1, Clock: clock, ReplicaLagTimeMax: time.Second, CheckpointedHighWatermark: -1})
	if err := r.BecomeLeader(1, []int32{1, 2}, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			if _, err := r.AppendAsLeader(OriginClient, testBatch(2), AppendOptions{RequiredAcks: 1, LeaderEpoch: -1}); err != nil {
				t.Error(err)
				return
			}
			if _, err := r.UpdateFollowerFetch(2, -1, int64(2*i), -1, clock.Now()); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	reads := 0
	for {
		s := r.Snapshot()
		if !(s.LogStart <= s.LastStable && s.LastStable <= s.HighWatermark && s.HighWatermark <= s.LogEnd) {
			t.Fatalf("torn snapshot %+v", s)
		}
		reads++
		select {
		case <-done:
			if s := r.Snapshot(); s.LogEnd != 600 || s.HighWatermark != 598 {
				t.Fatalf("final snapshot %+v, want logEnd 600, hw 598", s)
			}
			return
		default:
		}
	}
}
