package compattests

// Shutdown seen from outside: SIGHUP is a clean shutdown like SIGTERM, even when the log's
// reader is gone (a closed terminal), and shutdown is bounded with a long-poll fetch parked and
// a client that never reads its responses.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shutdownBound is how long sluice may take from SIGTERM to exit with a parked long poll and a
// client that does not read (cmd/sluice: in-flight requests are cut after 5 s, a stalled write
// after 2 s; the other phases take milliseconds on this little data).
const shutdownBound = 10 * time.Second

// produceValues produces values to topic with acks=all and fails the test on any error.
func produceValues(t *testing.T, addr, topic string, values []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consumeValues reads n records of topic's partition 0 from the start.
func consumeValues(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), n, topic)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// TestSIGHUPShutsDownCleanly is the regression test for SIGHUP killing sluice at once with no
// log line and no clean shutdown: it exits 0 after logging every shutdown phase, and its data
// is intact on restart.
func TestSIGHUPShutsDownCleanly(t *testing.T) {
	b := StartBroker(t)
	values := numbered("hup", 200)
	produceValues(t, b.Addr, "hup", values)
	if !b.signalAndWait(syscall.SIGHUP, stopDeadline) {
		t.Fatal("sluice did not exit on SIGHUP")
	}
	if err := b.ExitErr(); err != nil {
		t.Fatalf("exit after SIGHUP: %v", err)
	}
	log := b.Log()
	for _, want := range []string{
		`msg="shutting down" signal=hangup`,
		`phase=listeners`, `phase="in-flight requests"`, `phase=coordinator`, `phase=logs`, `phase=controller`,
		`msg="shutdown complete"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log after SIGHUP lacks %s", want)
		}
	}
	b.Restart()
	if got := consumeValues(t, b.Addr, "hup", len(values)); strings.Join(got, ",") != strings.Join(values, ",") {
		t.Fatalf("after SIGHUP and restart read %d records, want the %d produced", len(got), len(values))
	}
}

// TestSIGHUPWithLogReaderGone: a terminal that closes takes the reader of sluice's log with it;
// SIGHUP then finds stderr a broken pipe. sluice still shuts down cleanly (exit 0, the data
// intact on restart) rather than dying of SIGPIPE at its first log line.
func TestSIGHUPWithLogReaderGone(t *testing.T) {
	b := StartBroker(t)
	first := numbered("before", 50)
	produceValues(t, b.Addr, "hup-pipe", first)
	if !b.Stop() {
		t.Fatal("sluice did not stop on SIGTERM")
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.bin, b.args...)
	cmd.Stderr = w
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "sluice started") {
				close(started)
				return
			}
		}
	}()
	select {
	case <-started:
	case err := <-exited:
		t.Fatalf("sluice exited before starting: %v", err)
	case <-time.After(startDeadline):
		t.Fatal("sluice did not start")
	}
	second := numbered("after", 50)
	produceValues(t, b.Addr, "hup-pipe", second)
	r.Close() // the terminal is gone: every later log line is a write to a broken pipe
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sluice exit after SIGHUP with its log pipe closed: %v", err)
		}
	case <-time.After(stopDeadline):
		t.Fatal("sluice did not exit on SIGHUP")
	}
	b.Restart()
	want := append(first, second...)
	if got := consumeValues(t, b.Addr, "hup-pipe", len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after restart read %d records, want the %d produced", len(got), len(want))
	}
}

// socketQueues returns the send and receive queue bytes of the TCP socket with local port
// local and remote port remote, from /proc/net/tcp (127.0.0.1 is IPv4).
func socketQueues(local, remote int) (tx, rx int64, err error) {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, 0, err
	}
	want := fmt.Sprintf(":%04X", local)
	wantRemote := fmt.Sprintf(":%04X", remote)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], want) || !strings.HasSuffix(f[2], wantRemote) {
			continue
		}
		txs, rxs, ok := strings.Cut(f[4], ":")
		if !ok {
			return 0, 0, fmt.Errorf("bad queue field %q", f[4])
		}
		tx, err1 := strconv.ParseInt(txs, 16, 64)
		rx, err2 := strconv.ParseInt(rxs, 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("bad queue field %q", f[4])
		}
		return tx, rx, nil
	}
	return 0, 0, fmt.Errorf("no socket %d -> %d in /proc/net/tcp", local, remote)
}

func localPort(c net.Conn) int { return c.LocalAddr().(*net.TCPAddr).Port }

// fetchV11 is a Fetch v11 of topic's partition 0 from offset.
func fetchV11(topic string, offset int64, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWaitMs
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 10 << 20
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestShutdownBoundedWithParkedFetchAndNonReader is the regression test for shutdown waiting
// its whole 30 s timeout with a long-poll fetch parked (MaxWait 60 s) and a client that sends
// requests and never reads the answers: sluice exits before shutdownBound, and the parked fetch
// is answered (empty) before its connection closes.
func TestShutdownBoundedWithParkedFetchAndNonReader(t *testing.T) {
	b := StartBroker(t)
	// 4 MiB of records for the non-reader to ask for, and an empty topic to long-poll.
	var bulk []string
	for i := range 8 {
		bulk = append(bulk, fmt.Sprintf("%04d-%s", i, strings.Repeat("x", 512<<10)))
	}
	produceValues(t, b.Addr, "bulk", bulk)
	produceValues(t, b.Addr, "quiet", []string{"only"})

	parked := dialRaw(t, b.Addr)
	parked.SetDeadline(time.Time{})
	if err := writeRequest(parked, fetchV11("quiet", 1, 60000), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the broker read the long poll", func() error {
		if _, rx, err := socketQueues(b.Port, localPort(parked)); err != nil || rx != 0 {
			return fmt.Errorf("%d bytes unread (%v)", rx, err)
		}
		return nil
	})

	nonReader, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nonReader.Close()
	nonReader.(*net.TCPConn).SetReadBuffer(4096)
	for i := range 20 {
		if err := writeRequest(nonReader, fetchV11("bulk", 0, 0), int32(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the broker's writes to the non-reader stalled", func() error {
		if tx, _, err := socketQueues(b.Port, localPort(nonReader)); err != nil || tx < 64<<10 {
			return fmt.Errorf("%d bytes queued to send (%v)", tx, err)
		}
		return nil
	})

	if !b.signalAndWait(syscall.SIGTERM, shutdownBound) {
		t.Fatalf("sluice did not exit within %v of SIGTERM with a parked fetch and a non-reading client", shutdownBound)
	}
	if err := b.ExitErr(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	parked.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(11)
	if err := readResponse(parked, resp, 1); err != nil {
		t.Fatalf("the parked fetch was not answered before its connection closed: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("parked fetch answered with %+v", resp)
	}
	log := b.Log()
	for _, want := range []string{`phase=listeners`, `phase="in-flight requests"`, `phase=coordinator`, `phase=logs`, `phase=controller`} {
		if !strings.Contains(log, want) {
			t.Errorf("shutdown log lacks %s", want)
		}
	}
}
