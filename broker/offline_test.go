package broker

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/controller"
	"sluice/internal/config"
	"sluice/logstore"
	"sluice/wire"
)

// startTestBrokerFS is startTestBroker with the partition logs on fs.
func startTestBrokerFS(t *testing.T, fs logstore.FS) *testBroker {
	t.Helper()
	return startTestBrokerMeta(t, fs, nil)
}

// startTestBrokerMeta is startTestBrokerFS with the broker's Metadata wrap(controller) (the
// controller itself when wrap is nil).
func startTestBrokerMeta(t *testing.T, fs logstore.FS, wrap func(*controller.Controller) Metadata) *testBroker {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	h := &lateHandler{}
	srv, err := wire.Listen(wire.Config{Addr: "127.0.0.1:0", ListenerName: "PLAINTEXT", Versions: Versions, Logger: logger}, h)
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	static, err := config.ParseBroker(map[string]string{"node.id": "1", "log.dirs": filepath.Join(t.TempDir(), "data"), "listeners": "PLAINTEXT://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	logDir := static.LogDirs[0]
	ctrl, err := controller.Start(controller.Config{NodeID: 1, Dir: filepath.Join(logDir, "__cluster_metadata-0"),
		Endpoints: []controller.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: int32(port)}}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctrl.Close() })
	var meta Metadata = ctrl
	if wrap != nil {
		meta = wrap(ctrl)
	}
	b, err := New(Config{Static: static, LogDir: logDir, Logger: logger, FS: fs}, meta)
	if err != nil {
		t.Fatal(err)
	}
	h.b.Store(b)
	t.Cleanup(func() {
		if b := h.b.Load(); b != nil {
			_ = b.Close()
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &testBroker{Addr: addr, Dir: logDir, Static: static, Ctrl: ctrl, Broker: b, Client: cl, Admin: kadm.NewClient(cl), handler: h}
}

func produceDirect(t *testing.T, tb *testBroker, topic string, value string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testBatch(value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.direct(t, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// testBatch is a one-record v2 batch, encoded by franz-go's kmsg with its CRC.
func testBatch(value string) []byte {
	r := kmsg.Record{Value: []byte(value)}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1)
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: 1, Records: r.AppendTo(nil)}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestPartitionWriteErrorGoesOfflineAndRecovers: an EIO on a partition's writes used to fail it
// for good behind NOT_LEADER_OR_FOLLOWER while Metadata showed it healthy. It must answer
// KAFKA_STORAGE_ERROR, be offline in Metadata and DescribeLogDirs, and serve again by itself
// once writes succeed, with every acknowledged record readable.
func TestPartitionWriteErrorGoesOfflineAndRecovers(t *testing.T) {
	efs := logstore.NewErrorFS(nil)
	efs.SetPartialWrites(true)
	tb := startTestBrokerFS(t, efs)
	tb.createTopic(t, "eio", 1, nil)
	tb.produce(t, "eio", 0, 20)

	efs.FailNow(logstore.OpWrite, logstore.ErrIO)
	if code := produceDirect(t, tb, "eio", "lost"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce after EIO: code %d, want KAFKA_STORAGE_ERROR", code)
	}
	if code := produceDirect(t, tb, "eio", "lost-again"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("second produce: code %d, want KAFKA_STORAGE_ERROR", code)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("eio")
	mreq.Topics = append(mreq.Topics, mt)
	mp := tb.direct(t, mreq).(*kmsg.MetadataResponse).Topics[0].Partitions[0]
	if mp.Leader != -1 || len(mp.OfflineReplicas) != 1 || mp.OfflineReplicas[0] != 1 || mp.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("metadata of the failed partition: leader %d, offline %v, error %d", mp.Leader, mp.OfflineReplicas, mp.ErrorCode)
	}
	dreq := kmsg.NewPtrDescribeLogDirsRequest()
	dreq.Version = 4
	if d := tb.direct(t, dreq).(*kmsg.DescribeLogDirsResponse).Dirs[0]; d.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("DescribeLogDirs error %d, want KAFKA_STORAGE_ERROR", d.ErrorCode)
	}

	efs.Heal()
	deadline := time.Now().Add(testWait)
	for produceDirect(t, tb, "eio", "after") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("partition did not serve again after writes succeeded")
		}
		select {
		case <-tb.Broker.offline.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if mp := tb.direct(t, mreq).(*kmsg.MetadataResponse).Topics[0].Partitions[0]; mp.Leader != 1 || len(mp.OfflineReplicas) != 0 {
		t.Fatalf("metadata after recovery: leader %d, offline %v", mp.Leader, mp.OfflineReplicas)
	}
	// Every acknowledged record is there, in order.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"eio": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	var values []string
	for len(values) < 21 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v", values)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	for i := range 20 {
		if values[i] != "v"+strconv.Itoa(i) {
			t.Fatalf("record %d is %q, want v%d (all: %v)", i, values[i], i, values)
		}
	}
	if last := values[len(values)-1]; last != "after" && last != "lost" {
		t.Fatalf("last record %q", last)
	}
}

// dirReportingMetadata is a controller as a heartbeating broker's Metadata: it records every
// SetOfflineLogDirs the broker makes (cluster.Link sends them in its heartbeats).
type dirReportingMetadata struct {
	*controller.Controller
	reports chan [][16]byte
	// unreachable: the controller never accepts a heartbeat (ReportedOfflineLogDirs stays
	// empty).
	unreachable bool
	mu          sync.Mutex
	last        [][16]byte
}

func (m *dirReportingMetadata) SetOfflineLogDirs(dirs [][16]byte) {
	m.mu.Lock()
	m.last = dirs
	m.mu.Unlock()
	select {
	case m.reports <- dirs:
	default:
	}
}

func (m *dirReportingMetadata) ReportedOfflineLogDirs() [][16]byte {
	if m.unreachable {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// TestLogDirFailureTimeout: a failed log directory the controller does not hear of within
// log.dir.failure.timeout.ms asks the process to shut down (Config.OnFatal), as Kafka's
// broker does; one the controller heard of does not.
func TestLogDirFailureTimeout(t *testing.T) {
	for _, reachable := range []bool{true, false} {
		efs := logstore.NewErrorFS(nil)
		meta := &dirReportingMetadata{reports: make(chan [][16]byte, 64), unreachable: !reachable}
		tb := startTestBrokerMeta(t, efs, func(c *controller.Controller) Metadata {
			meta.Controller = c
			return meta
		})
		static, err := config.ParseBroker(map[string]string{"node.id": "1", "log.dirs": tb.Dir, "listeners": "PLAINTEXT://" + tb.Addr,
			"log.dir.failure.timeout.ms": "50"})
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.Broker.Close(); err != nil {
			t.Fatal(err)
		}
		tb.handler.b.Store(nil)
		fatal := make(chan error, 1)
		b, err := New(Config{Static: static, LogDir: tb.Dir, Logger: tb.Broker.logger, FS: efs,
			OnFatal: func(err error) { fatal <- err }}, meta)
		if err != nil {
			t.Fatal(err)
		}
		tb.Broker, tb.Static = b, static
		tb.handler.b.Store(b)
		tb.createTopic(t, "eio", 1, nil)
		tb.produce(t, "eio", 0, 5)
		efs.FailNow(logstore.OpWrite, logstore.ErrIO)
		if code := produceDirect(t, tb, "eio", "lost"); code != kerr.KafkaStorageError.Code {
			t.Fatalf("produce after EIO: code %d, want KAFKA_STORAGE_ERROR", code)
		}
		if !reachable {
			select {
			case err := <-fatal:
				if !strings.Contains(err.Error(), "log.dir.failure.timeout.ms") {
					t.Fatalf("OnFatal: %v", err)
				}
			case <-time.After(testWait):
				t.Fatal("an unreported failed log directory did not shut the broker down")
			}
			continue
		}
		// Reported: the check runs once and does nothing.
		deadline := time.Now().Add(testWait)
		for b.offline.reportWatch.Load() {
			if time.Now().After(deadline) {
				t.Fatal("the log.dir.failure.timeout.ms check never ran")
			}
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-fatal:
			t.Fatalf("a failed log directory the controller heard of shut the broker down: %v", err)
		default:
		}
	}
}

// TestStorageFailureReportsLogDirOffline: when a partition's log fails on a write (EIO), the
// broker reports its log directory offline to the controller (what its heartbeats send as
// OfflineLogDirs, so the controller moves its leadership to other in-sync replicas), and once
// the log is reopened it reports the directory online again. Before, the controller never
// heard of the failure and the partition kept a leader that refused every request.
func TestStorageFailureReportsLogDirOffline(t *testing.T) {
	efs := logstore.NewErrorFS(nil)
	meta := &dirReportingMetadata{reports: make(chan [][16]byte, 64)}
	tb := startTestBrokerMeta(t, efs, func(c *controller.Controller) Metadata {
		meta.Controller = c
		return meta
	})
	tb.createTopic(t, "eio", 1, nil)
	tb.produce(t, "eio", 0, 5)
	next := func(what string) [][16]byte {
		t.Helper()
		select {
		case d := <-meta.reports:
			return d
		case <-time.After(testWait):
			t.Fatalf("no report: %s", what)
			return nil
		}
	}
	efs.FailNow(logstore.OpWrite, logstore.ErrIO)
	if code := produceDirect(t, tb, "eio", "lost"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce after EIO: code %d, want KAFKA_STORAGE_ERROR", code)
	}
	if d := next("after the write failed"); len(d) != 1 {
		t.Fatalf("after the write failed the broker reported offline log directories %v, want its one directory", d)
	}
	efs.Heal()
	for {
		if d := next("after writes succeed again"); len(d) == 0 {
			break
		}
	}
	if code := produceDirect(t, tb, "eio", "after"); code != 0 {
		t.Fatalf("produce after recovery: code %d", code)
	}
}
