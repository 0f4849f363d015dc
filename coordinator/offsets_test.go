package coordinator

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesJava(t *testing.T) {
	for _, tc := range []struct {
		group string
		hash  int32 // Java's String.hashCode
		want  int32 // with 50 partitions
	}{
		{"", 0, 0},
		{"a", 97, 47},
		{"hello", 99162322, 22},
		// Java's hashCode is Integer.MIN_VALUE here; Kafka's Utils.abs maps
		// it to 0.
		{"polygenelubricants", -2147483648, 0},
		{"my-group", -1906497762, 12}, // negative: absolute value, not a mask
		{"console-consumer-12345", 158455506, 6},
		{"é", 233, 33},
		// A supplementary character counts as two UTF-16 code units.
		{"😀", 1772899, 49},
	} {
		if got := javaStringHashCode(tc.group); got != tc.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tc.group, got, tc.hash)
		}
		if got := partitionFor(tc.group, 50); got != tc.want {
			t.Errorf("partitionFor(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := []record{
		{key: []byte("k1"), value: []byte("v1")},
		{key: []byte("k2"), value: nil},
		{key: []byte("k3"), value: []byte{}},
	}
	b := encodeBatch(1234, recs)
	var got []record
	err := DecodeBatch(b, func(off int64, k, v []byte) error {
		if off != int64(len(got)) {
			t.Errorf("offset %d, want %d", off, len(got))
		}
		got = append(got, record{k, v})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].value) != "v1" || got[1].value != nil || got[2].value == nil {
		t.Fatalf("got %+v", got)
	}
	// kmsg agrees on the header, and the CRC is valid.
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.NumRecords != 3 || rb.LastOffsetDelta != 2 || rb.Magic != 2 || rb.ProducerID != -1 {
		t.Fatalf("header %+v", rb)
	}
	b[len(b)-1] ^= 1
	if err := DecodeBatch(b, func(int64, []byte, []byte) error { return nil }); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("corrupt batch: %v", err)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch(1, []record{{key: []byte("k"), value: []byte("v")}}))
	f.Add(encodeBatch(1, []record{{key: groupKey("g"), value: nil}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = DecodeBatch(b, func(int64, []byte, []byte) error { return nil })
	})
}

func FuzzDecodeRecord(f *testing.F) {
	e := &offsetEntry{offset: 5, leaderEpoch: 1, metadata: "m", commitTimestamp: 9, expireTimestamp: -1}
	r := offsetRecord("g", "t", 0, e)
	f.Add(r.key, r.value)
	g := newGroup(&shard{runtime: runtime{cfg: &Config{Clock: newManualClock()}}}, "g", time.Unix(0, 0))
	gr := g.metadataRecord(nil)
	f.Add(gr.key, gr.value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, _ = decodeRecord(key, value)
	})
}

func TestSimpleOffsetCommitAndFetch(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g1")

	// A commit with generation -1 to an unknown group creates it as a
	// simple group.
	r := h.commit("g1", -1, "", 8, "t", map[int32]int64{0: 10, 1: 20})
	if codes := commitCodes(r); !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("commit codes %v", codes)
	}
	if got := h.fetch("g1", "t", 0, 1, 2); !slices.Equal(got, []int64{10, 20, -1}) {
		t.Fatalf("fetch %v", got)
	}
	// Unknown group: -1 everywhere, no error.
	h.load("nope")
	if got := h.fetch("nope", "t", 0); !slices.Equal(got, []int64{-1}) {
		t.Fatalf("fetch unknown group: %v", got)
	}

	// A commit with a generation to a nonexistent group is refused.
	r = h.commit("g1-other", 3, "m", 8, "t", map[int32]int64{0: 1})
	if codes := commitCodes(r); codes[0] != errNotCoordinator {
		// g1-other's partition is not loaded here.
		t.Fatalf("want NOT_COORDINATOR, got %v", codes)
	}
	h.load("g1-other")
	r = h.commit("g1-other", 3, "m", 8, "t", map[int32]int64{0: 1})
	if codes := commitCodes(r); codes[0] != errIllegalGeneration {
		t.Fatalf("want ILLEGAL_GENERATION, got %v", codes)
	}
	r = h.commit("g1-other", 3, "m", 9, "t", map[int32]int64{0: 1})
	if codes := commitCodes(r); codes[0] != kerr.GroupIDNotFound.Code {
		t.Fatalf("want GROUP_ID_NOT_FOUND, got %v", codes)
	}

	// Fetch all offsets (v8, multi-group, nil topics) and a v0 fetch.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g1"}, {Group: "g1-other"}}
	fr, err := h.c.OffsetFetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.Groups) != 2 || len(fr.Groups[0].Topics) != 1 || len(fr.Groups[0].Topics[0].Partitions) != 2 ||
		fr.Groups[0].Topics[0].Partitions[1].Offset != 20 || *fr.Groups[0].Topics[0].Partitions[1].Metadata != "md" ||
		fr.Groups[0].Topics[0].Partitions[1].LeaderEpoch != 7 || len(fr.Groups[1].Topics) != 0 {
		t.Fatalf("v8 fetch %+v", fr.Groups)
	}
	req = kmsg.NewPtrOffsetFetchRequest()
	req.Version = 1
	req.Group = "g1"
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{1}}}
	fr, err = h.c.OffsetFetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Topics[0].Partitions[0].Offset != 20 {
		t.Fatalf("v1 fetch %+v", fr.Topics)
	}

	// Too much metadata is refused per partition.
	creq := kmsg.NewPtrOffsetCommitRequest()
	creq.Version = 8
	creq.Group = "g1"
	big := string(make([]byte, 5000))
	creq.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 11, LeaderEpoch: -1, Metadata: &big},
		{Partition: 1, Offset: 21, LeaderEpoch: -1},
	}}}
	cr, err := h.c.OffsetCommit(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if codes := commitCodes(cr); !slices.Equal(codes, []int16{kerr.OffsetMetadataTooLarge.Code, 0}) {
		t.Fatalf("codes %v", codes)
	}
	if got := h.fetch("g1", "t", 0, 1); !slices.Equal(got, []int64{10, 21}) {
		t.Fatalf("fetch %v", got)
	}
}

