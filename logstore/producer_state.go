package logstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"

	"sluice/internal/batch"
)

// producerBatchesRetained is how many batches per producer are remembered for deduplication
// (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN; clients keep at most 5 in flight).
const producerBatchesRetained = 5

// batchMetadata is one appended batch of an idempotent producer.
type batchMetadata struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64 // batch max timestamp
}

// producerEntry is the state of one producer ID (Kafka's ProducerStateEntry): its epoch, its
// last batches, the coordinator epoch of its last transaction marker and the first offset of
// its open transaction.
type producerEntry struct {
	Epoch                 int16
	Batches               []batchMetadata // oldest first; len <= producerBatchesRetained
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64 // -1 when no transaction is open
	LastTimestamp         int64
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

func (e *producerEntry) clone() *producerEntry {
	c := *e
	c.Batches = append([]batchMetadata(nil), e.Batches...)
	return &c
}

// findDuplicate returns the retained batch that h repeats (same epoch, same sequence range).
func (e *producerEntry) findDuplicate(h *batch.Header) (batchMetadata, bool) {
	if h.ProducerEpoch != e.Epoch {
		return batchMetadata{}, false
	}
	last := h.LastSequence()
	for _, m := range e.Batches {
		if m.FirstSeq == h.BaseSequence && m.LastSeq == last {
			return m, true
		}
	}
	return batchMetadata{}, false
}

// update records an appended batch without validation (replication, recovery, or after
// checkProducerBatch accepted it). marker is the decoded end-transaction marker of a control
// batch (nil for data batches and for other control batches). For a marker it returns the
// first offset of the transaction it ends (-1: none was open), as Kafka's appendEndTxnMarker
// emits a CompletedTxn only for a transaction with data.
func (e *producerEntry) update(h *batch.Header, marker *endTxnMarker) (endedTxnFirst int64) {
	if h.ProducerEpoch != e.Epoch {
		e.Epoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	e.LastTimestamp = h.MaxTimestamp
	if h.IsControl() {
		if marker == nil {
			return -1 // not a transaction marker: it ends nothing
		}
		first := e.CurrentTxnFirstOffset
		e.CurrentTxnFirstOffset = -1
		e.CoordinatorEpoch = marker.coordinatorEpoch
		return first
	}
	if h.IsTransactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = h.BaseOffset
	}
	if len(e.Batches) == producerBatchesRetained {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:producerBatchesRetained-1]
	}
	e.Batches = append(e.Batches, batchMetadata{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp,
	})
	return -1
}

// inSequence is Kafka's ProducerAppendInfo.inSequence: next follows last, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkProducerBatch validates a leader append of h against the producer's current entry e
// (nil when the producer is unknown), following Kafka's ProducerAppendInfo: the epoch check
// (checkProducerEpoch), the sequence check for clients only (checkSequence, with KIP-360: an
// unknown producer may start at any sequence), INVALID_TXN_STATE for a non-transactional
// batch while the producer's transaction is open, and for a marker the transaction-version
// epoch rule and the coordinator epoch (TRANSACTION_COORDINATOR_FENCED).
func checkProducerBatch(e *producerEntry, h *batch.Header, marker *endTxnMarker, o LeaderAppend) error {
	if h.IsControl() {
		if e == nil || marker == nil {
			return nil
		}
		if o.TransactionVersion >= 2 {
			// TV2: the coordinator bumps the epoch before writing the marker, so a marker at
			// the current epoch is late, except a retry of one already written (KAFKA-19999).
			if h.ProducerEpoch < e.Epoch || h.ProducerEpoch == e.Epoch && e.CurrentTxnFirstOffset >= 0 {
				return ErrInvalidProducerEpoch
			}
		} else if h.ProducerEpoch < e.Epoch {
			return ErrInvalidProducerEpoch
		}
		if e.CoordinatorEpoch > marker.coordinatorEpoch {
			return ErrTransactionCoordinatorFenced
		}
		return nil
	}
	if e == nil {
		return nil
	}
	if h.ProducerEpoch < e.Epoch {
		return ErrInvalidProducerEpoch
	}
	if !o.Coordinator {
		if h.ProducerEpoch != e.Epoch {
			// A bumped epoch must restart the sequence at 0 (the producer is known: e != nil).
			if h.BaseSequence != 0 {
				return ErrOutOfOrderSequence
			}
		} else if !inSequence(e.lastSeq(), h.BaseSequence) {
			return ErrOutOfOrderSequence
		}
	}
	if e.CurrentTxnFirstOffset >= 0 && !h.IsTransactional() {
		return ErrInvalidTxnState
	}
	return nil
}

// producerState is the producer-ID map of a log. Guarded by Log.appendMu.
type producerState struct {
	producers map[int64]*producerEntry
	// ongoing maps each producer with an open transaction to its first offset.
	// Invariant: ongoing[id] == producers[id].CurrentTxnFirstOffset for exactly the producers
	// whose CurrentTxnFirstOffset >= 0 (kept by set).
	ongoing map[int64]int64
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry), ongoing: make(map[int64]int64)}
}

