package coordinator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The share coordinator's datadriven tests (testdata/share): writes, reads,
// snapshots every N updates, replay after a reload of the same log.
//
//	new updates-per-snapshot=N    a coordinator over a fresh log, loaded
//	write group= part= [state-epoch=] [leader-epoch=] [start=]
//	  FIRST-LAST STATE COUNT      one state batch per line (STATE avail/acked/archived)
//	read group= part= [leader-epoch=]
//	summary group= part=
//	init group= part= state-epoch= start=
//	delete group= part=
//	reload                        a new coordinator replays the same log
//	compact                       the log as the cleaner leaves it (latest record per key), reloaded
//	log                           the records in the log, one per line
func TestShareCoordinatorDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/share", func(t *testing.T, path string) {
		var c *ShareCoordinator
		var l *fakeLog
		perSnap := 0
		topicID := [16]byte{1, 2, 3}
		ctx := context.Background()
		newCoord := func() {
			c = NewShare(ShareConfig{NumPartitions: 1, UpdatesPerSnapshot: perSnap, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := c.Load(0, l); err != nil {
				t.Fatal(err)
			}
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			intArg := func(name string, def int64) int64 {
				for _, a := range d.CmdArgs {
					if a.Key == name {
						v, err := strconv.ParseInt(a.Vals[0], 10, 64)
						if err != nil {
							t.Fatal(err)
						}
						return v
					}
				}
				return def
			}
			strArg := func(name, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == name {
						return a.Vals[0]
					}
				}
				return def
			}
			key := func() SharePartitionKey {
				return SharePartitionKey{Group: strArg("group", "g"), TopicID: topicID, Partition: int32(intArg("part", 0))}
			}
			code := func(c int16) string {
				if c == 0 {
					return "ok"
				}
				return kerr.ErrorForCode(c).(*kerr.Error).Message
			}
			switch d.Cmd {
			case "new":
				perSnap = int(intArg("updates-per-snapshot", 500))
				l = &fakeLog{}
				newCoord()
				return ""
			case "reload":
				c.Close()
				newCoord()
				return ""
			case "compact":
				// What the log cleaner leaves: the latest record of each key, in log order;
				// then a reload from it.
				type kv struct{ key, value []byte }
				var recs []kv
				last := map[string]int{}
				if err := l.Replay(func(raw []byte) error {
					return forEachLogRecord(raw, func(r *logRecord) error {
						last[string(r.key)] = len(recs)
						recs = append(recs, kv{append([]byte(nil), r.key...), append([]byte(nil), r.value...)})
						return nil
					})
				}); err != nil {
					t.Fatal(err)
				}
				c.Close()
				l = &fakeLog{}
				kept := 0
				for i, r := range recs {
					if last[string(r.key)] != i {
						continue
					}
					if len(r.value) == 0 {
						r.value = nil
					}
					kept++
					l.Append(encodeBatchAs(0, -1, -1, []record{{key: r.key, value: r.value}}), func(int64, error) {})
				}
				newCoord()
				return fmt.Sprintf("kept %d of %d records\n", kept, len(recs))
			case "write":
				w := ShareWrite{StateEpoch: int32(intArg("state-epoch", 0)), LeaderEpoch: int32(intArg("leader-epoch", 0)),
					StartOffset: intArg("start", -1), DeliveryCompleteCount: -1}
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line == "" {
						continue
					}
					w.Batches = append(w.Batches, parseStateBatch(t, line))
				}
				return code(c.Write(ctx, key(), w)) + "\n"
			case "read", "summary":
				r := c.Read(ctx, key(), int32(intArg("leader-epoch", -1)), d.Cmd == "summary")
				var b strings.Builder
				fmt.Fprintf(&b, "%s state-epoch=%d leader-epoch=%d start=%d\n", code(r.ErrorCode), r.StateEpoch, r.LeaderEpoch, r.StartOffset)
				if d.Cmd == "read" {
					for _, sb := range r.Batches {
						fmt.Fprintf(&b, "%s\n", formatStateBatch(sb))
					}
				}
				return b.String()
			case "init":
				return code(c.Initialize(ctx, key(), int32(intArg("state-epoch", 0)), intArg("start", -1))) + "\n"
			case "delete":
				return code(c.Delete(ctx, key())) + "\n"
			case "log":
				var b strings.Builder
				err := l.Replay(func(raw []byte) error {
					return forEachLogRecord(raw, func(r *logRecord) error {
						kind, k, err := decodeShareStateKey(r.key)
						if err != nil {
							return err
						}
						name := map[int16]string{keyShareSnapshot: "snapshot", keyShareUpdate: "update"}[kind]
						if r.value == nil {
							fmt.Fprintf(&b, "%d %s %s/%d tombstone\n", r.offset, name, k.Group, k.Partition)
							return nil
						}
						v, err := decodeShareStateValue(kind, r.value)
						if err != nil {
							return err
						}
						fmt.Fprintf(&b, "%d %s %s/%d snapshot-epoch=%d state-epoch=%d leader-epoch=%d start=%d", r.offset, name, k.Group, k.Partition,
							v.SnapshotEpoch, v.StateEpoch, v.LeaderEpoch, v.StartOffset)
						for _, sb := range v.Batches {
							fmt.Fprintf(&b, " [%s]", formatStateBatch(sb))
						}
						b.WriteString("\n")
						return nil
					})
				})
				if err != nil {
					return err.Error()
				}
				return b.String()
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
		if c != nil {
			c.Close()
		}
	})
}

