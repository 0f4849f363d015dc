package logstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"sluice/internal/batch"
)

// The aborted transaction index (<base>.txnindex), as Kafka's TransactionIndex: one 34-byte
// entry per transaction aborted by an ABORT marker in the segment, in marker order. Format
// constants; never change them.
const (
	txnIndexSuffix    = ".txnindex"
	abortedTxnSize    = 2 + 8 + 8 + 8 + 8
	abortedTxnVersion = 0
)

// AbortedTxn is one entry of a .txnindex file: producer ProducerID's transaction spanning
// [FirstOffset, LastOffset] (LastOffset is the ABORT marker's offset) was aborted, and the
// last stable offset right after the marker was LastStableOffset (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// ErrCorruptTxnIndex is a .txnindex file that does not decode.
var ErrCorruptTxnIndex = errors.New("logstore: corrupt transaction index")

func (a AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, abortedTxnVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// decodeTxnIndex decodes a whole .txnindex file. It checks what Kafka's TransactionIndex
// sanityCheck and append check: whole entries of version 0, each transaction's last offset at
// or after the segment base and after the previous entry's, first offset <= last offset.
func decodeTxnIndex(b []byte, segmentBase int64) ([]AbortedTxn, error) {
	if len(b)%abortedTxnSize != 0 {
		return nil, ErrCorruptTxnIndex
	}
	out := make([]AbortedTxn, 0, len(b)/abortedTxnSize)
	prevLast := int64(-1)
	for ; len(b) > 0; b = b[abortedTxnSize:] {
		if binary.BigEndian.Uint16(b) != abortedTxnVersion {
			return nil, ErrCorruptTxnIndex
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset ||
			a.LastOffset < segmentBase || a.LastOffset <= prevLast || a.LastStableOffset < 0 {
			return nil, ErrCorruptTxnIndex
		}
		prevLast = a.LastOffset
		out = append(out, a)
	}
	return out, nil
}

// txnIndex is a segment's aborted transactions. The file exists only once the segment has
// one (Kafka creates it lazily too). Guarded by Log.mu (entries) and Log.appendMu (writes).
type txnIndex struct {
	// file is nil until the first entry is written or an existing file is opened.
	file    File
	entries []AbortedTxn
}

// appendLocked adds an entry and writes it to the file (created on first use).
// REQUIRES: Log.appendMu held; Log.mu exclusive for the entries.
func (s *segment) appendTxnLocked(fsys FS, dir string, a AbortedTxn) error {
	if err := s.openTxnFile(fsys, dir, true); err != nil {
		return err
	}
	pos := int64(len(s.txn.entries)) * abortedTxnSize
	if _, err := s.txn.file.WriteAt(a.appendTo(nil), pos); err != nil {
		return err
	}
	s.txn.entries = append(s.txn.entries, a)
	return nil
}

// openTxnFile opens the segment's .txnindex (creating it if create) through the file cache.
func (s *segment) openTxnFile(fsys FS, dir string, create bool) error {
	if s.txn.file != nil {
		return nil
	}
	fsys, cache := segmentFileCache(fsys)
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err := cache.openFile(fsys, fileName(dir, s.baseOffset, txnIndexSuffix), flag, 0o644)
	if err != nil {
		return err
	}
	s.txn.file = f
	return nil
}

// resetTxnLocked empties the segment's transaction index (recovery rebuilds it).
// REQUIRES: Log.appendMu held or called from load.
func (s *segment) resetTxnLocked() error {
	s.txn.entries = nil
	if s.txn.file == nil {
		return nil
	}
	return s.txn.file.Truncate(0)
}

// truncateTxnLocked drops entries whose marker is at or after offset (Kafka's
// TransactionIndex.truncateTo).
// REQUIRES: Log.appendMu held; Log.mu exclusive.
func (s *segment) truncateTxnLocked(offset int64) error {
	n := len(s.txn.entries)
	for n > 0 && s.txn.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(s.txn.entries) {
		return nil
	}
	s.txn.entries = s.txn.entries[:n]
	return s.txn.file.Truncate(int64(n) * abortedTxnSize)
}

// loadTxnIndex reads an existing .txnindex of a segment being opened. A damaged file is
// reported with ErrCorruptTxnIndex: the caller recovers the segment, which rebuilds it.
func (s *segment) loadTxnIndex(fsys FS, dir string) error {
	if err := s.openTxnFile(fsys, dir, false); err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	data, err := readAll(s.txn.file)
	if err != nil {
		return err
	}
	entries, err := decodeTxnIndex(data, s.baseOffset)
	if err != nil {
		return err
	}
	s.txn.entries = entries
	return nil
}

// collectAbortedTxns returns the aborted transactions that overlap [from, upTo) — a
// transaction whose marker is at or after from and whose first offset is below upTo — from
// the segments holding from onwards, as Kafka's collectAbortedTxns: the walk stops at the
// first entry whose last stable offset reaches upTo (every later one starts at or after it).
// REQUIRES: Log.mu held (shared suffices).
func (l *Log) collectAbortedTxnsLocked(from, upTo int64) []AbortedTxn {
	var out []AbortedTxn
	for i := l.segmentIndexFor(from); i < len(l.mu.segments); i++ {
		// Later segments are searched too: their markers may abort a transaction begun below
		// upTo; an entry whose last stable offset reaches upTo ends the search.
		for _, a := range l.mu.segments[i].txn.entries {
			if a.LastOffset < from || a.FirstOffset >= upTo {
				if a.LastStableOffset >= upTo {
					return out
				}
				continue
			}
			out = append(out, a)
			if a.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// AbortedTransactions returns the aborted transactions a read_committed fetch of [from, upTo)
// must report (Kafka's FetchResponse AbortedTransactions: producer ID and first offset).
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil
	}
	return l.collectAbortedTxnsLocked(from, upTo)
}

// Control record types (Kafka's ControlRecordType) of a transaction marker's key.
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// endTxnMarker is a decoded EndTransactionMarker control record.
type endTxnMarker struct {
	commit           bool
	coordinatorEpoch int32
}

// parseEndTxnMarker reads the first record of the control batch b (header h): key version
// int16 >= 0, type int16; for ABORT and COMMIT the value is version int16, coordinator epoch
// int32. isMarker is false for another control type (KRaft's, say) or an empty batch (a
// cleaned-away transaction's marker), which then ends nothing, as in Kafka.
func parseEndTxnMarker(h *batch.Header, b []byte) (m endTxnMarker, isMarker bool, err error) {
	if h.RecordCount == 0 {
		return m, false, nil
	}
	if h.Compression() != 0 || int64(len(b)) < h.Size() {
		return m, false, ErrInvalidRecord
	}
	rest := b[batch.HeaderSize:h.Size()]
	length, n := binary.Varint(rest)
	if n <= 0 || length < 0 || length > int64(len(rest)-n) {
		return m, false, ErrCorruptBatch
	}
	rec := rest[n : n+int(length)]
	if len(rec) < 1 {
		return m, false, ErrCorruptBatch
	}
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		_, k := binary.Varint(rec)
		if k <= 0 {
			return m, false, ErrCorruptBatch
		}
		rec = rec[k:]
	}
	key, rec, ok := varBytes(rec)
	if !ok || len(key) < 4 || int16(binary.BigEndian.Uint16(key)) < 0 {
		return m, false, ErrInvalidRecord
	}
	typ := int16(binary.BigEndian.Uint16(key[2:]))
	if typ != controlTypeAbort && typ != controlTypeCommit {
		return m, false, nil
	}
	value, _, ok := varBytes(rec)
	if !ok || len(value) < 6 || int16(binary.BigEndian.Uint16(value)) < 0 {
		return m, false, ErrInvalidRecord
	}
	return endTxnMarker{commit: typ == controlTypeCommit, coordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:]))}, true, nil
}

