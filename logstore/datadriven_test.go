package logstore

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"sluice/internal/batch"
)

// ddEnv is the state of one datadriven script: a log on a MemFS with a manual clock.
type ddEnv struct {
	fs    *MemFS
	clock time.Time
	cfg   Config
	log   *Log
}

const ddDir = "/data/t-0"

func (e *ddEnv) open(t testing.TB) string {
	l, err := Open(ddDir, e.cfg, Options{FS: e.fs, Now: func() time.Time { return e.clock }, Logger: quietLogger})
	if err != nil {
		return fmt.Sprintf("open error: %v", err)
	}
	e.log = l
	return e.state()
}

func (e *ddEnv) state() string {
	l := e.log
	var b strings.Builder
	l.mu.RLock()
	fmt.Fprintf(&b, "log [%d, %d) segments:", l.mu.logStart, l.mu.logEnd)
	for _, s := range l.mu.segments {
		s.ensureIndexes()
		fmt.Fprintf(&b, " %d+%dB..%d", s.baseOffset, s.size, s.nextOffset)
		if s.index.len() > 0 || s.timeIndex.len() > 0 {
			fmt.Fprintf(&b, "[ix%d ti%d]", s.index.len(), s.timeIndex.len())
		}
	}
	fmt.Fprintf(&b, "\nepochs:")
	for _, ep := range l.mu.epochs.entries {
		fmt.Fprintf(&b, " %d@%d", ep.Epoch, ep.StartOffset)
	}
	l.mu.RUnlock()
	b.WriteString("\n")
	return b.String()
}

// mkBatch builds an uncompressed batch of n records; timestamps ts, ts+1, ...
func mkBatch(n int, ts int64, pid int64, pepoch int16, seq int32) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{TimestampDelta: int64(i), Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	if pid < 0 {
		pepoch, seq = -1, -1
	}
	return batch.Build(batch.Header{BaseTimestamp: ts, MaxTimestamp: ts + int64(n) - 1, ProducerID: pid, ProducerEpoch: pepoch, BaseSequence: seq}, recs)
}

func errName(err error) string {
	for _, e := range []error{ErrCorruptBatch, ErrInvalidRecord, ErrUnsupportedMagic, ErrOffsetOutOfRange,
		ErrOutOfOrderSequence, ErrInvalidProducerEpoch, ErrInvalidTimestamp, ErrRecordListTooLarge,
		ErrUnexpectedAppendOffset, ErrInvalidTxnState, ErrTransactionCoordinatorFenced, ErrClosed} {
		if errors.Is(err, e) {
			return "error: " + e.Error()
		}
	}
	return "error: " + err.Error()
}

func TestDatadriven(t *testing.T) {
	datadriven.Walk(t, "testdata/log", func(t *testing.T, path string) {
		env := &ddEnv{fs: NewMemFS(), clock: time.UnixMilli(1_000_000)}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return env.run(t, td)
		})
		if env.log != nil {
			env.log.Close()
		}
	})
}

