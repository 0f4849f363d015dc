package logstore

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Index entry sizes: Kafka's OffsetIndex and TimeIndex. Format constants; never change them.
const (
	offsetIndexEntrySize = 8  // relative offset int32, position int32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset int32
)

// offsetIndex is a segment's sparse offset index: a file of (relative offset, position) entries,
// big-endian, offsets strictly increasing, mirrored in memory. An entry (o, p) means the batch
// starting at byte p of the .log file has last offset o (Kafka 4.x indexes a batch's last offset).
//
// The in-memory copy is guarded by Log.mu (readers hold it shared); the file is only written by
// the appender (Log.appendMu held).
type offsetIndex struct {
	file       File
	baseOffset int64
	maxEntries int
	// entries holds the index. Invariant: len(entries) % offsetIndexEntrySize == 0; the file
	// holds entries[:written]; the rest is written by persist (before every fsync of the
	// segment). An active segment's index is rebuilt by recovery anyway, so deferring the file
	// writes loses nothing and saves two syscalls per indexed batch.
	entries []byte
	written int
}

// persist writes entries not yet in the file.
// REQUIRES: Log.appendMu held.
func (ix *offsetIndex) persist() error {
	if ix.written == len(ix.entries) {
		return nil
	}
	if _, err := ix.file.WriteAt(ix.entries[ix.written:], int64(ix.written)); err != nil {
		return err
	}
	ix.written = len(ix.entries)
	return nil
}

func (ix *offsetIndex) len() int { return len(ix.entries) / offsetIndexEntrySize }