func TestOffsetCommitAnswersAfterLogCommit(t *testing.T) {
	h := newHarness(t, nil)
	l := h.load("g")
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
	res := goAsync(func() *kmsg.OffsetCommitResponse { return h.commit("g", -1, "", 8, "t", map[int32]int64{0: 5}) })
	h.waitFor("g", func(s *shard) bool { return len(s.pendingWrites) == 1 })
	// Not committed yet: invisible to fetch, no answer.
	if got := h.fetch("g", "t", 0); got[0] != -1 {
		t.Fatalf("uncommitted offset visible: %v", got)
	}
	select {
	case <-res.ch:
		t.Fatal("answered before the log committed")
	default:
	}
	l.release()
	if codes := commitCodes(res.wait(t)); codes[0] != 0 {
		t.Fatalf("codes %v", codes)
	}
	if got := h.fetch("g", "t", 0); got[0] != 5 {
		t.Fatalf("fetch %v", got)
	}
}

func TestOffsetCommitAppendFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{kerr.NotLeaderForPartition, errNotCoordinator},
		{kerr.NotEnoughReplicas, errCoordNotAvailable},
		{kerr.MessageTooLarge, kerr.InvalidCommitOffsetSize.Code},
		{errors.New("disk on fire"), errNotCoordinator},
	} {
		h := newHarness(t, nil)
		l := h.load("g")
		l.failErr = tc.err
		if codes := commitCodes(h.commit("g", -1, "", 8, "t", map[int32]int64{0: 5})); codes[0] != tc.want {
			t.Errorf("%v: code %d, want %d", tc.err, codes[0], tc.want)
		}
		l.failErr = nil
		if got := h.fetch("g", "t", 0); got[0] != -1 {
			t.Errorf("failed commit visible: %v", got)
		}
		if st := h.groupState("g"); st != "none" {
			t.Errorf("group created by a failed commit survives: %s", st)
		}
	}
}