func (e *ddEnv) run(t *testing.T, td *datadriven.TestData) string {
	intArg := func(key string, def int64) int64 {
		if td.HasArg(key) {
			var v int64
			td.ScanArgs(t, key, &v)
			return v
		}
		return def
	}
	// A roll's background work (the rolled segment's fsync, the producer snapshot that makes
	// the new segment's entry durable) finishes before each command, so what a command sees
	// (files, a crash's survivors) does not depend on goroutine timing; a crash before it is
	// TestCrashBetweenRollAndSnapshot's case.
	if e.log != nil {
		e.log.waitRollSyncs()
	}
	switch td.Cmd {
	case "open":
		e.cfg = DefaultConfig()
		e.cfg.FileDeleteDelayMs = 0
		e.cfg.SegmentBytes = intArg("segment-bytes", e.cfg.SegmentBytes)
		e.cfg.SegmentMs = intArg("segment-ms", e.cfg.SegmentMs)
		e.cfg.SegmentIndexBytes = intArg("segment-index-bytes", e.cfg.SegmentIndexBytes)
		e.cfg.IndexIntervalBytes = intArg("index-interval", e.cfg.IndexIntervalBytes)
		e.cfg.RetentionMs = intArg("retention-ms", e.cfg.RetentionMs)
		e.cfg.RetentionBytes = intArg("retention-bytes", e.cfg.RetentionBytes)
		e.cfg.FlushMessages = intArg("flush-messages", e.cfg.FlushMessages)
		return e.open(t)
	case "reopen":
		if err := e.log.Close(); err != nil {
			return errName(err)
		}
		return e.open(t)
	case "open-again":
		// Open after close (files may have been edited in between).
		return e.open(t)
	case "crash":
		// Restart the FS without closing the log: unsynced writes are lost.
		e.fs.Restart()
		if td.HasArg("torn") {
			e.fs.SetTornWrites(true, uint64(intArg("torn", 1)))
		}
		return e.open(t)
	case "tick":
		e.clock = e.clock.Add(time.Duration(intArg("ms", 0)) * time.Millisecond)
		return fmt.Sprintf("now %d\n", e.clock.UnixMilli())
	case "append", "append-follower":
		n := int(intArg("records", 1))
		ts := intArg("ts", e.clock.UnixMilli())
		var data []byte
		for i := int64(0); i < intArg("batches", 1); i++ {
			data = append(data, mkBatch(n, ts, intArg("pid", -1), int16(intArg("pepoch", 0)), int32(intArg("seq", 0)))...)
		}
		var res AppendResult
		var err error
		if td.Cmd == "append" {
			res, err = e.log.AppendAsLeader(data, int32(intArg("epoch", 0)))
		} else {
			batch.SetBaseOffset(data, intArg("offset", 0))
			batch.SetPartitionLeaderEpoch(data, int32(intArg("epoch", 0)))
			res, err = e.log.AppendAsFollower(data)
		}
		if err != nil {
			return errName(err) + "\n"
		}
		dup := ""
		if res.Duplicate {
			dup = " duplicate"
		}
		return fmt.Sprintf("offsets [%d, %d] maxTs %d@%d%s\n", res.FirstOffset, res.LastOffset, res.MaxTimestamp, res.OffsetOfMaxTimestamp, dup)
	case "append-raw":
		// Input in hex-free form: one of the named corruptions of a 2-record batch.
		data := mkBatch(2, 1000, -1, 0, 0)
		switch td.Input {
		case "bad-crc":
			data[len(data)-1] ^= 1
		case "bad-magic":
			data[16] = 1
		case "truncated":
			data = data[:len(data)-3]
		case "count-mismatch":
			data[60] = 5 // record count 5, lastOffsetDelta 1
			copy(data[17:21], crcBytes(data))
		case "trailing-garbage":
			data = append(data, 1, 2, 3)
		case "empty":
			data = nil
		case "negative-timestamp":
			data[35] = 0xff // max timestamp hugely negative
			copy(data[17:21], crcBytes(data))
		}
		_, err := e.log.AppendAsLeader(data, 0)
		if err != nil {
			return errName(err) + "\n"
		}
		return "ok\n"
	case "read":
		maxOffset := intArg("max-offset", 1<<62)
		rr, err := e.log.Read(intArg("offset", 0), intArg("max-bytes", 1<<20), maxOffset, td.HasArg("min-one"))
		if err != nil {
			return errName(err) + "\n"
		}
		return describeRead(t, rr)
	case "state":
		return e.state()
	case "append-txn", "append-txn-follower":
		// A transactional batch of producer pid.
		b := mkBatch(int(intArg("records", 1)), intArg("ts", e.clock.UnixMilli()), intArg("pid", 1), int16(intArg("pepoch", 0)), int32(intArg("seq", 0)))
		setAttributes(b, batch.AttrTransactional)
		return e.appendOut(td.Cmd == "append-txn", b, intArg("offset", 0), int32(intArg("epoch", 0)), LeaderAppend{})
	case "marker", "marker-follower":
		// A COMMIT (commit) or ABORT marker of producer pid.
		b := MarkerBatch(intArg("pid", 1), int16(intArg("pepoch", 0)), int32(intArg("coord", 0)), td.HasArg("commit"), e.clock.UnixMilli())
		return e.appendOut(td.Cmd == "marker", b, intArg("offset", 0), int32(intArg("epoch", 0)),
			LeaderAppend{Coordinator: true, TransactionVersion: int8(intArg("tv", 1))})
	case "txn-state":
		// The LSO for a high watermark (default: the log end), open transactions and every
		// segment's aborted-transaction index.
		return e.txnState(intArg("hw", e.log.LogEndOffset()))
	case "aborted":
		var b strings.Builder
		for _, a := range e.log.AbortedTransactions(intArg("from", 0), intArg("upto", 1<<62)) {
			fmt.Fprintf(&b, "pid %d [%d, %d] lso %d\n", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return b.String()
	case "offset-for-ts":
		r, ok := e.log.OffsetForTimestamp(intArg("ts", 0))
		if !ok {
			return "none\n"
		}
		return fmt.Sprintf("offset %d ts %d epoch %d\n", r.Offset, r.Timestamp, r.LeaderEpoch)
	case "max-ts":
		r, ok := e.log.MaxTimestamp()
		if !ok {
			return "none\n"
		}
		return fmt.Sprintf("offset %d ts %d epoch %d\n", r.Offset, r.Timestamp, r.LeaderEpoch)
	case "end-offset-for-epoch":
		ep, off := e.log.EndOffsetForEpoch(int32(intArg("epoch", 0)))
		return fmt.Sprintf("epoch %d end %d\n", ep, off)
	case "delete-records":
		start, err := e.log.DeleteRecordsBefore(intArg("offset", 0))
		if err != nil {
			return errName(err) + "\n"
		}
		return fmt.Sprintf("log start %d\n", start) + e.state()
	case "truncate":
		if err := e.log.TruncateTo(intArg("offset", 0)); err != nil {
			return errName(err) + "\n"
		}
		return e.state()
	case "truncate-fully":
		if err := e.log.TruncateFullyAndStartAt(intArg("offset", 0)); err != nil {
			return errName(err) + "\n"
		}
		return e.state()
	case "retention":
		if err := e.log.EnforceRetention(); err != nil {
			return errName(err) + "\n"
		}
		return e.state()
	case "flush":
		if err := e.log.Flush(); err != nil {
			return errName(err) + "\n"
		}
		return "ok\n"
	case "files":
		names, _ := e.fs.ReadDir(ddDir)
		return strings.Join(names, "\n") + "\n"
	case "corrupt":
		// corrupt <file> pos=N: flip a byte (durably); negative pos counts from the end.
		path := ddDir + "/" + td.CmdArgs[0].Key
		data, ok := e.fs.ReadFileForTest(path)
		if !ok {
			return "missing\n"
		}
		pos := intArg("pos", 0)
		if pos < 0 {
			pos += int64(len(data))
		}
		data[pos] ^= 0xff
		e.fs.WriteFileForTest(path, data)
		return "ok\n"
	case "chop":
		// chop <file> bytes=N: cut N bytes off the end (durably).
		path := ddDir + "/" + td.CmdArgs[0].Key
		data, ok := e.fs.ReadFileForTest(path)
		if !ok {
			return "missing\n"
		}
		e.fs.WriteFileForTest(path, data[:int64(len(data))-intArg("bytes", 0)])
		return "ok\n"
	case "rm":
		if err := e.fs.Remove(ddDir + "/" + td.CmdArgs[0].Key); err != nil {
			return err.Error() + "\n"
		}
		e.fs.SyncDir(ddDir)
		return "ok\n"
	case "close":
		if err := e.log.Close(); err != nil {
			return errName(err) + "\n"
		}
		return "ok\n"
	case "cat":
		data, ok := e.fs.ReadFileForTest(ddDir + "/" + td.CmdArgs[0].Key)
		if !ok {
			return "missing\n"
		}
		return string(data)
	default:
		t.Fatalf("unknown command %q", td.Cmd)
		return ""
	}
}

// appendOut appends b as leader (or, follower, at offset) and describes the outcome.
func (e *ddEnv) appendOut(leader bool, b []byte, offset int64, epoch int32, o LeaderAppend) string {
	var res AppendResult
	var err error
	if leader {
		res, _, err = e.log.AppendAsLeaderWith(b, epoch, o)
	} else {
		batch.SetBaseOffset(b, offset)
		batch.SetPartitionLeaderEpoch(b, epoch)
		res, err = e.log.AppendAsFollower(b)
	}
	if err != nil {
		return errName(err) + "\n"
	}
	return fmt.Sprintf("offsets [%d, %d]\n", res.FirstOffset, res.LastOffset)
}

// txnState describes the transaction state: LSO, open transactions, .txnindex entries.
func (e *ddEnv) txnState(hw int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lso %d (hw %d)\nopen:", e.log.LastStableOffset(hw), hw)
	for _, p := range e.log.Producers() {
		if p.CurrentTxnStartOffset >= 0 {
			fmt.Fprintf(&b, " pid%d@%d", p.ProducerID, p.CurrentTxnStartOffset)
		}
	}
	b.WriteString("\n")
	e.log.mu.RLock()
	for _, s := range e.log.mu.segments {
		if len(s.txn.entries) == 0 {
			continue
		}
		fmt.Fprintf(&b, "txnindex %d:", s.baseOffset)
		for _, a := range s.txn.entries {
			fmt.Fprintf(&b, " pid%d[%d,%d]lso%d", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
		}
		b.WriteString("\n")
	}
	e.log.mu.RUnlock()
	return b.String()
}

// setAttributes sets attribute bits of an uncompressed batch and fixes its CRC.
func setAttributes(b []byte, bits int16) {
	a := binary.BigEndian.Uint16(b[21:])
	binary.BigEndian.PutUint16(b[21:], a|uint16(bits))
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
}

func crcBytes(b []byte) []byte {
	c := batch.CRC(b)
	return []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)}
}

// describeRead lists the batches a read returned.
func describeRead(t testing.TB, rr ReadResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bytes %d:", rr.Bytes)
	for _, s := range rr.Slices {
		data := make([]byte, s.Length)
		if _, err := s.File.ReadAt(data, s.Position); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		for len(data) > 0 {
			h, err := batch.Check(data)
			if err != nil {
				t.Fatalf("read returned a bad batch: %v", err)
			}
			fmt.Fprintf(&b, " [%d..%d]e%d", h.BaseOffset, h.LastOffset(), h.PartitionLeaderEpoch)
			data = data[h.Size():]
		}
	}
	b.WriteString("\n")
	return b.String()
}

// gzipBatch builds a gzip-compressed batch of n records.
func gzipBatch(t *testing.T, n int, ts int64) []byte {
	plain := mkBatch(n, ts, -1, 0, 0)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(plain[batch.HeaderSize:])
	w.Close()
	b := append(append([]byte(nil), plain[:batch.HeaderSize]...), z.Bytes()...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-batch.LogOverhead))
	binary.BigEndian.PutUint16(b[21:], 1) // gzip
	binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
	return b
}
