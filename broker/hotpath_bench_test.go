package broker

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/internal/config"
	"sluice/wire"
)

// benchRecords is one uncompressed batch of about size bytes of 1 KiB records.
func benchRecords(size int) []byte { return benchRecordsOf(size, 1024) }

// benchRecordsOf is one uncompressed batch of about size bytes of records with valueSize-byte
// values.
func benchRecordsOf(size, valueSize int) []byte {
	var recs []batch.Record
	for total := batch.HeaderSize; total < size; total += valueSize + 8 {
		recs = append(recs, batch.Record{Value: bytes.Repeat([]byte{'v'}, valueSize)})
	}
	ts := time.Now().UnixMilli()
	return batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
}

// handleDirect serves req on the broker, as the wire layer would, and returns the response
// (tb.direct without its per-call timeout and cleanup, which would be measured too).
func handleDirect(b testing.TB, tb *testBroker, req kmsg.Request) kmsg.Response {
	return <-tb.serveDirect(context.Background(), b, req)
}

// benchProduceRequest is an acks=1 produce request of records to partition 0 of topic.
func benchProduceRequest(topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 30000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = records // the log patches offsets in place; the CRC does not cover them
	t.Partitions = append(t.Partitions, part)
	req.Topics = append(req.Topics, t)
	return req
}

// produceUntilReady produces req until the new topic's partition is hosted and takes it.
func produceUntilReady(b *testing.B, tb *testBroker, req *kmsg.ProduceRequest) {
	deadline := time.Now().Add(testWait)
	for {
		resp := handleDirect(b, tb, req).(*kmsg.ProduceResponse)
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("produce error %d", code)
		}
		time.Sleep(10 * time.Millisecond) // the broker opens the new partition asynchronously
	}
}

// BenchmarkProduce is the produce path per request of one 16 KiB batch (acks=1, default flush):
// topic and partition lookup, the produce checks, the log's validation (CRC, records), offset
// assignment and the write into the page cache. Bytes/s are record bytes appended.
func BenchmarkProduce(b *testing.B) { benchmarkProduce(b, benchRecords(16<<10)) }

func benchmarkProduce(b *testing.B, records []byte) {
	tb := startTestBroker(b, nil)
	tb.createTopic(b, "bench", 1, nil)
	req := benchProduceRequest("bench", records)
	produceUntilReady(b, tb, req)
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// A client's batch starts at offset 0; the log patched the last append's base offset
		// into these bytes (outside the CRC), which Kafka's validation refuses from a client.
		batch.SetBaseOffset(records, 0)
		resp := handleDirect(b, tb, req).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error %d", code)
		}
	}
}

// BenchmarkProduceSmallRecords is BenchmarkProduce with 100 B records (a 16 KiB batch of
// about 150), the shape of the 100 B loadgen rows: per-record costs dominate. cpu-ns/record is
// the process's CPU time (user+system, getrusage: the handler, the kernel's copy into the page
// cache, GC) per record appended; ÷1000 it is CPU seconds per million records. wall-ns/record
// is the elapsed time, which on a loaded disk is mostly pwrite waiting.
func BenchmarkProduceSmallRecords(b *testing.B) {
	tb := startTestBroker(b, nil)
	tb.createTopic(b, "bench", 1, nil)
	var recs []batch.Record
	for total := batch.HeaderSize; total < 16<<10; total += 100 + 8 {
		recs = append(recs, batch.Record{Value: bytes.Repeat([]byte{'v'}, 100)})
	}
	ts := time.Now().UnixMilli()
	records := batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	req := benchProduceRequest("bench", records)
	produceUntilReady(b, tb, req)
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	cpu0 := processCPU()
	for b.Loop() {
		batch.SetBaseOffset(records, 0) // as benchmarkProduce: a client's batch starts at 0
		resp := handleDirect(b, tb, req).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error %d", code)
		}
		n++
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*len(recs)), "wall-ns/record")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*len(recs)), "cpu-ns/record")
}

// processCPU is the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFetch is the fetch path per request of up to 1 MiB from one partition, from the
// handler to a loopback TCP socket: log lookup, response encoding, and the record bytes sent
// from the segment file with sendfile. Bytes/s are record bytes sent.
func BenchmarkFetch(b *testing.B) {
	tb := startTestBroker(b, nil)
	tb.createTopic(b, "bench", 1, nil)
	const batches = 2048 // 32 MiB, in the page cache
	records := benchRecords(16 << 10)
	produce := benchProduceRequest("bench", records)
	produceUntilReady(b, tb, produce)
	for range batches - 1 {
		batch.SetBaseOffset(records, 0) // as a client sends it (BenchmarkProduce)
		if code := handleDirect(b, tb, produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error %d", code)
		}
	}
	end := tb.Broker.partition("bench", 0).log.LogEndOffset()
	recordsPerBatch := end / batches

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = "bench"
	part := kmsg.NewFetchRequestTopicPartition()
	part.PartitionMaxBytes = 1 << 20
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	var buf []byte
	var sent int64
	b.ReportAllocs()
	b.ResetTimer()
	i := int64(0)
	for b.Loop() {
		req.Topics[0].Partitions[0].FetchOffset = (i * 64 * recordsPerBatch) % (end - 64*recordsPerBatch)
		i++
		resp := handleDirect(b, tb, req)
		spliced, ok := resp.(wire.SplicedResponse)
		if !ok {
			b.Fatalf("fetch response %T is not spliced", resp)
		}
		var splices []wire.Splice
		buf, splices = spliced.AppendSpliced(buf[:0])
		if _, err := nc.Write(buf); err != nil {
			b.Fatal(err)
		}
		for _, s := range splices {
			n, err := s.Send(nc)
			if err != nil {
				b.Fatal(err)
			}
			sent += n
		}
	}
	b.SetBytes(sent / int64(max(b.N, 1)))
}