func TestLoadingAndNotCoordinator(t *testing.T) {
	h := newHarness(t, nil)
	l := h.load("g")
	h.commit("g", -1, "", 8, "t", map[int32]int64{0: 1})
	h.c.Close()

	c := New(h.cfg)
	p := c.PartitionFor("g")
	var during *kmsg.OffsetFetchResponse
	l.onReplay = func() {
		if during != nil {
			return
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = "g"
		during, _ = c.OffsetFetch(ctx, req)
	}
	if err := c.Load(p, l); err != nil {
		t.Fatal(err)
	}
	if during == nil || during.ErrorCode != errLoadInProgress {
		t.Fatalf("during load: %+v", during)
	}
	if err := c.Load(p, l); !errors.Is(err, ErrShardLoaded) {
		t.Fatalf("double load: %v", err)
	}
	c.Unload(p)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = "g"
	r, _ := c.OffsetFetch(ctx, req)
	if r.ErrorCode != errNotCoordinator {
		t.Fatalf("after unload: %d", r.ErrorCode)
	}
}

func TestUnloadAnswersPendingCommits(t *testing.T) {
	h := newHarness(t, nil)
	l := h.load("g")
	l.hold = true
	res := goAsync(func() *kmsg.OffsetCommitResponse { return h.commit("g", -1, "", 8, "t", map[int32]int64{0: 5}) })
	h.waitFor("g", func(s *shard) bool { return len(s.pendingWrites) == 1 })
	h.c.Unload(h.c.PartitionFor("g"))
	if codes := commitCodes(res.wait(t)); codes[0] != errNotCoordinator {
		t.Fatalf("codes %v", codes)
	}
	l.release() // a late completion is ignored
}

func TestOffsetsSurviveRestart(t *testing.T) {
	h := newHarness(t, nil)
	h.load("g")
	h.commit("g", -1, "", 8, "t", map[int32]int64{0: 5, 3: 7})
	h.commit("g", -1, "", 2, "u", map[int32]int64{1: 9})
	h.commit("g", -1, "", 8, "t", map[int32]int64{0: 6})
	h.restart()
	if got := h.fetch("g", "t", 0, 3); !slices.Equal(got, []int64{6, 7}) {
		t.Fatalf("t after restart %v", got)
	}
	if got := h.fetch("g", "u", 1); !slices.Equal(got, []int64{9}) {
		t.Fatalf("u after restart %v", got)
	}
}

func TestOffsetExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.OffsetsRetentionCheckInterval = time.Minute
	})
	h.load("g")
	h.commit("g", -1, "", 8, "t", map[int32]int64{0: 5})
	h.advance(30 * time.Minute)
	h.commit("g", -1, "", 8, "t", map[int32]int64{1: 6})
	h.advance(31 * time.Minute)
	// Partition 0 expired (committed 61m ago), partition 1 not.
	if got := h.fetch("g", "t", 0, 1); !slices.Equal(got, []int64{-1, 6}) {
		t.Fatalf("fetch %v", got)
	}
	h.advance(30 * time.Minute)
	if got := h.fetch("g", "t", 0, 1); !slices.Equal(got, []int64{-1, -1}) {
		t.Fatalf("fetch %v", got)
	}
	if st := h.groupState("g"); st != "none" {
		t.Fatalf("empty group without offsets should be removed, is %s", st)
	}
	h.restart()
	if got := h.fetch("g", "t", 0, 1); !slices.Equal(got, []int64{-1, -1}) {
		t.Fatalf("fetch after restart %v", got)
	}
}

type fakeTopics map[string]struct {
	id    [16]byte
	parts int32
}

func (f fakeTopics) TopicByName(n string) ([16]byte, int32, bool) {
	t, ok := f[n]
	return t.id, t.parts, ok
}

func (f fakeTopics) TopicNames() []string {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	return out
}

func (f fakeTopics) TopicByID(id [16]byte) (string, int32, bool) {
	for n, t := range f {
		if t.id == id {
			return n, t.parts, true
		}
	}
	return "", 0, false
}

func TestOffsetCommitTopicChecksAndIDs(t *testing.T) {
	topics := fakeTopics{"t": {id: [16]byte{1}, parts: 2}}
	h := newHarness(t, func(c *Config) { c.Topics = topics })
	h.load("g")
	r := h.commit("g", -1, "", 8, "t", map[int32]int64{0: 1, 1: 2, 2: 3})
	if codes := commitCodes(r); !slices.Equal(codes, []int16{0, 0, kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("codes %v", codes)
	}
	r = h.commit("g", -1, "", 8, "missing", map[int32]int64{0: 1})
	if codes := commitCodes(r); codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("codes %v", codes)
	}
	// v10 names topics by ID.
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 10
	req.Group = "g"
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: [16]byte{1}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 42, LeaderEpoch: -1}}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}
	cr, err := h.c.OffsetCommit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if codes := commitCodes(cr); !slices.Equal(codes, []int16{0, kerr.UnknownTopicID.Code}) || cr.Topics[0].TopicID != [16]byte{1} {
		t.Fatalf("v10 %+v", cr.Topics)
	}
	if got := h.fetch("g", "t", 1); got[0] != 42 {
		t.Fatalf("fetch %v", got)
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 10
	freq.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: [16]byte{1}, Partitions: []int32{0, 1}}}}}
	fr, err := h.c.OffsetFetch(ctx, freq)
	if err != nil {
		t.Fatal(err)
	}
	ps := fr.Groups[0].Topics[0].Partitions
	if ps[0].Offset != 1 || ps[1].Offset != 42 {
		t.Fatalf("v10 fetch %+v", ps)
	}
}
