package compattests

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the bad-input tests expect.
const (
	errCorruptMessage             = 2
	errUnknownTopicOrPartition    = 3
	errMessageTooLarge            = 10
	errUnsupportedCompressionType = 76
	errUnsupportedVersion         = 35
	errInvalidRecord              = 87
)

// badInputIdleMs is connections.max.idle.ms for the bad-input broker, so a stalled client is
// closed by the broker within the test's time budget.
const badInputIdleMs = 3000

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// recordBatch encodes a valid uncompressed RecordBatch v2 holding values, with a correct CRC.
func recordBatch(values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k" + strconv.Itoa(i)), Value: []byte(v)}
		body := r.AppendTo(nil) // Length 0 encodes as one varint byte
		r.Length = int32(len(body) - 1)
		records = r.AppendTo(records)
	}
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  now,
		MaxTimestamp:    now,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(values)),
		Records:         records,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12)) // length: everything after it
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32c))
	return raw
}

// produceRequest is a Produce v9 (acks=1) of batch to topic's partition 0.
func produceRequest(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceRaw sends req on a fresh connection. It returns the partition's error code, or
// closed=true if the broker closed the connection instead of answering.
func produceRaw(t *testing.T, addr string, req *kmsg.ProduceRequest) (code int16, baseOffset int64, closed bool) {
	t.Helper()
	conn := dialRaw(t, addr)
	resp := kmsg.NewPtrProduceResponse()
	err := roundTrip(conn, req, resp, 7)
	if err != nil {
		if isClosed(err) {
			return 0, 0, true
		}
		t.Fatalf("produce: neither an answer nor a closed connection: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want 1 with 1 partition: %+v", len(resp.Topics), resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset, false
}

// dialRaw opens a raw connection closed in t.Cleanup, with a 20s deadline for everything.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// isClosed reports whether err means the peer closed (or reset) the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// expectClosed waits (up to the connection's deadline) for the broker to close conn. Any bytes
// it sends first are reported: for these inputs Kafka answers nothing and closes.
func expectClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if n > 0 {
		t.Errorf("%s: broker answered %d bytes (% x...) instead of closing", what, n, buf[:min(n, 32)])
		return
	}
	if !isClosed(err) {
		t.Errorf("%s: connection not closed by the broker: %v", what, err)
	}
}

// rawFrame builds a frame with a v1 request header (null client id) and the given body.
func rawFrame(apiKey, version int16, correlationID int32, body []byte) []byte {
	frame := make([]byte, 4, 64+len(body))
	frame = binary.BigEndian.AppendUint16(frame, uint16(apiKey))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(correlationID))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

// wellBehaved produces and consumes with franz-go on its own connections for as long as the
// bad inputs run, recording every error.
type wellBehaved struct {
	producer, consumer         *kgo.Client
	stopProducer, stopConsumer context.CancelFunc
	producerDone, consumerDone chan struct{}
	mu                         struct {
		sync.Mutex
		produced []string // acked keys, in order
		consumed map[string]bool
		errs     []string
	}
}

func startWellBehaved(t *testing.T, addr, topic string) *wellBehaved {
	t.Helper()
	w := &wellBehaved{producerDone: make(chan struct{}), consumerDone: make(chan struct{})}
	w.mu.consumed = map[string]bool{}
	var err error
	if w.producer, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic)); err != nil {
		t.Fatal(err)
	}
	if w.consumer, err = kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	cctx, ccancel := context.WithCancel(context.Background())
	w.stopProducer, w.stopConsumer = pcancel, ccancel
	go func() {
		defer close(w.producerDone)
		for i := 0; pctx.Err() == nil && i < 100000; i++ {
			key := fmt.Sprintf("good-%06d", i)
			ctx, cancel := context.WithTimeout(pctx, 15*time.Second)
			err := w.producer.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("well behaved")}).FirstErr()
			cancel()
			w.mu.Lock()
			if err == nil {
				w.mu.produced = append(w.mu.produced, key)
			} else if pctx.Err() == nil {
				w.mu.errs = append(w.mu.errs, fmt.Sprintf("produce %s: %v", key, err))
			}
			w.mu.Unlock()
		}
	}()
	go func() {
		defer close(w.consumerDone)
		for cctx.Err() == nil {
			fetches := w.consumer.PollFetches(cctx)
			w.mu.Lock()
			fetches.EachError(func(topic string, p int32, err error) {
				if cctx.Err() == nil {
					w.mu.errs = append(w.mu.errs, fmt.Sprintf("fetch %s/%d: %v", topic, p, err))
				}
			})
			fetches.EachRecord(func(r *kgo.Record) { w.mu.consumed[string(r.Key)] = true })
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.stopProducer()
		w.stopConsumer()
		<-w.producerDone
		<-w.consumerDone
		w.producer.Close()
		w.consumer.Close()
	})
	return w
}