// BenchmarkMetadataAllTopics is a Metadata request for every topic (v12, as franz-go and the
// Java clients send it) on a node with 20 topics of 500 partitions, handler and encoding: the
// request a client repeats every metadata.max.age.ms, and that tools send on many partitions.
func BenchmarkMetadataAllTopics(b *testing.B) {
	tb := startTestBroker(b, nil)
	const topics, partitions = 20, 500
	for i := range topics {
		tb.createTopic(b, "meta-"+strconv.Itoa(i), partitions, nil)
	}
	// The broker opens new partitions in the background; timed before, the loop would share
	// the CPU with that.
	deadline := time.Now().Add(2 * time.Minute)
	for i := range topics {
		for p := range int32(partitions) {
			for tb.Broker.partition("meta-"+strconv.Itoa(i), p) == nil {
				if time.Now().After(deadline) {
					b.Fatalf("meta-%d/%d not hosted", i, p)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp := handleDirect(b, tb, req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != topics {
			b.Fatalf("%d topics", len(resp.Topics))
		}
		buf = resp.AppendTo(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkValidateProduceRecords is the broker's validation of one 16 KiB batch of 100-byte
// records from a client (CreateTime topic, defaults): framing, CRC, every record. With the log's
// BenchmarkValidateBatchesValidated (package logstore) it is all the produce path spends
// validating a batch.
func BenchmarkValidateProduceRecords(b *testing.B) {
	// The records of logstore's BenchmarkValidateBatches, stamped now.
	recs := make([]batch.Record, 16<<10/110)
	for i := range recs {
		recs[i] = batch.Record{TimestampDelta: int64(i / 8), Value: make([]byte, 100)}
	}
	ts := time.Now().UnixMilli()
	records := batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts + int64(len(recs)-1)/8, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	s := &config.TopicSettings{MaxMessageBytes: 1048588, MessageTimestampType: "CreateTime",
		MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: 3_600_000}
	now := time.Now()
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	for b.Loop() {
		if v := validateProduceRecords(records, 9, s, topicPartition{"bench", 0}, now); v.code != 0 {
			b.Fatalf("code %d", v.code)
		}
	}
}

// BenchmarkFetchWakeup is what a consumer tailing the log adds to end-to-end latency inside
// the broker: a fetch at the log end (MinBytes 1, MaxWait 500 ms, as the Java consumer's
// defaults) is parked, then one 1 KiB record is produced (acks=1); wake-us is the time from
// the produce's response to the parked fetch's response (the purgatory's wake-up, the read
// and the response built), e2e-us from the produce request to the fetch response.
func BenchmarkFetchWakeup(b *testing.B) {
	tb := startTestBroker(b, nil)
	tb.createTopic(b, "bench", 1, nil)
	produce := benchProduceRequest("bench", benchRecords(1100))
	produceUntilReady(b, tb, produce)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxBytes = 50 << 20
	fetch.MinBytes = 1
	fetch.MaxWaitMillis = 500
	fetch.SessionEpoch = -1
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = "bench"
	part := kmsg.NewFetchRequestTopicPartition()
	part.PartitionMaxBytes = 1 << 20
	topic.Partitions = append(topic.Partitions, part)
	fetch.Topics = append(fetch.Topics, topic)
	log := tb.Broker.partition("bench", 0).log
	var wake, e2e []time.Duration
	b.ResetTimer()
	for b.Loop() {
		fetch.Topics[0].Partitions[0].FetchOffset = log.LogEndOffset()
		fetched := tb.serveDirect(context.Background(), b, fetch)
		for tb.Broker.purgatory.Len() == 0 { // parked (the condition, not a sleep)
			runtime.Gosched()
		}
		t0 := time.Now()
		if code := handleDirect(b, tb, produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error %d", code)
		}
		t1 := time.Now()
		<-fetched
		t2 := time.Now()
		wake, e2e = append(wake, t2.Sub(t1)), append(e2e, t2.Sub(t0))
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"wake", wake}, {"e2e", e2e}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Nanoseconds())/1e3, m.name+"-p50-us")
		b.ReportMetric(float64(m.d[len(m.d)*99/100].Nanoseconds())/1e3, m.name+"-p99-us")
	}
}
