package coordinator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeMarkers is a TxnMarkerWriter that records every call and fails the
// partitions in fail.
type fakeMarkers struct {
	mu    sync.Mutex
	fail  map[TopicPartition]error
	trace []string
}

func (f *fakeMarkers) WriteTxnMarkers(_ context.Context, m TxnMarker) map[TopicPartition]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[TopicPartition]error{}
	var parts []string
	for _, tp := range m.Partitions {
		for _, p := range tp.Partitions {
			k := TopicPartition{tp.Topic, p}
			s := fmt.Sprintf("%s/%d", tp.Topic, p)
			if err := f.fail[k]; err != nil {
				out[k] = err
				s += "(" + err.(*kerr.Error).Message + ")"
			}
			parts = append(parts, s)
		}
	}
	kind := "ABORT"
	if m.Commit {
		kind = "COMMIT"
	}
	f.trace = append(f.trace, fmt.Sprintf("markers %s pid=%d epoch=%d coordinator_epoch=%d tv=%d: %s",
		kind, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.TransactionVersion, strings.Join(parts, " ")))
	return out
}

func (f *fakeMarkers) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trace
	f.trace = nil
	return t
}

type txnHarness struct {
	t       testing.TB
	clock   *manualClock
	cfg     TxnConfig
	tc      *TxnCoordinator
	logs    map[int32]*fakeLog
	epoch   int32 // coordinator epoch of the next load
	markers *fakeMarkers
	nextPID int64
}

func newTxnHarness(t testing.TB) *txnHarness {
	h := &txnHarness{t: t, clock: newManualClock(), logs: map[int32]*fakeLog{}, markers: &fakeMarkers{fail: map[TopicPartition]error{}}, nextPID: 1000}
	cfg := DefaultTxnConfig()
	cfg.NumPartitions = 1
	cfg.Clock = h.clock
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Markers = h.markers
	cfg.Topics = fakeTopics{"t": {parts: 3}, "u": {parts: 1}}
	cfg.OffsetsPartitionFor = func(string) int32 { return 7 }
	cfg.ProducerIDs = func(context.Context) (int64, error) {
		h.nextPID++
		return h.nextPID, nil
	}
	h.cfg = cfg
	h.logs[0] = &fakeLog{}
	h.start()
	return h
}

func (h *txnHarness) start() {
	h.tc = NewTxn(h.cfg)
	h.tc.spawn = func(f func()) { f() }
	if err := h.tc.Load(0, h.epoch, h.logs[0]); err != nil {
		h.t.Fatal(err)
	}
	h.epoch++
}

// settle runs the shard until nothing is queued (marker results and the
// writes they start run as later events).
func (h *txnHarness) settle() {
	h.tc.mu.Lock()
	s := h.tc.mu.shards[0]
	h.tc.mu.Unlock()
	if s == nil {
		return
	}
	for i := 0; i < 1000; i++ {
		s.call(func() {})
		s.exec.Lock()
		idle := len(s.exec.queue) == 0
		s.exec.Unlock()
		if idle {
			return
		}
	}
	h.t.Fatal("shard never idle")
}

