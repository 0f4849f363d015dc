package broker

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/wire"
)

// benchRecords is one uncompressed batch of about size bytes of 1 KiB records.
func benchRecords(size int) []byte {
	var recs []batch.Record
	for total := batch.HeaderSize; total < size; total += 1024 + 8 {
		recs = append(recs, batch.Record{Value: bytes.Repeat([]byte{'v'}, 1024)})
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
func BenchmarkProduce(b *testing.B) {
	tb := startTestBroker(b, nil)
	tb.createTopic(b, "bench", 1, nil)
	records := benchRecords(16 << 10)
	req := benchProduceRequest("bench", records)
	produceUntilReady(b, tb, req)
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp := handleDirect(b, tb, req).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce error %d", code)
		}
	}
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
		handleDirect(b, tb, produce)
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