// varBytes reads a varint-length-prefixed byte string (-1: null, returned as nil, ok).
func varBytes(b []byte) (v, rest []byte, ok bool) {
	length, n := binary.Varint(b)
	if n <= 0 || length < -1 || length > int64(len(b)-n) {
		return nil, nil, false
	}
	if length < 0 {
		return nil, b[n:], true
	}
	return b[n : n+int(length)], b[n+int(length):], true
}

// MarkerBatch builds a transaction marker: a control batch (attributes control and
// transactional, no sequence) of one record whose key is version 0 and the type (COMMIT or
// ABORT) and whose value is version 0 and the coordinator epoch, as Kafka's
// EndTransactionMarker. The offset and leader epoch are assigned by the append.
func MarkerBatch(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, timestampMs int64) []byte {
	key := make([]byte, 4)
	if commit {
		binary.BigEndian.PutUint16(key[2:], controlTypeCommit)
	}
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	return batch.Build(batch.Header{
		Attributes:    batch.AttrControl | batch.AttrTransactional,
		BaseTimestamp: timestampMs, MaxTimestamp: timestampMs,
		ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: -1,
	}, []batch.Record{{Key: key, Value: value}})
}

// completedTxn is a transaction a marker just ended (Kafka's CompletedTxn).
type completedTxn struct {
	producerID  int64
	first, last int64 // first offset, marker offset
	aborted     bool
}