func codeName(code int16) string {
	if code == 0 {
		return "OK"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// TestTxnDataDriven runs the scripts in testdata/txn: each command drives
// the transaction coordinator (one __transaction_state partition, markers
// written inline) and prints its answer and the markers written meanwhile.
//
//	init id=T [timeout=ms] [pid=N epoch=N] [version=N]
//	add id=T pid=N epoch=N parts=t/0,t/1 [version=N]
//	verify-only id=T pid=N epoch=N parts=t/0
//	verify id=T pid=N epoch=N part=t/0     (the produce path's check)
//	offsets id=T pid=N epoch=N group=G
//	end id=T pid=N epoch=N commit|abort [version=N]
//	describe id=T
//	list [states=Ongoing,...]
//	fail-markers parts=t/0 [err=NOT_LEADER_FOR_PARTITION]   (parts= empty: none fail)
//	advance d=10s
//	restart                                 (a coordinator failover: reload from the log)
//	seed id=T pid=N epoch=N [state=S] [parts=t/0] [tv2]
//	                                        (append a stored state to the log and reload, as a
//	                                        coordinator that has served the ID for long would)
//	log                                     (the __transaction_state records)
func TestTxnDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/txn", func(t *testing.T, path string) {
		h := newTxnHarness(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			arg := func(key, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			has := func(key string) bool {
				for _, a := range d.CmdArgs {
					if a.Key == key {
						return true
					}
				}
				return false
			}
			num := func(key string, def int) int {
				n, err := strconv.Atoi(arg(key, strconv.Itoa(def)))
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return n
			}
			parts := func(key string) []TopicPartitions {
				var out []TopicPartitions
				for _, s := range strings.Split(arg(key, ""), ",") {
					if s == "" {
						continue
					}
					tp, pn, _ := strings.Cut(s, "/")
					p, _ := strconv.Atoi(pn)
					if len(out) > 0 && out[len(out)-1].Topic == tp {
						out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, int32(p))
					} else {
						out = append(out, TopicPartitions{tp, []int32{int32(p)}})
					}
				}
				return out
			}
			id := arg("id", "T")
			pid, epoch := int64(num("pid", -1)), int16(num("epoch", -1))
			var out []string
			switch d.Cmd {
			case "init":
				req := kmsg.NewPtrInitProducerIDRequest()
				req.Version = int16(num("version", 4))
				req.TransactionalID = &id
				req.TransactionTimeoutMillis = int32(num("timeout", 60000))
				req.ProducerID, req.ProducerEpoch = pid, epoch
				r, err := h.tc.InitProducerID(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				out = append(out, fmt.Sprintf("init: %s pid=%d epoch=%d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch))
			case "add", "verify-only":
				req := kmsg.NewPtrAddPartitionsToTxnRequest()
				req.Version = int16(num("version", 3))
				var topics []TopicPartitions = parts("parts")
				if d.Cmd == "verify-only" {
					req.Version = 4
					tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
					tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
					for _, tp := range topics {
						rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
						rt.Topic, rt.Partitions = tp.Topic, tp.Partitions
						tx.Topics = append(tx.Topics, rt)
					}
					req.Transactions = append(req.Transactions, tx)
				} else {
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
					for _, tp := range topics {
						rt := kmsg.NewAddPartitionsToTxnRequestTopic()
						rt.Topic, rt.Partitions = tp.Topic, tp.Partitions
						req.Topics = append(req.Topics, rt)
					}
				}
				r, err := h.tc.AddPartitionsToTxn(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				var ps []string
				for _, rt := range r.Topics {
					for _, rp := range rt.Partitions {
						ps = append(ps, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, codeName(rp.ErrorCode)))
					}
				}
				for _, tx := range r.Transactions {
					for _, rt := range tx.Topics {
						for _, rp := range rt.Partitions {
							ps = append(ps, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, codeName(rp.ErrorCode)))
						}
					}
				}
				out = append(out, d.Cmd+": "+strings.Join(ps, " "))
			case "verify":
				tps := parts("part")
				err := h.tc.VerifyTxnPartition(ctx, id, pid, epoch, tps[0].Topic, tps[0].Partitions[0])
				res := "OK"
				if err != nil {
					res = err.(*kerr.Error).Message
				}
				out = append(out, "verify: "+res)
			case "offsets":
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.Version = 3
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, arg("group", "g")
				r, err := h.tc.AddOffsetsToTxn(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				out = append(out, "offsets: "+codeName(r.ErrorCode))
			case "end":
				req := kmsg.NewPtrEndTxnRequest()
				req.Version = int16(num("version", 4))
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, has("commit")
				r, err := h.tc.EndTxn(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				line := "end: " + codeName(r.ErrorCode)
				if req.Version >= 5 {
					line += fmt.Sprintf(" pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch)
				}
				out = append(out, line)
			case "describe":
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{id}
				r, err := h.tc.DescribeTransactions(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				st := r.TransactionStates[0]
				if st.ErrorCode != 0 {
					out = append(out, "describe: "+codeName(st.ErrorCode))
					break
				}
				var ps []string
				for _, rt := range st.Topics {
					for _, p := range rt.Partitions {
						ps = append(ps, fmt.Sprintf("%s/%d", rt.Topic, p))
					}
				}
				start := "-"
				if st.StartTimestamp >= 0 {
					start = h.clock.Now().Sub(time.UnixMilli(st.StartTimestamp)).String() + " ago"
				}
				out = append(out, fmt.Sprintf("describe: %s pid=%d epoch=%d timeout=%d started=%s partitions=[%s]",
					st.State, st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, start, strings.Join(ps, " ")))
			case "list":
				req := kmsg.NewPtrListTransactionsRequest()
				req.Version = 1
				if s := arg("states", ""); s != "" {
					req.StateFilters = strings.Split(s, ",")
				}
				r, err := h.tc.ListTransactions(ctx, req)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				for _, st := range r.TransactionStates {
					out = append(out, fmt.Sprintf("list: %s pid=%d %s", st.TransactionalID, st.ProducerID, st.TransactionState))
				}
				if len(r.TransactionStates) == 0 {
					out = append(out, "list: none")
				}
			case "fail-markers":
				h.markers.mu.Lock()
				h.markers.fail = map[TopicPartition]error{}
				e := kerr.NotLeaderForPartition
				if arg("err", "") == "UNKNOWN_TOPIC_OR_PARTITION" {
					e = kerr.UnknownTopicOrPartition
				}
				for _, tp := range parts("parts") {
					for _, p := range tp.Partitions {
						h.markers.fail[TopicPartition{tp.Topic, p}] = e
					}
				}
				h.markers.mu.Unlock()
				out = append(out, "ok")
			case "advance":
				dur, err := time.ParseDuration(arg("d", "1s"))
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				h.clock.Advance(dur)
			case "restart":
				h.tc.Close()
				h.start()
				out = append(out, "reloaded")
			case "seed":
				st := txnEmpty
				for i, name := range txnStateNames {
					if name == arg("state", "Empty") {
						st = txnState(i)
					}
				}
				td := txnData{producerID: pid, prevProducerID: -1, nextProducerID: -1, epoch: epoch, lastEpoch: -1,
					timeoutMs: 60000, state: st, startMs: -1, lastUpdate: h.clock.Now().UnixMilli(), clientTxnV2: has("tv2")}
				for _, tp := range parts("parts") {
					for _, p := range tp.Partitions {
						td.addPartition(tp.Topic, p)
					}
				}
				if len(td.partitions) > 0 {
					td.startMs = td.lastUpdate
				}
				b := encodeBatch(td.lastUpdate, []record{txnRecord(id, &td)})
				h.logs[0].Append(b, func(int64, error) {})
				h.tc.Close()
				h.start()
				out = append(out, "reloaded")
			case "log":
				l := h.logs[0]
				l.mu.Lock()
				batches := append([][]byte(nil), l.batches...)
				l.mu.Unlock()
				for _, b := range batches {
					_ = DecodeBatch(b, func(off int64, k, v []byte) error {
						id, td, err := decodeTxnRecord(k, v)
						if err != nil {
							d.Fatalf(t, "%v", err)
						}
						if td == nil {
							out = append(out, fmt.Sprintf("%d: %s tombstone", off, id))
							return nil
						}
						var ps []string
						for _, tp := range td.sortedPartitions() {
							for _, p := range tp.Partitions {
								ps = append(ps, fmt.Sprintf("%s/%d", tp.Topic, p))
							}
						}
						out = append(out, fmt.Sprintf("%d: %s %s pid=%d epoch=%d [%s]", off, id, td.state, td.producerID, td.epoch, strings.Join(ps, " ")))
						return nil
					})
				}
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			h.settle()
			// Markers written meanwhile (inline, or by retries the clock fired).
			trace := h.markers.take()
			out = append(out, trace...)
			if len(out) == 0 {
				out = append(out, "ok")
			}
			return strings.Join(out, "\n") + "\n"
		})
	})
}
