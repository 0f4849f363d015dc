package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFrameClasses(t *testing.T) {
	for _, tc := range []struct{ size, wantCap int }{
		{100, 100},           // small: exact, not pooled
		{2048, 2048},         // still below the smallest class
		{2049, 4096},         // smallest class
		{4096, 4096},         // exact power of two stays in its class
		{4097, 8192},         // next class
		{1 << 20, 1 << 20},   // 1 MiB
		{1<<20 + 1, 2 << 20}, // just over
		{pooledFrameMax, pooledFrameMax},
	} {
		b := getFrame(tc.size)
		if len(b) != tc.size || cap(b) != tc.wantCap {
			t.Errorf("getFrame(%d): len %d cap %d, want cap %d", tc.size, len(b), cap(b), tc.wantCap)
		}
		putFrame(b) // must not panic, pooled or not
	}
	if c := frameClass(pooledFrameMax + 1); c != -1 {
		t.Fatalf("frame over pooledFrameMax has class %d", c)
	}
	putFrame(make([]byte, 0, 5000)) // not a class size: ignored
}

// TestInFlightBytesBackPressure: the reader starts no frame while the frames it holds reach
// MaxInFlightBytesPerConn; a frame stops counting when the handler releases it or once its
// response is taken by the writer.
func TestInFlightBytesBackPressure(t *testing.T) {
	const frameBytes = 40 << 10
	h := newParkingHandler(10)
	srv := startServer(t, Config{MaxInFlightPerConn: 10, MaxInFlightBytesPerConn: 64 << 10}, h)
	c := dial(t, srv)
	for i := 0; i < 4; i++ {
		c.send(produceWithRecords(frameBytes))
	}
	first, second := h.next(t), h.next(t)
	// 80 KiB held >= 64 KiB: the reader waits rather than read the third frame.
	waitFor(t, "reader waiting on the byte budget", func() bool { return srv.budgetWaits.Load() > 0 })
	select {
	case p := <-h.parked:
		t.Fatalf("request %d read past the byte budget", p.req.CorrelationID)
	default:
	}
	first.req.ReleaseFrame()
	first.req.ReleaseFrame() // twice is harmless
	third := h.next(t)
	// Answering (without a release) frees the bytes too, once the writer takes the response.
	first.answer()
	second.answer()
	fourth := h.next(t)
	third.answer()
	fourth.answer()
	for i := 0; i < 4; i++ {
		c.recv(produceRequest(1))
	}
}

// produceWithRecords is an acks=1 produce request whose one partition carries n bytes of
// records (the wire layer does not look inside them).
func produceWithRecords(n int) *kmsg.ProduceRequest {
	req := produceRequest(1)
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, n)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	return req
}