// noteTxnsLocked publishes the producer state's open transactions and the transactions just
// ended to what LastStableOffset reads.
// REQUIRES: appendMu held.
func (l *Log) noteTxnsLocked(ended []completedTxn) {
	first := l.producers.firstOngoing()
	l.txn.Lock()
	l.txn.ongoingFirst = first
	for _, t := range ended {
		l.txn.unreplicated = append(l.txn.unreplicated, txnSpan{first: t.first, last: t.last})
	}
	l.txn.Unlock()
}

// resetTxnStateLocked recomputes the transaction state after the producer state was rebuilt
// (recovery, truncation). ended are the transactions the rebuild saw end, in marker order:
// they hold the LSO back until the high watermark passes their markers, as after an append
// (Kafka's recovery also counts them unreplicated); older ones are not known any more.
// REQUIRES: appendMu held or called from load.
func (l *Log) resetTxnStateLocked(ended []txnSpan) {
	first := l.producers.firstOngoing()
	l.txn.Lock()
	l.txn.ongoingFirst = first
	l.txn.unreplicated = ended
	l.txn.Unlock()
}

// LastStableOffset is the last stable offset for a high watermark: the smallest of the
// high watermark, the first offset of any open transaction and the first offset of any
// transaction whose marker is not yet below the high watermark (Kafka's
// firstUnstableOffset bounded by the HW). Transactions whose markers are below
// highWatermark are forgotten: the high watermark never moves back except by truncation,
// which rebuilds this state. The caller clamps the result to the log start.
func (l *Log) LastStableOffset(highWatermark int64) int64 {
	l.txn.Lock()
	defer l.txn.Unlock()
	u := l.txn.unreplicated
	i := 0
	for i < len(u) && u[i].last < highWatermark {
		i++
	}
	if i > 0 {
		l.txn.unreplicated = append(u[:0], u[i:]...)
	}
	lso := highWatermark
	if f := l.txn.ongoingFirst; f >= 0 && f < lso {
		lso = f
	}
	for _, t := range l.txn.unreplicated {
		if t.first < lso {
			lso = t.first
		}
	}
	return lso
}

// HasOngoingTxn reports whether producerID has an open transaction at epoch (Kafka's
// ProducerStateManager check before verifying a transactional produce with the coordinator).
func (l *Log) HasOngoingTxn(producerID int64, epoch int16) bool {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	e := l.producers.producers[producerID]
	return e != nil && e.Epoch == epoch && e.CurrentTxnFirstOffset >= 0
}