var stateNames = map[int8]string{0: "avail", 2: "acked", 4: "archived"}

func parseStateBatch(t *testing.T, line string) ShareStateBatch {
	var first, last int64
	var state string
	var count int16
	if _, err := fmt.Sscanf(line, "%d-%d %s %d", &first, &last, &state, &count); err != nil {
		t.Fatalf("state batch %q: %v", line, err)
	}
	for id, name := range stateNames {
		if name == state {
			return ShareStateBatch{first, last, id, count}
		}
	}
	n, err := strconv.Atoi(state)
	if err != nil {
		t.Fatalf("state %q", state)
	}
	return ShareStateBatch{first, last, int8(n), count}
}

func formatStateBatch(sb ShareStateBatch) string {
	name, ok := stateNames[sb.DeliveryState]
	if !ok {
		name = strconv.Itoa(int(sb.DeliveryState))
	}
	return fmt.Sprintf("%d-%d %s %d", sb.FirstOffset, sb.LastOffset, name, sb.DeliveryCount)
}

func TestShareCoordinatorKey(t *testing.T) {
	id := [16]byte{0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	key := ShareCoordinatorKey("a:b", id, 7)
	k, ok := ParseShareCoordinatorKey(key)
	if !ok || k.Group != "a:b" || k.TopicID != id || k.Partition != 7 {
		t.Fatalf("round trip of %q: %+v %v", key, k, ok)
	}
	for _, bad := range []string{"", "g", "g:x:1", ":" + key[4:], "g:AAAAAAAAAAAAAAAAAAAAAA:-1", "g:AAAAAAAAAAAAAAAAAAAAAA:x"} {
		if _, ok := ParseShareCoordinatorKey(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzShareStateRecord: the __share_group_state key and value decoders never
// panic, and what they accept re-encodes to the same bytes.
func FuzzShareStateRecord(f *testing.F) {
	k := SharePartitionKey{Group: "g", TopicID: [16]byte{1}, Partition: 3}
	v := &shareStateValue{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 10, DeliveryCompleteCount: 5,
		Batches: []ShareStateBatch{{10, 12, 2, 1}, {13, 13, 0, 2}}}
	f.Add(shareStateKey(keyShareSnapshot, k), encodeShareStateValue(keyShareSnapshot, v))
	v.DeliveryCompleteCount = -1
	f.Add(shareStateKey(keyShareUpdate, k), encodeShareStateValue(keyShareUpdate, v))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		kind, dk, err := decodeShareStateKey(key)
		if err != nil {
			return
		}
		if got := shareStateKey(kind, dk); string(got) != string(key) {
			t.Fatalf("key re-encodes to %x, was %x", got, key)
		}
		dv, err := decodeShareStateValue(kind, value)
		if err != nil {
			return
		}
		// Re-encoding drops unknown tags, so compare decoded forms.
		again, err := decodeShareStateValue(kind, encodeShareStateValue(kind, dv))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(dv) {
			t.Fatalf("value round trip: %+v vs %+v (%v)", again, dv, err)
		}
		_ = mergeShareStateBatches(nil, dv.Batches, dv.StartOffset)
	})
}

func TestMergeShareStateBatches(t *testing.T) {
	for _, tc := range []struct {
		cur, upd []ShareStateBatch
		start    int64
		want     string
	}{
		{nil, []ShareStateBatch{{0, 9, 0, 1}}, 0, "[{0 9 0 1}]"},
		{[]ShareStateBatch{{0, 9, 0, 1}}, []ShareStateBatch{{3, 4, 2, 1}}, 0, "[{0 2 0 1} {3 4 2 1} {5 9 0 1}]"},
		{[]ShareStateBatch{{0, 9, 0, 1}}, []ShareStateBatch{{3, 4, 2, 1}}, 4, "[{4 4 2 1} {5 9 0 1}]"},
		{[]ShareStateBatch{{0, 4, 2, 1}, {5, 9, 0, 1}}, []ShareStateBatch{{5, 9, 2, 1}}, 0, "[{0 9 2 1}]"},
		{[]ShareStateBatch{{5, 9, 0, 1}}, []ShareStateBatch{{0, 2, 4, 3}, {20, 21, 2, 1}}, 0, "[{0 2 4 3} {5 9 0 1} {20 21 2 1}]"},
		{[]ShareStateBatch{{0, 9, 0, 1}}, nil, 20, "[]"},
	} {
		if got := fmt.Sprint(mergeShareStateBatches(tc.cur, tc.upd, tc.start)); got != tc.want {
			t.Errorf("merge %v + %v from %d = %s, want %s", tc.cur, tc.upd, tc.start, got, tc.want)
		}
	}
}

// BenchmarkShareCoordinatorWrite: one WriteShareGroupState of a share partition whose window
// holds 200 runs (acknowledged records interleaved with released ones), committed at once by
// the in-memory log; a snapshot every 500 updates as by default.
func BenchmarkShareCoordinatorWrite(b *testing.B) {
	c := NewShare(ShareConfig{NumPartitions: 1, UpdatesPerSnapshot: 500, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := c.Load(0, &fakeLog{}); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	k := SharePartitionKey{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	var batches []ShareStateBatch
	for i := int64(0); i < 200; i++ {
		state, count := int8(2), int16(1)
		if i%2 == 1 {
			state, count = 0, 2
		}
		batches = append(batches, ShareStateBatch{FirstOffset: i * 10, LastOffset: i*10 + 9, DeliveryState: state, DeliveryCount: count})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if code := c.Write(ctx, k, ShareWrite{LeaderEpoch: 1, StartOffset: 0, DeliveryCompleteCount: -1, Batches: batches}); code != 0 {
			b.Fatal(code)
		}
	}
}

// FuzzMergeShareStateBatches checks the boundary sweep against painting offset by offset.
func FuzzMergeShareStateBatches(f *testing.F) {
	f.Add([]byte{0, 9, 0, 1, 3, 4, 2, 1}, byte(0))
	f.Add([]byte{5, 9, 0, 1, 0, 2, 4, 3, 20, 21, 2, 1}, byte(3))
	f.Fuzz(func(t *testing.T, raw []byte, start byte) {
		var all []ShareStateBatch
		for ; len(raw) >= 4; raw = raw[4:] {
			first, last := int64(raw[0]%64), int64(raw[1]%64)
			if last < first {
				first, last = last, first
			}
			all = append(all, ShareStateBatch{first, last, int8(raw[2] % 3 * 2), int16(raw[3] % 4)})
		}
		cut := len(all) / 2
		got := mergeShareStateBatches(all[:cut], all[cut:], int64(start%64))
		type cell struct {
			set   bool
			state int8
			count int16
		}
		var want [64]cell
		for _, b := range all {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				want[o] = cell{true, b.DeliveryState, b.DeliveryCount}
			}
		}
		var have [64]cell
		prevLast := int64(-1)
		for i, b := range got {
			if b.FirstOffset <= prevLast || b.LastOffset < b.FirstOffset {
				t.Fatalf("batch %d %+v not sorted or empty in %+v", i, b, got)
			}
			if i > 0 && got[i-1].LastOffset+1 == b.FirstOffset && got[i-1].DeliveryState == b.DeliveryState && got[i-1].DeliveryCount == b.DeliveryCount {
				t.Fatalf("adjacent equal runs not joined: %+v", got)
			}
			prevLast = b.LastOffset
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				have[o] = cell{true, b.DeliveryState, b.DeliveryCount}
			}
		}
		for o := range want {
			w := want[o]
			if int64(o) < int64(start%64) {
				w = cell{}
			}
			if have[o] != w {
				t.Fatalf("offset %d: %+v, want %+v (from %+v, start %d)", o, have[o], w, all, start%64)
			}
		}
	})
}
