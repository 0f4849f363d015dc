package ops

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/wire"
)

type answerAtOnce struct{ resp kmsg.Response }

func (h answerAtOnce) Handle(_ context.Context, _ *wire.Request, respond wire.Respond) {
	respond(h.resp, nil)
}

// BenchmarkWirePipelinedProduce is the request path over loopback (one connection, pipelined
// acks=1 produce requests of 16 KiB answered at once) without and with the request histogram:
// the cost --http-addr adds to every request, compared on the same machine in one run.
func BenchmarkWirePipelinedProduce(b *testing.B) {
	for _, bc := range []struct {
		name    string
		observe func(key, version int16, elapsed time.Duration)
	}{
		{"metrics=off", nil},
		{"metrics=on", newRequestMetricsObserver()},
	} {
		b.Run(bc.name, func(b *testing.B) { benchProduce(b, bc.observe) })
	}
}

func newRequestMetricsObserver() func(key, version int16, elapsed time.Duration) {
	return newRequestMetrics().observe
}

func benchProduce(b *testing.B, observe func(key, version int16, elapsed time.Duration)) {
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = []kmsg.ProduceResponseTopic{{Topic: "bench-topic", Partitions: []kmsg.ProduceResponseTopicPartition{{}}}}
	srv, err := wire.Listen(wire.Config{
		Addr: "127.0.0.1:0",
		Versions: func() []wire.VersionRange {
			return []wire.VersionRange{{Key: 0, Min: 3, Max: 11}, {Key: 18, Min: 0, Max: 4}}
		},
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		ObserveRequest: observe,
	}, answerAtOnce{resp})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	defer srv.StopAccepting()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 30000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "bench-topic"}}
	for p := int32(0); p < 4; p++ {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: make([]byte, 4<<10)})
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	writeErr := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(nc, 256<<10)
		for i := 0; i < b.N; i++ {
			if _, err := bw.Write(frame); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- bw.Flush()
	}()
	br := bufio.NewReaderSize(nc, 64<<10)
	var size [4]byte
	for i := 0; i < b.N; i++ {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := br.Discard(int(binary.BigEndian.Uint32(size[:]))); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-writeErr; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRequestObserve is what --http-addr adds to each request on its own, without the
// loopback and scheduling noise of BenchmarkWirePipelinedProduce: the wire layer's time.Now and
// time.Since around the handler and one histogram observation. Divided by a request's cost
// (BenchmarkProduce in broker/ is one 16 KiB produce request through the handler and the log),
// it bounds the metrics' share of the produce path.
func BenchmarkRequestObserve(b *testing.B) {
	observe := newRequestMetricsObserver()
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		observe(0, 9, time.Since(start))
	}
}