// Producers returns the state of every producer the log remembers (DescribeProducers),
// ordered by producer ID.
func (l *Log) Producers() []ProducerInfo {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make([]ProducerInfo, 0, len(l.producers.producers))
	for id, e := range l.producers.producers {
		out = append(out, ProducerInfo{
			ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: e.lastSeq(), LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.CurrentTxnFirstOffset,
		})
	}
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// AbortedTransactionsInRead returns the aborted transactions a read_committed fetch that
// read res from offset from must report: those overlapping [from, end of res), the end being
// the offset after the last batch res holds (at most maxOffset, the LSO the read was bounded
// by), as Kafka's addAbortedTransactions bounds them by the fetched data.
func (l *Log) AbortedTransactionsInRead(from int64, res ReadResult, maxOffset int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed || len(res.Slices) == 0 {
		return nil
	}
	upTo := maxOffset
	s := res.Slices[len(res.Slices)-1]
	seg := l.mu.segments[l.segmentIndexFor(from)]
	if seg.log == s.File {
		end := s.Position + s.Length
		if end >= seg.size {
			upTo = min(upTo, seg.nextOffset)
		} else if h, err := readHeaderAt(seg.log, end, seg.size, make([]byte, batch.HeaderSize)); err == nil {
			upTo = min(upTo, h.BaseOffset)
		}
	}
	return l.collectAbortedTxnsLocked(from, upTo)
}

// maxVerifications bounds the verification guards a log holds; beyond it the oldest is
// dropped (its producer's batch is then refused with ErrInvalidTxnState and retried).
const maxVerifications = 1 << 14

// txnVerification is one guard handed out by BeginTxnVerification.
type txnVerification struct {
	guard uint64
	epoch int16
	// holders counts the verifications sharing the guard that have not ended it
	// (EndTxnVerification); the guard is dropped when the last one fails, and spent by the
	// producer's first transactional batch or marker whoever holds it.
	holders int
}

// BeginTxnVerification is called before a transactional batch of producerID at epoch is
// verified with the transaction coordinator (KIP-890 part 1). ongoing reports that the
// producer has a transaction open here at epoch, so no verification is needed. Otherwise it
// returns a guard to pass in LeaderAppend.VerificationGuard: a transaction marker of the
// producer appended in between (the coordinator ended the transaction while the batch was
// being verified) spends the guard, and the batch is refused rather than start a
// transaction nobody will end (a hanging transaction).
//
// Verifications of one producer at one epoch share a guard, as Kafka's
// maybeCreateVerificationStateEntry reuses the producer's entry: a client has several
// requests in flight, and the second batch of a transaction may be verified while the first
// still is (or waits out CONCURRENT_TRANSACTIONS). A guard per request would let each
// verification spend the other's, and the batch whose guard was replaced would be refused
// INVALID_TXN_STATE though nothing ended its transaction.
func (l *Log) BeginTxnVerification(producerID int64, epoch int16) (guard uint64, ongoing bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if e := l.producers.producers[producerID]; e != nil && e.Epoch == epoch && e.CurrentTxnFirstOffset >= 0 {
		return 0, true
	}
	if l.verifying == nil {
		l.verifying = make(map[int64]txnVerification)
	}
	if v, ok := l.verifying[producerID]; ok && v.epoch == epoch {
		v.holders++
		l.verifying[producerID] = v
		return v.guard, false
	}
	if _, ok := l.verifying[producerID]; !ok && len(l.verifying) >= maxVerifications {
		oldest, oldestID := uint64(math.MaxUint64), int64(-1)
		for id, v := range l.verifying {
			if v.guard < oldest {
				oldest, oldestID = v.guard, id
			}
		}
		delete(l.verifying, oldestID)
	}
	l.lastGuard++
	l.verifying[producerID] = txnVerification{guard: l.lastGuard, epoch: epoch, holders: 1}
	return l.lastGuard, false
}

// EndTxnVerification ends one holder's use of a guard whose verification failed; the guard
// is dropped when no verification holds it any more.
func (l *Log) EndTxnVerification(producerID int64, guard uint64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	v, ok := l.verifying[producerID]
	if !ok || v.guard != guard {
		return
	}
	if v.holders--; v.holders > 0 {
		l.verifying[producerID] = v
		return
	}
	delete(l.verifying, producerID)
}

// spendVerificationLocked ends the producer's verification guard once its transactional
// batch h is appended: a data batch started the transaction (or continued it), a marker ended
// it. The exception is Kafka's: a transaction-version-2 marker at the guard's epoch. Under TV2
// the coordinator bumps the epoch before it writes the markers, so a marker at epoch e+1 ends
// the transaction of epoch e, and a guard at e+1 belongs to the producer's next transaction,
// whose first batch the client sent as soon as EndTxn answered (a late batch of the ended
// transaction carries epoch e, which the epoch check refuses). Spending it would refuse that
// batch INVALID_TXN_STATE and abort a healthy transaction. TV0/1 markers carry the
// transaction's own epoch, which the next transaction reuses, so they always spend it.
// REQUIRES: appendMu held.
func (l *Log) spendVerificationLocked(h *batch.Header, transactionVersion int8) {
	v, ok := l.verifying[h.ProducerID]
	if !ok {
		return
	}
	if h.IsControl() && transactionVersion >= 2 && v.epoch == h.ProducerEpoch {
		return
	}
	delete(l.verifying, h.ProducerID)
}

// checkVerificationLocked refuses a transactional batch that would start a transaction when
// its verification guard is no longer the producer's (Kafka's "record was not part of an
// ongoing transaction"). e is the producer's entry before the batch (nil: unknown).
// REQUIRES: appendMu held.
func (l *Log) checkVerificationLocked(e *producerEntry, h *batch.Header, guard uint64) error {
	if guard == 0 || !h.IsTransactional() || h.IsControl() || e != nil && e.CurrentTxnFirstOffset >= 0 {
		return nil
	}
	if v, ok := l.verifying[h.ProducerID]; !ok || v.guard != guard || v.epoch != h.ProducerEpoch {
		return fmt.Errorf("%w: producer %d epoch %d: the transaction was ended while the batch was verified", ErrInvalidTxnState, h.ProducerID, h.ProducerEpoch)
	}
	return nil
}

// ParseTxnMarker decodes the transaction marker in the control batch b (whole batch bytes):
// commit or abort and the coordinator epoch. ok is false for a batch that is not a
// transaction marker (not a control batch, another control type, or empty). For readers of
// a log that must replay transactions themselves (the group coordinator loading
// transactional offset commits from __consumer_offsets).
func ParseTxnMarker(b []byte) (commit bool, coordinatorEpoch int32, ok bool, err error) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return false, 0, false, err
	}
	if !h.IsControl() {
		return false, 0, false, nil
	}
	m, ok, err := parseEndTxnMarker(&h, b)
	return m.commit, m.coordinatorEpoch, ok, err
}