// progress returns how many records were acked and consumed so far.
func (w *wellBehaved) progress() (produced, consumed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.mu.produced), len(w.mu.consumed)
}

// unconsumed lists acked keys the consumer has not seen.
func (w *wellBehaved) unconsumed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for _, k := range w.mu.produced {
		if !w.mu.consumed[k] {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestBadInput sends malformed and hostile input on raw sockets. Each gets Kafka's error code
// or a closed connection, while a well-behaved franz-go client keeps producing and consuming on
// its own connections, and the broker process survives.
func TestBadInput(t *testing.T) {
	// Kafka's default connections.max.idle.ms (10 minutes): every close seen here is the
	// broker's answer to the input, not an idle timeout.
	b := StartBroker(t)
	const topic, goodTopic, smallTopic = "bad-input", "bad-input-good", "bad-input-small"
	const validationTopic = "bad-input-validation"
	{
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, tp := range []string{topic, goodTopic, validationTopic} {
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, tp); err != nil {
				t.Fatalf("creating %s: %v", tp, err)
			}
		}
		maxMessageBytes := "1024"
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &maxMessageBytes}, smallTopic); err != nil {
			t.Fatalf("creating %s: %v", smallTopic, err)
		}
		cancel()
		cl.Close()
	}
	good := startWellBehaved(t, b.Addr, goodTopic)
	waitFor(t, 30*time.Second, "well-behaved client produces and consumes", func() error {
		if p, c := good.progress(); p < 5 || c < 5 {
			return fmt.Errorf("%d produced, %d consumed", p, c)
		}
		return nil
	})

	t.Run("ValidBatchControl", func(t *testing.T) {
		// Our hand-built batch must be accepted, or the corruption cases below prove nothing.
		code, base, closed := produceRaw(t, b.Addr, produceRequest(topic, recordBatch("a", "b", "c")))
		if closed || code != 0 {
			t.Fatalf("valid batch: error %d, closed %v", code, closed)
		}
		if base != 0 {
			t.Errorf("valid batch landed at offset %d, want 0", base)
		}
	})

	t.Run("BadCRC", func(t *testing.T) {
		batch := recordBatch("x", "y")
		batch[len(batch)-1] ^= 0xff // flip bits in the last record, under the CRC
		code, _, closed := produceRaw(t, b.Addr, produceRequest(topic, batch))
		if closed || code != errCorruptMessage {
			t.Errorf("bad CRC: error %d, closed %v; want CORRUPT_MESSAGE (%d)", code, closed, errCorruptMessage)
		}
		batch = recordBatch("x", "y")
		batch[17] ^= 0x01 // the stored CRC itself
		code, _, closed = produceRaw(t, b.Addr, produceRequest(topic, batch))
		if closed || code != errCorruptMessage {
			t.Errorf("bad stored CRC: error %d, closed %v; want CORRUPT_MESSAGE (%d)", code, closed, errCorruptMessage)
		}
	})

	t.Run("BadBatchLength", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			patch func([]byte) []byte
		}{
			{"LongerThanData", func(b []byte) []byte {
				binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12+1000))
				return b
			}},
			{"ShorterThanHeader", func(b []byte) []byte {
				binary.BigEndian.PutUint32(b[8:12], 10)
				return b
			}},
			{"Negative", func(b []byte) []byte {
				binary.BigEndian.PutUint32(b[8:12], 0xfffffff0)
				return b
			}},
			{"TruncatedRecords", func(b []byte) []byte {
				b = b[:len(b)-3]
				binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
				binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32c)) // valid CRC, bad records
				return b
			}},
		} {
			code, _, closed := produceRaw(t, b.Addr, produceRequest(topic, tc.patch(recordBatch("one", "two", "three"))))
			t.Logf("%s: error code %d, connection closed %v", tc.name, code, closed)
			if !closed && code != errCorruptMessage && code != errInvalidRecord {
				t.Errorf("%s: error %d; want CORRUPT_MESSAGE (%d), INVALID_RECORD (%d) or a closed connection",
					tc.name, code, errCorruptMessage, errInvalidRecord)
			}
		}
	})

	t.Run("ProduceRequestValidation", func(t *testing.T) {
		// Checks Kafka's ProduceRequest.validateRecords makes before the log sees the batch.
		resign := func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32c))
			return b
		}
		magic1 := recordBatch("m")
		magic1[16] = 1 // magic is outside the CRC
		zstd := recordBatch("z")
		binary.BigEndian.PutUint16(zstd[21:23], 4) // attributes: zstd
		zstdV6 := produceRequest(validationTopic, resign(zstd))
		zstdV6.Version = 6
		// A batch that claims gzip but carries bytes that are not gzip: Kafka's LogValidator
		// decompresses compressed batches to validate their records, so it never stores one.
		garbageGzip := recordBatch("g")
		binary.BigEndian.PutUint16(garbageGzip[21:23], 1)
		countMismatch := recordBatch("c1", "c2")
		binary.BigEndian.PutUint32(countMismatch[57:61], 5) // says 5 records, holds 2
		for _, tc := range []struct {
			name string
			req  *kmsg.ProduceRequest
			want []int16
		}{
			{"MagicV1", produceRequest(validationTopic, magic1), []int16{errInvalidRecord}},
			{"TwoBatchesInOnePartition", produceRequest(validationTopic, append(recordBatch("b1"), recordBatch("b2")...)), []int16{errInvalidRecord}},
			{"ZstdBeforeProduceV7", zstdV6, []int16{errUnsupportedCompressionType}},
			{"RecordCountMismatch", produceRequest(validationTopic, resign(countMismatch)), []int16{errCorruptMessage, errInvalidRecord}},
			// Kafka's code here depends on where decompression fails (CORRUPT_MESSAGE or
			// UNKNOWN_SERVER_ERROR); any refusal will do, storing it will not.
			{"GarbageGzipPayload", produceRequest(validationTopic, resign(garbageGzip)), nil},
		} {
			code, _, closed := produceRaw(t, b.Addr, tc.req)
			if tc.want == nil {
				if !closed && code == 0 {
					t.Errorf("%s: accepted; want an error code or a closed connection", tc.name)
				}
			} else if closed || !slices.Contains(tc.want, code) {
				t.Errorf("%s: error %d, closed %v; want one of %v", tc.name, code, closed, tc.want)
			}
		}
	})

	t.Run("MessageTooLarge", func(t *testing.T) {
		// A batch larger than the topic's max.message.bytes: MESSAGE_TOO_LARGE, as Kafka's
		// LogValidator answers.
		code, _, closed := produceRaw(t, b.Addr, produceRequest(smallTopic, recordBatch(strings.Repeat("z", 4096))))
		if closed || code != errMessageTooLarge {
			t.Errorf("4 KiB batch to a topic with max.message.bytes=1024: error %d, closed %v; want MESSAGE_TOO_LARGE (%d)",
				code, closed, errMessageTooLarge)
		}
	})

	t.Run("UnknownTopic", func(t *testing.T) {
		code, _, closed := produceRaw(t, b.Addr, produceRequest("no-such-topic-raw", recordBatch("a")))
		// A raw Produce never auto-creates (only Metadata does).
		if closed || code != errUnknownTopicOrPartition {
			t.Errorf("produce to a missing topic: error %d, closed %v; want UNKNOWN_TOPIC_OR_PARTITION (%d)",
				code, closed, errUnknownTopicOrPartition)
		}
	})

	t.Run("AcksZeroBadCRC", func(t *testing.T) {
		// With acks=0 there is no response to carry the error, so Kafka closes the connection
		// to tell the producer something went wrong (KafkaApis.handleProduceRequest).
		batch := recordBatch("x")
		batch[len(batch)-1] ^= 0xff
		req := produceRequest(topic, batch)
		req.Acks = 0
		conn := dialRaw(t, b.Addr)
		if err := writeRequest(conn, req, 9); err != nil {
			t.Fatal(err)
		}
		// Requests are answered in order: an answer to this one means the broker kept the
		// connection open after the failed acks=0 produce.
		follow := kmsg.NewPtrApiVersionsRequest()
		writeRequest(conn, follow, 10)
		expectClosed(t, conn, "acks=0 produce with a bad CRC, then ApiVersions")
	})

	t.Run("NothingBadWasAppended", func(t *testing.T) {
		// Only the control batch's three records may be in the logs.
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != 3 {
			t.Errorf("end offset of %s/0: %+v (found %v); want 3", topic, o, ok)
		}
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, smallTopic)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := ends.Lookup(smallTopic, 0); !ok || o.Err != nil || o.Offset != 0 {
			t.Errorf("end offset of %s/0: %+v (found %v); want 0", smallTopic, o, ok)
		}
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, validationTopic)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := ends.Lookup(validationTopic, 0); !ok || o.Err != nil || o.Offset != 0 {
			t.Errorf("end offset of %s/0: %+v (found %v); want 0: batches that Kafka rejects were stored", validationTopic, o, ok)
		}
	})

	t.Run("PipelinedWithoutReading", func(t *testing.T) {
		// Many requests written back to back before any response is read: the broker must
		// apply backpressure (bounded in-flight requests), not drop or reorder, and answer
		// every one in order once the client reads.
		const n = 2000
		conn := dialRaw(t, b.Addr)
		conn.SetDeadline(time.Now().Add(60 * time.Second))
		writeErr := make(chan error, 1)
		go func() {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			var err error
			for i := int32(0); i < n && err == nil; i++ {
				err = writeRequest(conn, req, 1000+i)
			}
			writeErr <- err
		}()
		for i := int32(0); i < n; i++ {
			resp := kmsg.NewPtrMetadataResponse()
			resp.Version = 12
			if err := readResponse(conn, resp, 1000+i); err != nil {
				t.Fatalf("response %d of %d: %v", i, n, err)
			}
		}
		if err := <-writeErr; err != nil {
			t.Fatalf("writing pipelined requests: %v", err)
		}
	})

	t.Run("Garbage", func(t *testing.T) {
		conn := dialRaw(t, b.Addr)
		junk := []byte("this is not a kafka request, just some text\r\n\r\n")
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(junk)))
		conn.Write(append(frame, junk...))
		expectClosed(t, conn, "garbage frame")

		// A known API and version whose body is garbage.
		conn = dialRaw(t, b.Addr)
		conn.Write(rawFrame(0, 9, 1, []byte{0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3}))
		expectClosed(t, conn, "produce with a garbage body")

		// HTTP instead of Kafka.
		conn = dialRaw(t, b.Addr)
		conn.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
		expectClosed(t, conn, "HTTP request")
	})

	t.Run("TruncatedFrame", func(t *testing.T) {
		conn := dialRaw(t, b.Addr)
		frame := kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1)
		conn.Write(frame[:len(frame)-2])
		conn.(*net.TCPConn).CloseWrite()
		expectClosed(t, conn, "frame cut short by EOF")
	})

	t.Run("HugeFrameSize", func(t *testing.T) {
		for _, size := range []uint32{1 << 31, 1<<31 - 1, 0xffffffff, 200 << 20} {
			conn := dialRaw(t, b.Addr)
			conn.Write(binary.BigEndian.AppendUint32(nil, size))
			conn.Write(rawFrame(18, 0, 1, nil)[4:]) // a plausible header after the size
			expectClosed(t, conn, fmt.Sprintf("declared frame size %d", size))
		}
		if rss := processRSS(t, b); rss > 1<<30 {
			t.Errorf("sluice resident memory %d bytes after huge frame sizes", rss)
		}
	})

	t.Run("UnknownApiKey", func(t *testing.T) {
		for _, key := range []int16{9999, 32767, -1} {
			conn := dialRaw(t, b.Addr)
			conn.Write(rawFrame(key, 0, 1, nil))
			expectClosed(t, conn, fmt.Sprintf("api key %d", key))
		}
	})

	t.Run("UnsupportedVersion", func(t *testing.T) {
		// ApiVersions at a version the broker does not know: Kafka answers with a v0 response
		// carrying UNSUPPORTED_VERSION and its supported ranges, so the client can retry.
		conn := dialRaw(t, b.Addr)
		conn.Write(rawFrame(18, 127, 42, nil))
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := readResponse(conn, resp, 42); err != nil {
			t.Fatalf("ApiVersions v127: %v", err)
		}
		if resp.ErrorCode != errUnsupportedVersion {
			t.Errorf("ApiVersions v127: error %d, want UNSUPPORTED_VERSION (%d)", resp.ErrorCode, errUnsupportedVersion)
		}
		hasApiVersions := false
		for _, k := range resp.ApiKeys {
			hasApiVersions = hasApiVersions || k.ApiKey == 18
		}
		if !hasApiVersions {
			t.Errorf("ApiVersions v127 response lists no ApiVersions range: %+v", resp.ApiKeys)
		}

		// Any other API at an unsupported version: Kafka closes the connection.
		conn = dialRaw(t, b.Addr)
		conn.Write(rawFrame(3, 200, 1, nil))
		expectClosed(t, conn, "Metadata v200")
	})

	// The well-behaved client kept working throughout and still does.
	p0, c0 := good.progress()
	waitFor(t, 30*time.Second, "well-behaved client still produces and consumes", func() error {
		if p, c := good.progress(); p < p0+5 || c < c0+5 {
			return fmt.Errorf("%d produced, %d consumed (were %d, %d)", p, c, p0, c0)
		}
		return nil
	})
	good.stopProducer()
	<-good.producerDone
	waitFor(t, 30*time.Second, "consumer reads every acked record", func() error {
		if lost := good.unconsumed(); len(lost) > 0 {
			return fmt.Errorf("%d acked records not consumed, first %v", len(lost), lost[:min(len(lost), 5)])
		}
		return nil
	})
	good.stopConsumer()
	<-good.consumerDone
	produced, consumed := good.progress()
	good.mu.Lock()
	errs := good.mu.errs
	good.mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("well-behaved client saw %d errors, first: %s", len(errs), strings.Join(errs[:min(len(errs), 5)], "; "))
	}
	t.Logf("well-behaved client: %d produced, %d consumed", produced, consumed)
	if !b.Alive() {
		t.Fatal("sluice died during the bad-input tests")
	}
	if strings.Contains(b.Log(), "panic") {
		t.Error("sluice logged a panic")
	}
	if err := probeApiVersions(b.Addr); err != nil {
		t.Fatalf("sluice no longer answers ApiVersions: %v", err)
	}
}

