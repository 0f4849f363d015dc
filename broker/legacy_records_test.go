package broker

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// legacyMsg is a test message: encoded with a correct CRC by encode.
type legacyMsg struct {
	offset     int64
	magic      byte
	attrs      byte
	ts         int64
	key, value []byte
}

func (m legacyMsg) encode(dst []byte) []byte {
	return appendLegacyMessage(dst, m.offset, m.magic, m.attrs, m.ts, m.key, m.value)
}

func messageSet(msgs ...legacyMsg) []byte {
	var b []byte
	for _, m := range msgs {
		b = m.encode(b)
	}
	return b
}

// wrapper compresses inner (a message set) into one message of magic and codec at offset.
func wrapper(t *testing.T, magic byte, codec int, offset, ts int64, inner []byte) []byte {
	t.Helper()
	value, err := compress.Compress(codec, nil, inner, 0)
	if err != nil {
		t.Fatal(err)
	}
	return legacyMsg{offset: offset, magic: magic, attrs: byte(codec), ts: ts, value: value}.encode(nil)
}

// produceLegacy sends records to topic/0 at produce version v and returns the partition's answer.
func produceLegacy(t *testing.T, tb *testBroker, v int16, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.direct(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// consumeAll reads every record of topic/0 with franz-go (Fetch v4+, magic 2).
func consumeAll(t *testing.T, tb *testBroker, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// TestProduceLegacyMessageSetsAreStored: Produce v0–v2 with magic 0 and 1 messages, plain and
// in gzip, snappy and lz4 wrappers, used to be refused with UNSUPPORTED_VERSION. They must be
// stored as v2 batches at consecutive offsets, with their keys, values and (magic 1) create
// times, and read back by a current consumer.
func TestProduceLegacyMessageSetsAreStored(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "legacy", 1, nil)
	ts := time.Now().UnixMilli()
	k := []byte("k")
	sets := []struct {
		version int16
		records []byte
		values  []string
		hasTime bool
	}{
		{0, messageSet(legacyMsg{offset: 0, magic: 0, key: k, value: []byte("a")}, legacyMsg{offset: 1, magic: 0, value: []byte("b")}), []string{"a", "b"}, false},
		{1, wrapper(t, 0, compress.Gzip, 1, 0, messageSet(legacyMsg{offset: 0, magic: 0, value: []byte("c")}, legacyMsg{offset: 1, magic: 0, key: k, value: []byte("d")})), []string{"c", "d"}, false},
		{2, messageSet(legacyMsg{magic: 1, ts: ts, key: k, value: []byte("e")}), []string{"e"}, true},
		{2, wrapper(t, 1, compress.Snappy, 1, ts, messageSet(legacyMsg{offset: 0, magic: 1, ts: ts, value: []byte("f")}, legacyMsg{offset: 1, magic: 1, ts: ts, value: []byte("g")})), []string{"f", "g"}, true},
		{2, wrapper(t, 1, compress.LZ4, 0, ts, messageSet(legacyMsg{offset: 0, magic: 1, ts: ts, value: []byte("h")})), []string{"h"}, true},
	}
	var want []string
	var wantTime []bool
	next := int64(0)
	for i, s := range sets {
		p := produceLegacy(t, tb, s.version, "legacy", s.records)
		if p.ErrorCode != 0 || p.BaseOffset != next {
			t.Fatalf("set %d (v%d): error %v, base offset %d; want none at %d", i, s.version, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, next)
		}
		next += int64(len(s.values))
		want = append(want, s.values...)
		for range s.values {
			wantTime = append(wantTime, s.hasTime)
		}
	}
	got := consumeAll(t, tb, "legacy", len(want))
	for i, r := range got {
		if string(r.Value) != want[i] || r.Offset != int64(i) {
			t.Errorf("record %d: offset %d value %q; want offset %d value %q", i, r.Offset, r.Value, i, want[i])
		}
		if wantTime[i] && r.Timestamp.UnixMilli() != ts {
			t.Errorf("record %d: timestamp %d, want the producer's %d", i, r.Timestamp.UnixMilli(), ts)
		}
		if !wantTime[i] && r.Timestamp.UnixMilli() != -1 {
			t.Errorf("record %d (magic 0): timestamp %d, want none (-1)", i, r.Timestamp.UnixMilli())
		}
	}
	if string(got[0].Key) != "k" || got[1].Key != nil {
		t.Errorf("keys: %q %v; want \"k\" and null", got[0].Key, got[1].Key)
	}
}

// TestProduceLegacyBadMessageSets: malformed magic 0/1 input gets Kafka's codes and nothing of
// it is stored.
func TestProduceLegacyBadMessageSets(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "bad", 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("1000")})
	good := messageSet(legacyMsg{magic: 1, ts: 1, value: []byte("ok")})
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	nested := wrapper(t, 1, compress.Gzip, 0, 1, wrapper(t, 1, compress.Gzip, 0, 1, good))
	belowInner := wrapper(t, 1, compress.Gzip, 1, 1, messageSet(
		legacyMsg{offset: 0, magic: 1, value: []byte("a")}, legacyMsg{offset: 5, magic: 1, value: []byte("b")}))
	mixedMagic := append(append([]byte(nil), good...), legacyMsg{magic: 0, value: []byte("x")}.encode(nil)...)
	innerMagic := wrapper(t, 1, compress.Gzip, 0, 1, legacyMsg{magic: 0, value: []byte("x")}.encode(nil))
	nullWrapper := legacyMsg{magic: 1, attrs: byte(compress.Gzip)}.encode(nil)
	emptyWrapper := wrapper(t, 1, compress.Gzip, 0, 1, nil)
	corruptInner := func() []byte {
		inner := append([]byte(nil), good...)
		inner[len(inner)-1] ^= 0xff
		return wrapper(t, 1, compress.Gzip, 0, 1, inner)
	}()
	badCodecData := legacyMsg{magic: 1, attrs: byte(compress.Gzip), value: []byte("not gzip")}.encode(nil)
	zstd := legacyMsg{magic: 1, attrs: byte(compress.Zstd), value: []byte("x")}.encode(nil)
	large := messageSet(legacyMsg{magic: 1, value: make([]byte, 1000)})
	for _, c := range []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"corrupt CRC", corrupt, kerr.CorruptMessage},
		{"truncated", good[:len(good)-3], kerr.CorruptMessage},
		{"truncated size field", good[:10], kerr.CorruptMessage},
		{"nested compression", nested, kerr.InvalidRecord},
		{"wrapper offset below its last inner offset", belowInner, kerr.InvalidRecord},
		{"mixed magic", mixedMagic, kerr.InvalidRecord},
		{"inner magic differs from wrapper", innerMagic, kerr.InvalidRecord},
		{"wrapper with null value", nullWrapper, kerr.InvalidRecord},
		{"wrapper with no inner messages", emptyWrapper, kerr.InvalidRecord},
		{"corrupt inner CRC", corruptInner, kerr.CorruptMessage},
		{"undecodable wrapper", badCodecData, kerr.CorruptMessage},
		{"zstd wrapper", zstd, kerr.UnsupportedCompressionType},
		{"message over max.message.bytes", large, kerr.MessageTooLarge},
	} {
		p := produceLegacy(t, tb, 2, "bad", c.records)
		if p.ErrorCode != c.want.Code {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(p.ErrorCode), c.want)
		}
	}
	if p := produceLegacy(t, tb, 2, "bad", good); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("good set after the refusals: %v at %d, want stored at offset 0 (nothing stored before)", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// TestConvertMessageSetOutOfOrderInnerOffsets: Kafka's LogValidator reassigns out-of-order
// magic 1 inner offsets rather than refusing them (they only prevent its in-place
// assignment); sluice keeps the records in message order.
func TestConvertMessageSetOutOfOrderInnerOffsets(t *testing.T) {
	set := wrapper(t, 1, compress.Gzip, 2, 7, messageSet(
		legacyMsg{offset: 2, magic: 1, ts: 7, value: []byte("a")}, legacyMsg{offset: 0, magic: 1, ts: 7, value: []byte("b")}))
	b, err := convertMessageSet(set, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.Check(b)
	if err != nil || h.RecordCount != 2 || h.Compression() != compress.Gzip || h.MaxTimestamp != 7 {
		t.Fatalf("batch %+v, %v; want 2 gzip records at time 7", h, err)
	}
}

// legacyCRCOK reports whether the CRC of the legacy message at the start of b matches.
func legacyCRCOK(b []byte) bool {
	end := 12 + int(binary.BigEndian.Uint32(b[8:]))
	return binary.BigEndian.Uint32(b[12:]) == crc32.ChecksumIEEE(b[16:end])
}

// produceV2 appends one v2 batch to topic/0 with Produce v9.
func produceV2(t *testing.T, tb *testBroker, topic string, records []byte) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if p := tb.direct(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}

// fetchLegacy fetches topic/0 from offset at version v, and returns the partition as a client
// decodes it from the encoded response.
func fetchLegacy(t *testing.T, tb *testBroker, v int16, topic string, offset int64, maxBytes int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = v, -1, maxBytes, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.direct(t, req)
	enc := resp.(interface{ AppendTo([]byte) []byte }).AppendTo(nil)
	got := kmsg.NewPtrFetchResponse()
	got.Version = v
	if err := got.ReadFrom(enc); err != nil {
		t.Fatalf("fetch v%d response does not decode: %v", v, err)
	}
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch v%d: %d topics", v, len(got.Topics))
	}
	return got.Topics[0].Partitions[0]
}

// decodedMessage is a legacy message as an old consumer sees it, wrappers opened.
type decodedMessage struct {
	offset  int64
	magic   byte
	logTime bool
	ts      int64
	key     []byte
	value   string
}

// decodeLegacySet opens a fetched message set as an old consumer does (Kafka's legacy deep
// iteration), checking every CRC.
func decodeLegacySet(t *testing.T, b []byte) []decodedMessage {
	t.Helper()
	var out []decodedMessage
	for len(b) > 0 {
		m, rest, err := parseLegacyMessage(b)
		if err != nil {
			t.Fatalf("fetched message set does not decode: %v", err)
		}
		if !legacyCRCOK(b) {
			t.Fatal("bad CRC")
		}
		b = rest
		if m.codec() == 0 {
			out = append(out, decodedMessage{m.offset, m.magic, m.attrs&legacyAttrLogAppTs != 0, m.timestamp, m.key, string(m.value)})
			continue
		}
		inner, err := compress.Decompress(m.codec(), m.value, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		msgs := decodeLegacySet(t, inner)
		base := int64(0)
		if m.magic == 1 {
			base = m.offset - msgs[len(msgs)-1].offset
		}
		for i := range msgs {
			msgs[i].offset += base
			if m.magic != msgs[i].magic {
				t.Fatalf("inner magic %d in wrapper of magic %d", msgs[i].magic, m.magic)
			}
		}
		out = append(out, msgs...)
	}
	return out
}

// TestFetchLegacyVersionsDownConvert: Fetch v0–v3 used to be unadvertised, so pre-0.11
// consumers could not read at all. Each version must get the records as messages of the magic
// it reads (v0–v1: 0, v2–v3: 1) at their offsets, with create times from magic 1, without the
// record headers, plain and compressed batches alike, and from a fetch offset inside a batch.
func TestFetchLegacyVersionsDownConvert(t *testing.T) {
	tb := startTestBroker(t, nil)
	tb.createTopic(t, "old", 1, nil)
	ts := time.Now().UnixMilli()
	produceV2(t, tb, "old", batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts + 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Key: []byte("k"), Value: []byte("a")}, {TimestampDelta: 1, Value: []byte("b")}}))
	produceV2(t, tb, "old", compressedBatch(t, compress.Gzip, false, "c", "d", "e"))
	hr := &kgo.Record{Topic: "old", Value: []byte("f"), Timestamp: time.UnixMilli(ts), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	if err := tb.Client.ProduceSync(testContext(t), hr).FirstErr(); err != nil {
		t.Fatal(err)
	}
	values := []string{"a", "b", "c", "d", "e", "f"}
	for v := int16(0); v <= 3; v++ {
		p := fetchLegacy(t, tb, v, "old", 0, 1<<20)
		if p.ErrorCode != 0 || p.HighWatermark != 6 {
			t.Fatalf("v%d: %v, HW %d", v, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
		}
		msgs := decodeLegacySet(t, p.RecordBatches)
		if len(msgs) != len(values) {
			t.Fatalf("v%d: %d messages, want %d", v, len(msgs), len(values))
		}
		wantMagic := fetchMagic(v)
		for i, m := range msgs {
			if m.offset != int64(i) || m.value != values[i] || m.magic != wantMagic {
				t.Errorf("v%d message %d: offset %d magic %d value %q; want %d, %d, %q", v, i, m.offset, m.magic, m.value, i, wantMagic, values[i])
			}
		}
		if string(msgs[0].key) != "k" || msgs[1].key != nil {
			t.Errorf("v%d keys %q %v", v, msgs[0].key, msgs[1].key)
		}
		if wantMagic == 1 && (msgs[0].ts != ts || msgs[1].ts != ts+1 || msgs[5].ts != ts) {
			t.Errorf("v%d timestamps %d %d %d; want %d %d %d", v, msgs[0].ts, msgs[1].ts, msgs[5].ts, ts, ts+1, ts)
		}
		// From inside the first (uncompressed) batch: the records before the offset are not sent.
		if msgs := decodeLegacySet(t, fetchLegacy(t, tb, v, "old", 1, 1<<20).RecordBatches); len(msgs) == 0 || msgs[0].offset != 1 {
			t.Errorf("v%d from offset 1: first message %+v", v, msgs)
		}
	}
}

// TestDownConvertIsBoundedByWhatWasRead: magic 0/1 messages are larger than v2 records, so a
// converted fetch is cut, at a whole message, at the size of what was read (Kafka's
// LazyDownConversionRecords), and the next fetch from where it stopped continues the batch.
// Control batches and zstd are not sent to old consumers.
func TestDownConvertIsBoundedByWhatWasRead(t *testing.T) {
	var recs []batch.Record
	for range 100 {
		recs = append(recs, batch.Record{Value: []byte("v")})
	}
	data := batch.Build(batch.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	out, code := downConvertBatches(data, 1, 0, 1<<20)
	msgs := decodeLegacySet(t, out)
	if code != 0 || len(out) > len(data) || len(msgs) == 0 || len(msgs) == 100 {
		t.Fatalf("converted %d bytes (%d messages) of a %d-byte read; want whole messages within it", len(out), len(msgs), len(data))
	}
	next := int64(len(msgs))
	more, _ := downConvertBatches(data, 1, next, 1<<20)
	if m := decodeLegacySet(t, more); m[0].offset != next {
		t.Fatalf("fetch from %d starts at %d", next, m[0].offset)
	}
	// One record larger after conversion than the whole read: still sent whole.
	one := batch.Build(batch.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs[:1])
	if out, _ := downConvertBatches(one, 1, 0, 1<<20); len(decodeLegacySet(t, out)) != 1 {
		t.Fatal("a single record was not sent")
	}
	control := batch.Build(batch.Header{Attributes: batch.AttrControl, ProducerID: 1, BaseSequence: -1}, recs[:1])
	if out, code := downConvertBatches(control, 1, 0, 1<<20); code != 0 || len(out) != 0 {
		t.Fatalf("control batch: %d bytes, code %d; want none", len(out), code)
	}
	if _, code := downConvertBatches(compressedBatch(t, compress.Zstd, false, "z"), 0, 0, 1<<20); code != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("zstd: code %d, want UNSUPPORTED_COMPRESSION_TYPE", code)
	}
}

// TestLZ4Magic0Checksum: magic 0 lz4 wrappers carry Kafka's pre-0.10 header checksum (over
// the frame magic too), which the lz4 decoder refuses. A produced one used to be
// CORRUPT_MESSAGE; it must be accepted, and a magic 0 fetch must get the broken checksum back.
func TestLZ4Magic0Checksum(t *testing.T) {
	if got := byte(xxh32([]byte{0x60, 0x40}) >> 8); got != 0x82 {
		t.Fatalf("xxh32 descriptor checksum %#x, want Kafka's 0x82", got)
	}
	inner := messageSet(legacyMsg{magic: 0, value: []byte("a")})
	frame, err := compress.Compress(compress.LZ4, nil, inner, 0)
	if err != nil {
		t.Fatal(err)
	}
	broken := fixLZ4Checksum(frame, true)
	if broken[6] == frame[6] {
		t.Fatal("broken checksum equals the proper one")
	}
	set := legacyMsg{magic: 0, attrs: byte(compress.LZ4), value: broken}.encode(nil)
	b, err := convertMessageSet(set, 1<<20, 1<<20)
	if err != nil {
		t.Fatalf("magic 0 lz4 with the broken checksum: %v", err)
	}
	out, code := downConvertBatches(b, 0, 0, 1<<20)
	m, _, err := parseLegacyMessage(out)
	if code != 0 || err != nil || m.codec() != compress.LZ4 || m.value[6] != broken[6] {
		t.Fatalf("down-converted magic 0 lz4: code %d, %v, codec %d; want lz4 with the broken checksum", code, err, m.codec())
	}
}