// set installs e as id's entry and keeps ongoing in step.
func (p *producerState) set(id int64, e *producerEntry) {
	p.producers[id] = e
	if e.CurrentTxnFirstOffset >= 0 {
		p.ongoing[id] = e.CurrentTxnFirstOffset
	} else {
		delete(p.ongoing, id)
	}
}

// firstOngoing is the smallest first offset of an open transaction, -1 if none is open.
// Open transactions are few (one per transactional producer writing to the partition).
func (p *producerState) firstOngoing() int64 {
	first := int64(-1)
	for _, off := range p.ongoing {
		if first < 0 || off < first {
			first = off
		}
	}
	return first
}

// expire drops producers idle since before cutoff (ms) with no open transaction, as Kafka's
// ProducerStateManager.removeExpiredProducers. It returns how many were dropped.
func (p *producerState) expire(cutoff int64) int {
	n := 0
	for id, e := range p.producers {
		if e.LastTimestamp < cutoff && e.CurrentTxnFirstOffset < 0 {
			delete(p.producers, id)
			n++
		}
	}
	return n
}

// replay records a batch read back from the log (recovery, truncation) and returns what
// update returns.
func (p *producerState) replay(h *batch.Header, marker *endTxnMarker) (endedTxnFirst int64) {
	if !h.HasProducerID() {
		return -1
	}
	e := p.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{Epoch: h.ProducerEpoch, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
	}
	first := e.update(h, marker)
	p.set(h.ProducerID, e)
	return first
}

// Snapshot file format (sluice's own; Kafka's <offset>.snapshot files are not read and are
// replaced by a rebuild from the log). All integers big-endian:
//
//	0   4  magic "SLPS"
//	4   2  version (1)
//	6   4  CRC-32C of bytes [10, end)
//	10  8  snapshot offset: state after every batch below this offset (equals the file name)
//	18  4  producer count n
//	then n producers, each:
//	    8 producerId, 2 epoch, 4 coordinatorEpoch, 8 currentTxnFirstOffset, 8 lastTimestamp,
//	    1 batch count m (<= 5), then m × (4 firstSeq, 4 lastSeq, 8 firstOffset, 8 lastOffset,
//	    8 timestamp)
const (
	snapshotMagic      = "SLPS"
	snapshotVersion    = 1
	snapshotHeaderSize = 22
	snapshotEntryFixed = 8 + 2 + 4 + 8 + 8 + 1
	snapshotBatchSize  = 4 + 4 + 8 + 8 + 8
)

var errBadSnapshot = errors.New("logstore: bad producer snapshot")

func (p *producerState) encodeSnapshot(offset int64) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(p.producers)*(snapshotEntryFixed+snapshotBatchSize))
	copy(b, snapshotMagic)
	binary.BigEndian.PutUint16(b[4:], snapshotVersion)
	binary.BigEndian.PutUint64(b[10:], uint64(offset))
	binary.BigEndian.PutUint32(b[18:], uint32(len(p.producers)))
	for id, e := range p.producers {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = append(b, byte(len(e.Batches)))
		for _, m := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func decodeSnapshot(b []byte) (offset int64, p *producerState, err error) {
	if len(b) < snapshotHeaderSize || string(b[:4]) != snapshotMagic ||
		binary.BigEndian.Uint16(b[4:]) != snapshotVersion ||
		binary.BigEndian.Uint32(b[6:]) != crc32.Checksum(b[10:], crc32.MakeTable(crc32.Castagnoli)) {
		return 0, nil, errBadSnapshot
	}
	offset = int64(binary.BigEndian.Uint64(b[10:]))
	n := int(binary.BigEndian.Uint32(b[18:]))
	rest := b[snapshotHeaderSize:]
	if offset < 0 || n < 0 || n > len(rest)/snapshotEntryFixed {
		return 0, nil, errBadSnapshot
	}
	p = newProducerState()
	for i := 0; i < n; i++ {
		if len(rest) < snapshotEntryFixed {
			return 0, nil, errBadSnapshot
		}
		id := int64(binary.BigEndian.Uint64(rest))
		e := &producerEntry{
			Epoch:                 int16(binary.BigEndian.Uint16(rest[8:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(rest[10:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(rest[14:])),
			LastTimestamp:         int64(binary.BigEndian.Uint64(rest[22:])),
		}
		m := int(rest[30])
		rest = rest[snapshotEntryFixed:]
		if m > producerBatchesRetained || len(rest) < m*snapshotBatchSize {
			return 0, nil, errBadSnapshot
		}
		for j := 0; j < m; j++ {
			e.Batches = append(e.Batches, batchMetadata{
				FirstSeq:    int32(binary.BigEndian.Uint32(rest)),
				LastSeq:     int32(binary.BigEndian.Uint32(rest[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(rest[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(rest[16:])),
				Timestamp:   int64(binary.BigEndian.Uint64(rest[24:])),
			})
			rest = rest[snapshotBatchSize:]
		}
		if id < 0 || p.producers[id] != nil || e.CurrentTxnFirstOffset < -1 || e.CurrentTxnFirstOffset >= offset {
			return 0, nil, errBadSnapshot
		}
		p.set(id, e)
	}
	if len(rest) != 0 {
		return 0, nil, errBadSnapshot
	}
	return offset, p, nil
}