// TestStalledClient: a client that sends half a frame and then nothing is disconnected by the
// broker once connections.max.idle.ms passes, and does not hold up other clients meanwhile.
func TestStalledClient(t *testing.T) {
	b := StartBroker(t, "connections.max.idle.ms="+strconv.Itoa(badInputIdleMs))
	stalled := dialRaw(t, b.Addr)
	stalledAt := time.Now()
	frame := rawFrame(3, 12, 1, make([]byte, 100))
	if _, err := stalled.Write(frame[:len(frame)/2]); err != nil {
		t.Fatal(err)
	}
	// Others are served while it stalls.
	for i := range 20 {
		if err := probeApiVersions(b.Addr); err != nil {
			t.Fatalf("ApiVersions %d while a client stalls: %v", i, err)
		}
	}
	stalled.SetDeadline(stalledAt.Add(badInputIdleMs*time.Millisecond + 20*time.Second))
	expectClosed(t, stalled, "half a frame, then silence")
	t.Logf("stalled connection closed after %v (connections.max.idle.ms=%d)", time.Since(stalledAt).Round(time.Millisecond), badInputIdleMs)
	if !b.Alive() {
		t.Fatal("sluice died")
	}
}

// processRSS is the broker process's resident set size in bytes, from /proc.
func processRSS(t *testing.T, b *Broker) int64 {
	t.Helper()
	pid := b.Pid()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}