func (ix *offsetIndex) entry(i int) (offset int64, position int64) {
	e := ix.entries[i*offsetIndexEntrySize:]
	return ix.baseOffset + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

func (ix *offsetIndex) isFull() bool { return ix.len() >= ix.maxEntries }

// lookup returns the largest entry whose offset <= target, or (baseOffset, 0).
func (ix *offsetIndex) lookup(target int64) (offset, position int64) {
	n := ix.len()
	i := sort.Search(n, func(i int) bool { o, _ := ix.entry(i); return o > target })
	if i == 0 {
		return ix.baseOffset, 0
	}
	return ix.entry(i - 1)
}

// lastBefore returns the position of the last indexed batch that starts at or below pos and
// whose last offset is below maxOffset (0 if none). Both fields increase, so the entries that
// qualify are a prefix.
func (ix *offsetIndex) lastBefore(pos, maxOffset int64) int64 {
	n := ix.len()
	i := sort.Search(n, func(i int) bool { o, p := ix.entry(i); return p > pos || o >= maxOffset })
	if i == 0 {
		return 0
	}
	_, p := ix.entry(i - 1)
	return p
}

// encodeAppend returns the new entry's bytes.
func (ix *offsetIndex) encode(offset, position int64) []byte {
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-ix.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	return e[:]
}

// appendLocked adds an entry (to the file at the next persist).
// REQUIRES: Log.appendMu and Log.mu (exclusive) held.
func (ix *offsetIndex) appendLocked(offset, position int64) error {
	if n := ix.len(); n > 0 {
		if last, _ := ix.entry(n - 1); offset <= last {
			return fmt.Errorf("logstore: offset index entry %d not after %d", offset, last)
		}
	}
	ix.entries = append(ix.entries, ix.encode(offset, position)...)
	return nil
}

// truncateToEntries keeps the first n entries, in the file too.
// REQUIRES: Log.appendMu and Log.mu (exclusive) held.
func (ix *offsetIndex) truncateLocked(n int) error {
	if err := ix.file.Truncate(int64(n * offsetIndexEntrySize)); err != nil {
		return err
	}
	ix.entries = ix.entries[:n*offsetIndexEntrySize]
	ix.written = min(ix.written, len(ix.entries))
	return nil
}

// sane reports whether entries are well-formed for a log file of logSize bytes: offsets strictly
// increasing and > base-1, positions non-decreasing and inside the file (Kafka's sanityCheck
// plus ordering, which a torn or zero-filled index violates).
func (ix *offsetIndex) sane(logSize int64) bool {
	if len(ix.entries)%offsetIndexEntrySize != 0 || ix.len() > ix.maxEntries {
		return false
	}
	prevOff, prevPos := ix.baseOffset-1, int64(-1)
	for i := 0; i < ix.len(); i++ {
		o, p := ix.entry(i)
		if o <= prevOff || p <= prevPos || p >= logSize {
			return false
		}
		prevOff, prevPos = o, p
	}
	return true
}

// timeIndex is a segment's sparse time index: (timestamp, relative offset) entries, big-endian,
// both strictly increasing (Kafka's TimeIndex). An entry (t, o) means the largest batch
// timestamp among batches up to the one whose last offset is o is t. Locking as offsetIndex.
type timeIndex struct {
	file       File
	baseOffset int64
	maxEntries int
	entries    []byte
	written    int // as offsetIndex.written
}

// persist writes entries not yet in the file.
// REQUIRES: Log.appendMu held.
func (ix *timeIndex) persist() error {
	if ix.written == len(ix.entries) {
		return nil
	}
	if _, err := ix.file.WriteAt(ix.entries[ix.written:], int64(ix.written)); err != nil {
		return err
	}
	ix.written = len(ix.entries)
	return nil
}

func (ix *timeIndex) len() int { return len(ix.entries) / timeIndexEntrySize }

func (ix *timeIndex) entry(i int) (timestamp int64, offset int64) {
	e := ix.entries[i*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), ix.baseOffset + int64(binary.BigEndian.Uint32(e[8:]))
}

func (ix *timeIndex) isFull() bool { return ix.len() >= ix.maxEntries }

// lastTimestamp is the last entry's timestamp or -1.
func (ix *timeIndex) last() (timestamp, offset int64) {
	if n := ix.len(); n > 0 {
		return ix.entry(n - 1)
	}
	return -1, ix.baseOffset
}

// lookup returns the largest entry whose timestamp <= target, or (-1, baseOffset).
func (ix *timeIndex) lookup(target int64) (timestamp, offset int64) {
	n := ix.len()
	i := sort.Search(n, func(i int) bool { t, _ := ix.entry(i); return t > target })
	if i == 0 {
		return -1, ix.baseOffset
	}
	return ix.entry(i - 1)
}

// maybeAppendLocked appends (timestamp, offset) if timestamp is larger than the last entry's,
// as Kafka's TimeIndex.maybeAppend does. skipFull allows one entry past maxEntries (Kafka
// does so when a segment becomes inactive).
// REQUIRES: Log.appendMu and Log.mu (exclusive) held.
func (ix *timeIndex) maybeAppendLocked(timestamp, offset int64, skipFull bool) error {
	lastTs, lastOff := ix.last()
	if timestamp <= lastTs || (ix.len() > 0 && offset < lastOff) {
		return nil
	}
	if ix.isFull() && !skipFull {
		return nil
	}
	if ix.len() > 0 && offset == lastOff {
		// Same offset, larger timestamp: Kafka replaces nothing; skip to keep offsets increasing.
		return nil
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-ix.baseOffset))
	ix.entries = append(ix.entries, e[:]...)
	return nil
}

// REQUIRES: Log.appendMu and Log.mu (exclusive) held.
func (ix *timeIndex) truncateLocked(n int) error {
	if err := ix.file.Truncate(int64(n * timeIndexEntrySize)); err != nil {
		return err
	}
	ix.entries = ix.entries[:n*timeIndexEntrySize]
	ix.written = min(ix.written, len(ix.entries))
	return nil
}

// sane reports whether entries are strictly increasing in both fields and offsets lie in
// [base, nextOffset).
func (ix *timeIndex) sane(nextOffset int64) bool {
	if len(ix.entries)%timeIndexEntrySize != 0 || ix.len() > ix.maxEntries+1 {
		return false
	}
	prevTs, prevOff := int64(-1), ix.baseOffset-1
	for i := 0; i < ix.len(); i++ {
		t, o := ix.entry(i)
		if t <= prevTs || o < prevOff || o >= nextOffset {
			return false
		}
		prevTs, prevOff = t, o
	}
	return true
}
