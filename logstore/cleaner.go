package logstore

// Log compaction (Kafka's LogCleaner): see "Compaction" in the package doc.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"os"
	"sync"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// Suffixes of the cleaner's files, as Kafka names them. Format constants; never change them.
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	// cleanerCheckpointFile holds the first dirty offset, in Kafka's offset-checkpoint format
	// (Kafka keeps one per log directory under this name; sluice one per partition directory).
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
)

// CleanOptions are the cleaner's per-run settings (broker-wide keys, not topic configs).
type CleanOptions struct {
	// Map is the key → offset map, reused by every Clean of one cleaner thread; nil = one of
	// MapBytes made for this clean. A log with more distinct keys in its dirty part than fit
	// is cleaned in several passes. Clean must not run concurrently with another Clean using
	// the same Map.
	Map *CleanerMap
	// MapBytes is the memory of the map made when Map is nil (each key costs
	// offsetMapSlotBytes).
	MapBytes int64
	// UpTo bounds what is cleaned: only segments wholly below it (the high watermark).
	UpTo int64
	// Throttle, if set, is called with the number of bytes read or written, and may block
	// (log.cleaner.io.max.bytes.per.second). An error aborts the clean (a broker shutting
	// down); nothing is swapped in for the segment being cleaned.
	Throttle func(n int) error
	// LoadFactor is how full the key map may get (log.cleaner.io.buffer.load.factor);
	// 0 = Kafka's default, 0.9.
	LoadFactor float64
}

// CleanResult says what one Clean did.
type CleanResult struct {
	Cleaned        bool  // segments were rewritten
	Segments       int   // segments rewritten
	BytesRead      int64 // bytes of the segments rewritten
	BytesWritten   int64 // bytes of their cleaned replacements
	RecordsRemoved int64
	// FirstDirtyOffset is where the next pass starts building its map.
	FirstDirtyOffset int64
}

// offsetMapSlotBytes is the cost of one key in the offset map: a 128-bit key hash and an
// offset, as Kafka's SkimpyOffsetMap (16-byte MD5 and 8-byte offset per slot).
const offsetMapSlotBytes = 24

// offsetMapLoadFactor is Kafka's log.cleaner.io.buffer.load.factor default: the map is
// considered full when 90% of its slots are used.
const offsetMapLoadFactor = 0.9

// CleanerMap is the cleaner's key map: an open-addressing map from a key's 128-bit hash to
// the newest offset seen for it. Two keys whose 128-bit hashes collide would be treated as one
// (the older one's records dropped): the probability is that of an MD5 collision in Kafka's
// map, negligible.
//
// Its memory is bounded by the budget given to NewCleanerMap, but it starts small and doubles
// (rehashing) as keys arrive, up to the budget: a log with few keys is looked up in a table
// that stays in the CPU caches, and a clean does not clear megabytes it never uses. Kafka's
// SkimpyOffsetMap allocates the whole budget up front; the bound and the number of keys one
// pass can hold (capacity) are the same.
type CleanerMap struct {
	seed1, seed2 maphash.Seed
	hashes       [][2]uint64
	// offsets holds offset+1 per slot; 0 is an empty slot (so a fresh table needs no fill).
	offsets []int64
	// used keys are in the table; grow at growAt. Invariant: used <= growAt < len(offsets).
	used, growAt int
	// maxSlots is the budget in slots, capacity the keys a full-size map may hold.
	maxSlots, capacity int
	loadFactor         float64
}

// cleanerMapInitialSlots is the table size a map starts with (48 KiB).
const cleanerMapInitialSlots = 2048

// NewCleanerMap makes a key map of memBytes (log.cleaner.dedupe.buffer.size / threads) filled
// to loadFactor at most (log.cleaner.io.buffer.load.factor; 0 = 0.9). A cleaner thread makes
// one and passes it to every Clean (CleanOptions.Map), as Kafka's threads own their buffers.
func NewCleanerMap(memBytes int64, loadFactor float64) *CleanerMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = offsetMapLoadFactor
	}
	maxSlots := int(max(memBytes/offsetMapSlotBytes, 16))
	m := &CleanerMap{seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed(), maxSlots: maxSlots, loadFactor: loadFactor}
	m.capacity = m.limitFor(maxSlots)
	m.alloc(min(maxSlots, cleanerMapInitialSlots))
	return m
}

// limitFor is how many keys a table of n slots holds: n × the load factor, and one slot stays
// empty so that probes end.
func (m *CleanerMap) limitFor(n int) int { return min(int(float64(n)*m.loadFactor), n-1) }

func (m *CleanerMap) alloc(n int) {
	m.hashes, m.offsets = make([][2]uint64, n), make([]int64, n)
	m.used, m.growAt = 0, m.limitFor(n)
}

func (m *CleanerMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(m.seed1, key), maphash.Bytes(m.seed2, key)}
}

// slot finds h's slot or the empty slot where it would go.
func (m *CleanerMap) slot(h [2]uint64) int {
	n := uint64(len(m.offsets))
	i, _ := bits.Mul64(h[0], n) // h[0] scaled to [0, n): no division
	for {
		if m.offsets[i] == 0 || m.hashes[i] == h {
			return int(i)
		}
		i++
		if i == n {
			i = 0
		}
	}
}

// reset empties the map for the next clean, keeping its table.
func (m *CleanerMap) reset() {
	if m.used == 0 {
		return
	}
	clear(m.offsets)
	m.used = 0
}

// grow doubles the table (up to the budget) and rehashes what it holds.
func (m *CleanerMap) grow() {
	oldHashes, oldOffsets := m.hashes, m.offsets
	m.alloc(min(len(oldOffsets)*2, m.maxSlots))
	for i, o := range oldOffsets {
		if o != 0 {
			j := m.slot(oldHashes[i])
			m.hashes[j], m.offsets[j] = oldHashes[i], o
			m.used++
		}
	}
}

// put records offset for key; false (nothing recorded) when the key is new and the map full.
func (m *CleanerMap) put(key []byte, offset int64) bool { return m.putHash(m.hash(key), offset) }

// putHash is put for a key whose hash is h.
func (m *CleanerMap) putHash(h [2]uint64, offset int64) bool {
	i := m.slot(h)
	if m.offsets[i] == 0 {
		if m.used >= m.growAt {
			if len(m.offsets) >= m.maxSlots || m.used >= m.capacity {
				return false
			}
			m.grow()
			i = m.slot(h)
		}
		m.used++
		m.hashes[i] = h
	}
	m.offsets[i] = offset + 1
	return true
}

// get returns the newest offset recorded for key, -1 if none.
func (m *CleanerMap) get(key []byte) int64 { return m.getHash(m.hash(key)) }

// getHash is get for a key whose hash is h.
func (m *CleanerMap) getHash(h [2]uint64) int64 { return m.offsets[m.slot(h)] - 1 }

// cleanRecord is one record of a batch being filtered.
type cleanRecord struct {
	raw            []byte // length varint + body, as in the batch
	offsetDelta    int64
	timestampDelta int64
	key            []byte
	hash           [2]uint64 // of key; set by the map-building pass only
	hasKey         bool
	nullValue      bool
}

// parseCleanRecords splits a records section into records, checking every bound.
func parseCleanRecords(rest []byte, count int32, out []cleanRecord) ([]cleanRecord, error) {
	if err := batch.WalkRecords(rest, count, nil); err != nil {
		return out, err
	}
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(rest)
		if n <= 0 || length < 0 || length > int64(len(rest)-n) {
			return out, batch.ErrCorrupt
		}
		raw := rest[:n+int(length)]
		body := rest[n : n+int(length)]
		rest = rest[n+int(length):]
		r := cleanRecord{raw: raw}
		if len(body) < 1 {
			return out, batch.ErrCorrupt
		}
		p := body[1:] // attributes
		var k int
		if r.timestampDelta, k = binary.Varint(p); k <= 0 {
			return out, batch.ErrCorrupt
		}
		p = p[k:]
		if r.offsetDelta, k = binary.Varint(p); k <= 0 {
			return out, batch.ErrCorrupt
		}
		p = p[k:]
		keyLen, k := binary.Varint(p)
		if k <= 0 || keyLen < -1 || keyLen > int64(len(p)-k) {
			return out, batch.ErrCorrupt
		}
		p = p[k:]
		if keyLen >= 0 {
			r.key, r.hasKey = p[:keyLen], true
			p = p[keyLen:]
		}
		valueLen, k := binary.Varint(p)
		if k <= 0 || valueLen < -1 {
			return out, batch.ErrCorrupt
		}
		r.nullValue = valueLen < 0
		out = append(out, r)
	}
	return out, nil
}

// cleanCodecMaxSize bounds a decompressed records section the cleaner accepts (a batch never
// exceeds a segment, at most 2 GiB; a decompressed batch is bounded the same way).
const cleanCodecMaxSize = compress.MaxSizeLimit

// batchRecords returns the (decompressed) records section of the batch b with header h.
func batchRecords(h *batch.Header, b []byte) ([]byte, error) {
	rest := b[batch.HeaderSize:h.Size()]
	if h.Compression() == 0 {
		return rest, nil
	}
	return compress.Decompress(h.Compression(), rest, cleanCodecMaxSize)
}

// cleanDecision is what the filter needs to know about the log.
type cleanDecision struct {
	m *CleanerMap
	// tombstoneHorizon: a tombstone whose timestamp is below it is removed (now -
	// delete.retention.ms).
	tombstoneHorizon int64
	// producerLast maps each producer in the log's producer state to the last offset of its
	// newest batch: that batch is kept (empty if need be) so the producer's sequence survives.
	producerLast map[int64]int64
	// truncations is Log.truncations when the map was started.
	truncations uint64
	// aborted are the aborted transactions of the cleanable part: their records go.
	aborted abortedSpans
	// oldestTombstone is the timestamp of the oldest tombstone the clean kept (MaxInt64:
	// none).
	oldestTombstone int64
	// out and body are filterBatch's buffers for rebuilt batches, records its parsed records,
	// scanBuf writeCleaned's read window: reused from batch to batch and segment to segment.
	out, body []byte
	records   []cleanRecord
	scanBuf   []byte
	// writeBuf gathers writeCleaned's output (cleanWriteChunk at a time).
	writeBuf []byte
}

// cleanWriteChunk is how much of a cleaned segment is gathered before it is written: one
// write per chunk rather than one per batch.
const cleanWriteChunk = 256 << 10

// filterBatch returns the cleaned form of batch b (header h): b itself when every record
// stays, nil when the batch goes, or a rebuilt batch with the same base offset, last offset
// delta, producer fields and codec holding only the records that stay, valid until the next
// call. removed counts the records dropped.
func (d *cleanDecision) filterBatch(h *batch.Header, b []byte) (out []byte, removed int, err error) {
	if h.IsControl() {
		return b, 0, nil // markers stay (Kafka removes them once their data is gone; sluice keeps them)
	}
	records, err := batchRecords(h, b)
	if err != nil {
		return nil, 0, err
	}
	recs, err := parseCleanRecords(records, h.RecordCount, d.records[:0])
	d.records = recs[:0]
	if err != nil {
		return nil, 0, err
	}
	logAppendTime := h.Attributes&batch.AttrTimestampType != 0
	kept := recs[:0]
	if d.aborted.contains(h) {
		recs = nil // an aborted transaction's records all go
		removed = int(h.RecordCount)
	}
	for _, r := range recs {
		offset := h.BaseOffset + r.offsetDelta
		ts := h.BaseTimestamp + r.timestampDelta
		if logAppendTime {
			ts = h.MaxTimestamp
		}
		switch {
		case !r.hasKey:
			// As Kafka's cleaner: a keyless record in a compacted log is invalid and dropped.
		case d.m.getHash(d.m.hash(r.key)) > offset:
			// Superseded by a newer record with the same key.
		case r.nullValue && ts < d.tombstoneHorizon:
			// A tombstone older than delete.retention.ms.
		default:
			if r.nullValue {
				d.oldestTombstone = min(d.oldestTombstone, ts)
			}
			kept = append(kept, r)
			continue
		}
		removed++
	}
	if removed == 0 {
		return b, 0, nil
	}
	if len(kept) == 0 {
		if last, ok := d.producerLast[h.ProducerID]; !ok || !h.HasProducerID() || last != h.LastOffset() {
			return nil, removed, nil
		}
		// As Kafka: the producer's last batch stays, empty, so its sequence is not lost.
	}
	// The rebuilt batch goes into d.out, reused batch after batch: the caller writes it out
	// before it filters the next one.
	out = append(d.out[:0], b[:batch.HeaderSize]...)
	if codec := h.Compression(); codec != 0 && len(kept) > 0 {
		body := d.body[:0]
		for _, r := range kept {
			body = append(body, r.raw...)
		}
		d.body = body
		if out, err = compress.Compress(codec, out, body, 0); err != nil {
			return nil, 0, err
		}
	} else {
		for _, r := range kept {
			out = append(out, r.raw...)
		}
	}
	d.out = out
	batch.SetLength(out, int32(len(out)-batch.LogOverhead))
	binary.BigEndian.PutUint32(out[57:], uint32(len(kept))) // recordCount
	if len(kept) == 0 {
		batch.SetCompression(out, 0) // an empty batch has no compressed section
	}
	binary.BigEndian.PutUint32(out[17:], batch.CRC(out))
	return out, removed, nil
}

// abortedSpans are aborted transactions by producer ID, [first offset, marker offset].
type abortedSpans map[int64][]txnSpan

// contains reports whether the data batch h belongs to an aborted transaction (a producer's
// transactions never overlap, so its offset inside one of the producer's spans decides).
func (a abortedSpans) contains(h *batch.Header) bool {
	if !h.IsTransactional() || h.IsControl() {
		return false
	}
	for _, s := range a[h.ProducerID] {
		if s.first <= h.BaseOffset && h.BaseOffset <= s.last {
			return true
		}
	}
	return false
}

// abortedSpans collects the aborted transactions from the .txnindex files that began below
// upTo.
func (l *Log) abortedSpans(from, upTo int64) abortedSpans {
	out := abortedSpans{}
	for _, a := range l.AbortedTransactions(from, upTo) {
		out[a.ProducerID] = append(out[a.ProducerID], txnSpan{first: a.FirstOffset, last: a.LastOffset})
	}
	return out
}

// CleanableState is what the cleaner's scheduler looks at: the dirty ratio of the cleanable
// part of the log (dirty bytes / cleanable bytes) and whether some dirty segment is older
// than max.compaction.lag.ms (it must be cleaned whatever the ratio). ok is false for a log
// that is not compacted or has nothing cleanable.
func (l *Log) CleanableState(upTo int64) (dirtyRatio float64, overdue bool, ok bool) {
	cfg := l.cfg()
	if !cfg.Compact {
		return 0, false, false
	}
	rp, err := l.refreshRecoveryPoint()
	if err != nil {
		return 0, false, false
	}
	now := l.now().UnixMilli()
	l.mu.RLock()
	defer l.mu.RUnlock()
	firstDirty := max(l.firstDirty.Load(), l.mu.logStart)
	limit := l.cleanableLimitLocked(&cfg, now, min(upTo, rp))
	var clean, dirty int64
	segs := l.mu.segments
	for i := 0; i+1 < len(segs) && segs[i+1].baseOffset <= limit; i++ {
		s := segs[i]
		if segs[i+1].baseOffset <= firstDirty {
			clean += s.size
			continue
		}
		dirty += s.size
		if cfg.MaxCompactionLagMs > 0 && s.maxTimestamp >= 0 && now-s.maxTimestamp > cfg.MaxCompactionLagMs {
			overdue = true
		}
	}
	if dirty == 0 {
		// A clean log is due again when a tombstone it kept has outlived delete.retention.ms.
		if clean > 0 && now >= l.tombstonesDueAt.Load() {
			return 0, true, true
		}
		return 0, false, false
	}
	return float64(dirty) / float64(clean+dirty), overdue, true
}

// cleanableLimitLocked is the first offset the cleaner must not touch: the active segment's
// base, upTo (the caller's bound and the recovery point: cleaned segments must lie below it,
// see the package doc), and the base of the first segment younger than min.compaction.lag.ms.
// REQUIRES: mu held (shared suffices).
func (l *Log) cleanableLimitLocked(cfg *Config, now, upTo int64) int64 {
	limit := min(l.active().baseOffset, upTo)
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range l.mu.segments {
			if s.largestTimestamp() > now-cfg.MinCompactionLagMs {
				limit = min(limit, s.baseOffset)
				break
			}
		}
	}
	return limit
}

// Clean compacts the log once, as Kafka's LogCleaner cleans one log: it builds a map of the
// newest offset of each key over the dirty part of the cleanable segments (from the first
// dirty offset on, as far as the map holds), then rewrites every segment below the end of the
// map keeping, per key, only the newest record (and tombstones younger than
// delete.retention.ms). Offsets are never renumbered. Each rewritten segment is swapped in
// with the .cleaned/.swap protocol (see the package doc). Appends and reads go on meanwhile:
// the active segment is never touched. A log whose cleanup.policy lacks compact is left alone.
func (l *Log) Clean(opts CleanOptions) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var res CleanResult
	cfg := l.cfg()
	if !cfg.Compact {
		return res, nil
	}
	truncations := l.truncations.Load()
	rp, err := l.refreshRecoveryPoint()
	if err != nil {
		return res, err
	}
	now := l.now().UnixMilli()
	l.mu.RLock()
	segs := append([]*segment(nil), l.mu.segments...)
	logStart := l.mu.logStart
	limit := l.cleanableLimitLocked(&cfg, now, min(opts.UpTo, rp))
	l.mu.RUnlock()
	firstDirty := max(l.firstDirty.Load(), logStart)
	res.FirstDirtyOffset = firstDirty
	n := 0 // segs[:n] are cleanable
	for n+1 < len(segs) && segs[n+1].baseOffset <= limit {
		n++
	}
	if n == 0 {
		return res, nil
	}
	// With no dirty part, a clean only removes the tombstones that have outlived
	// delete.retention.ms: an empty map drops nothing else.
	tombstonesOnly := segs[n].baseOffset <= firstDirty
	if tombstonesOnly && now < l.tombstonesDueAt.Load() {
		return res, nil
	}

	// Build the map over the dirty part.
	m := opts.Map
	if m == nil {
		if tombstonesOnly {
			m = NewCleanerMap(0, 0) // stays empty
		} else {
			m = NewCleanerMap(opts.MapBytes, opts.LoadFactor)
		}
	}
	m.reset()
	mapEnd := segs[n].baseOffset // the first offset not in the map
	// Records of aborted transactions neither enter the map nor stay (Kafka's cleaner).
	aborted := l.abortedSpans(logStart, segs[n].baseOffset)
	var scratch []cleanRecord
	var scanBuf []byte
	full := false
	for i := 0; i < n && !full && !tombstonesOnly; i++ {
		s := segs[i]
		if segs[i+1].baseOffset <= firstDirty {
			continue
		}
		sc := scanner{f: s.log, size: s.size, buf: scanBuf[:0]} // empty: nothing of it is cached
		for pos := int64(0); pos < s.size; {
			b, h, err := sc.next(pos, true)
			if err != nil {
				return res, fmt.Errorf("logstore: clean %s: segment %d at %d: %w", l.dir, s.baseOffset, pos, err)
			}
			if opts.Throttle != nil {
				if err := opts.Throttle(len(b)); err != nil {
					return res, err
				}
			}
			pos += h.Size()
			if h.LastOffset() < firstDirty || h.IsControl() || aborted.contains(&h) {
				continue
			}
			records, err := batchRecords(&h, b)
			if err != nil {
				return res, fmt.Errorf("logstore: clean %s: batch %d: %w", l.dir, h.BaseOffset, err)
			}
			if scratch, err = parseCleanRecords(records, h.RecordCount, scratch[:0]); err != nil {
				return res, fmt.Errorf("logstore: clean %s: batch %d: %w", l.dir, h.BaseOffset, err)
			}
			// A batch goes into the map whole or not at all, so the map ends at a batch edge.
			newKeys := 0 // an upper bound: a key repeated in the batch counts each time
			for i := range scratch {
				if r := &scratch[i]; r.hasKey {
					r.hash = m.hash(r.key) // once per record, for the lookup and the put
					if m.getHash(r.hash) < 0 {
						newKeys++
					}
				}
			}
			if m.used+newKeys > m.capacity {
				mapEnd, full = h.BaseOffset, true
				break
			}
			for _, r := range scratch {
				if r.hasKey {
					m.putHash(r.hash, h.BaseOffset+r.offsetDelta)
				}
			}
		}
		scanBuf = sc.buf
	}
	if tombstonesOnly {
		mapEnd = firstDirty
	} else if mapEnd <= firstDirty {
		return res, fmt.Errorf("logstore: clean %s: log.cleaner.dedupe.buffer.size too small for one batch at offset %d", l.dir, firstDirty)
	}

	d := &cleanDecision{m: m, tombstoneHorizon: now - cfg.DeleteRetentionMs, producerLast: map[int64]int64{},
		truncations: truncations, oldestTombstone: math.MaxInt64, aborted: aborted}
	l.appendMu.Lock()
	for id, e := range l.producers.producers {
		if len(e.Batches) > 0 {
			d.producerLast[id] = e.Batches[len(e.Batches)-1].LastOffset
		}
	}
	l.appendMu.Unlock()

	// Rewrite every segment that holds offsets below mapEnd, oldest first.
	cleanedWanted := 0 // segs[:cleanedWanted] are rewritten
	for cleanedWanted < n && segs[cleanedWanted].baseOffset < mapEnd {
		cleanedWanted++
	}
	// In groups of cleanSyncGroup: write the cleaned copies, fsync them together, then swap
	// them in together (swapInGroup).
	for i := 0; i < cleanedWanted; {
		var group []*cleanedSegment
		discard := func(from int) {
			for _, c := range group[from:] {
				c.closeFiles()
				c.remove()
			}
		}
		for ; i < cleanedWanted && len(group) < cleanSyncGroup; i++ {
			c, err := l.writeCleaned(segs[i], d, opts.Throttle)
			if err != nil {
				discard(0)
				return res, err
			}
			group = append(group, c)
		}
		if err := l.syncCleaned(group); err != nil {
			discard(0)
			return res, l.cleanFail(err)
		}
		swapped, err := l.swapInGroup(group, d.truncations)
		for _, c := range group[:swapped] {
			res.Cleaned = true
			res.Segments++
			res.BytesRead += c.stats.read
			res.BytesWritten += c.stats.written
			res.RecordsRemoved += c.stats.removed
		}
		if errors.Is(err, errCleanAborted) {
			break // the log changed under the cleaner (truncation, retention): next time
		}
		if err != nil {
			return res, err
		}
	}
	if res.Segments > 0 && res.Segments == cleanedWanted {
		due := int64(math.MaxInt64)
		if d.oldestTombstone < math.MaxInt64 && cfg.DeleteRetentionMs < math.MaxInt64-d.oldestTombstone {
			due = d.oldestTombstone + cfg.DeleteRetentionMs + 1
		}
		l.tombstonesDueAt.Store(due)
	}
	if res.Segments > 0 && !tombstonesOnly {
		// The map covered [firstDirty, mapEnd): what comes after is dirty.
		if err := l.checkpointFirstDirty(mapEnd, truncations); err != nil {
			return res, err
		}
		res.FirstDirtyOffset = l.firstDirty.Load()
	}
	return res, nil
}

// errCleanAborted: the segment being cleaned left the log (or changed) while it was cleaned.
var errCleanAborted = errors.New("logstore: cleaning aborted: the segment changed")

type segmentCleanStats struct{ read, written, removed int64 }

// refreshRecoveryPoint returns the recovery point: finished background fsyncs of rolled
// segments (rollSync) checkpoint it as they complete, so recently rolled segments become
// cleanable.
func (l *Log) refreshRecoveryPoint() (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	// Finished rollSyncs checkpointed it themselves.
	rp, _ := l.recoveryPointNow()
	return rp, nil
}

// cleanedSegment is a cleaned copy written beside its segment (.cleaned files, open, not yet
// synced), waiting for syncCleaned and swapIn.
type cleanedSegment struct {
	seg, out *segment
	size     int64 // seg's size when it was cleaned
	// synced: syncCleaned made the files durable (it leaves out empty copies of segments
	// that are deleted rather than swapped in).
	synced bool
	stats  segmentCleanStats
	files  []File
	// remove deletes the .cleaned files (an aborted or failed clean).
	remove func()
}

func (c *cleanedSegment) closeFiles() {
	for _, f := range c.files {
		f.Close()
	}
	c.files = nil
}

// writeCleaned writes the cleaned copy of seg beside it (.cleaned files, left open and
// unsynced). On error nothing of it is left.
func (l *Log) writeCleaned(seg *segment, d *cleanDecision, throttle func(int) error) (*cleanedSegment, error) {
	var st segmentCleanStats
	l.mu.RLock()
	size := seg.size
	cfg := l.mu.cfg
	l.mu.RUnlock()
	// The cleaned files are written directly through the FS (not the file cache): they are
	// written once, synced and closed.
	fsys, _ := segmentFileCache(l.fs)
	create := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	var files []File
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	removeCleaned := func() {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if err := fsys.Remove(fileName(l.dir, seg.baseOffset, suffix+cleanedSuffix)); err != nil && !isNotExist(err) {
				l.logger.Warn("logstore: could not remove a cleaned file", "dir", l.dir, "err", err)
			}
		}
	}
	out := &segment{
		baseOffset:            seg.baseOffset,
		index:                 &offsetIndex{baseOffset: seg.baseOffset, maxEntries: maxIndexEntries(&cfg, offsetIndexEntrySize)},
		timeIndex:             &timeIndex{baseOffset: seg.baseOffset, maxEntries: maxIndexEntries(&cfg, timeIndexEntrySize)},
		nextOffset:            seg.baseOffset,
		maxTimestamp:          -1,
		offsetOfMaxTimestamp:  -1,
		rollingBasedTimestamp: -1,
	}
	// The .cleaned files are created when the first kept bytes are written (the indexes are
	// built in memory until syncCleaned writes them): a segment of which nothing stays, which
	// swapInGroup deletes, costs no files at all, unless it is the log's first (kept, empty).
	openFiles := func() error {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			f, err := fsys.OpenFile(fileName(l.dir, seg.baseOffset, suffix+cleanedSuffix), create, 0o644)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		out.log, out.index.file, out.timeIndex.file = files[0], files[1], files[2]
		return nil
	}
	sc := scanner{f: seg.log, size: size, buf: d.scanBuf[:0]} // empty: nothing of it is cached
	defer func() { d.scanBuf = sc.buf }()
	// The kept batches are gathered in d.writeBuf and written cleanWriteChunk at a time:
	// [flushed, wpos) is in the buffer, not yet in the file.
	wbuf := d.writeBuf[:0]
	defer func() { d.writeBuf = wbuf[:0] }()
	var wpos, flushed int64
	flush := func() error {
		if len(wbuf) == 0 {
			return nil
		}
		if files == nil {
			if err := openFiles(); err != nil {
				return err
			}
		}
		if _, err := out.log.WriteAt(wbuf, flushed); err != nil {
			return err
		}
		flushed += int64(len(wbuf))
		wbuf = wbuf[:0]
		return nil
	}
	for pos := int64(0); pos < size; {
		b, h, err := sc.next(pos, true)
		if err != nil {
			closeFiles()
			removeCleaned()
			return nil, fmt.Errorf("logstore: clean %s: segment %d at %d: %w", l.dir, seg.baseOffset, pos, err)
		}
		pos += h.Size()
		if throttle != nil {
			if err := throttle(len(b)); err != nil {
				closeFiles()
				removeCleaned()
				return nil, err
			}
		}
		kept, removed, err := d.filterBatch(&h, b)
		if err != nil {
			closeFiles()
			removeCleaned()
			return nil, fmt.Errorf("logstore: clean %s: batch %d: %w", l.dir, h.BaseOffset, err)
		}
		st.removed += int64(removed)
		if kept == nil {
			continue
		}
		kh, err := batch.ParseHeader(kept)
		if err != nil {
			closeFiles()
			removeCleaned()
			return nil, err
		}
		if len(wbuf) > 0 && len(wbuf)+len(kept) > cleanWriteChunk {
			if err := flush(); err != nil {
				closeFiles()
				removeCleaned()
				return nil, l.cleanFail(err)
			}
		}
		wbuf = append(wbuf, kept...)
		if throttle != nil {
			if err := throttle(len(kept)); err != nil {
				closeFiles()
				removeCleaned()
				return nil, err
			}
		}
		if err := out.indexBatchLocked(&kh, wpos, cfg.IndexIntervalBytes); err != nil {
			closeFiles()
			removeCleaned()
			return nil, l.cleanFail(err)
		}
		wpos += kh.Size()
		out.size = wpos
	}
	if err := flush(); err != nil {
		closeFiles()
		removeCleaned()
		return nil, l.cleanFail(err)
	}
	if files == nil {
		l.mu.RLock()
		first := l.mu.segments[0] == seg
		l.mu.RUnlock()
		if first {
			if err := openFiles(); err != nil {
				closeFiles()
				removeCleaned()
				return nil, l.cleanFail(err)
			}
		}
	}
	st.read, st.written = size, wpos
	// As the source segment: the final time-index entry of a segment that is not active.
	if err := out.timeIndex.maybeAppendLocked(out.maxTimestamp, out.offsetOfMaxTimestamp, true); err != nil {
		closeFiles()
		removeCleaned()
		return nil, l.cleanFail(err)
	}
	return &cleanedSegment{seg: seg, out: out, size: size, stats: st, files: files, remove: removeCleaned}, nil
}

// cleanSyncGroup is how many cleaned segments are written before they are fsynced together
// (each segment's files stay open until then: at most 3 × cleanSyncGroup files).
const cleanSyncGroup = 8

// syncCleaned makes the cleaned segments' files durable before any of them is swapped in:
// the indexes written out, then every file fsynced concurrently. Their order does not matter
// (each swap needs its segment's three files durable and starts only when all are), and
// concurrent fsyncs share the file system's journal commits instead of waiting for one each.
// A cleaned copy that holds nothing is not synced (writeCleaned did not even create its files
// unless its segment was the first): swapInGroup deletes its segment instead of
// swapping it in, unless the segment is the log's first, whose empty copy is swapped in (its
// base is the log start), so the first segment's copy is synced whatever it holds. A segment
// that becomes the first after this (retention deleted those before it) and whose copy was
// not synced is left uncleaned by swapInGroup. The files are closed afterwards, whatever
// happened.
func (l *Log) syncCleaned(group []*cleanedSegment) error {
	defer func() {
		for _, c := range group {
			c.closeFiles()
		}
	}()
	l.mu.RLock()
	first := l.mu.segments[0]
	l.mu.RUnlock()
	var files []File
	for _, c := range group {
		if len(c.files) == 0 || c.out.size == 0 && c.seg != first {
			continue // deleted, not swapped in
		}
		c.synced = true
		if err := c.out.index.persist(); err != nil {
			return err
		}
		if err := c.out.timeIndex.persist(); err != nil {
			return err
		}
		files = append(files, c.out.files()...)
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.Sync()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// swapInGroup replaces the segments of group (oldest first, their cleaned copies written and
// fsynced) by their cleaned copies, with the renames of the package doc ("Compaction") made
// for every segment of the group at each step, so that the group shares the directory
// fsyncs between the steps: the .cleaned → .swap renames of the indexes, a directory fsync,
// the .log renames (each segment's commit point), a directory fsync; then the same for .swap
// → final names, indexes first. Every segment still goes through the same durable states in
// the same order as when swapped alone, and recovery completes or removes each segment's
// files on their own, so a crash leaves each segment wholly old or wholly cleaned.
//
// Only the segments up to the first one that left the log or changed (and none after a
// truncation) are swapped; the others' cleaned files are removed and errCleanAborted
// returned. swapped is how many segments of group were replaced (or, when nothing of them
// stayed, deleted).
func (l *Log) swapInGroup(group []*cleanedSegment, truncations uint64) (swapped int, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	removeCleaned := func(cs []*cleanedSegment) error {
		for _, c := range cs {
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				if err := l.fs.Remove(fileName(l.dir, c.seg.baseOffset, suffix+cleanedSuffix)); err != nil && !isNotExist(err) {
					return l.fail(err)
				}
			}
		}
		return nil
	}
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	// indexOf is seg's position in the log, -1 if it left it. REQUIRES: l.mu held.
	indexOf := func(seg *segment) int {
		for i, s := range l.mu.segments[:len(l.mu.segments)-1] {
			if s == seg {
				return i
			}
		}
		return -1
	}
	l.mu.RLock()
	n := 0
	if l.truncations.Load() == truncations {
		for n < len(group) {
			k := indexOf(group[n].seg)
			// An unsynced (empty) copy can only delete its segment, which the first may not.
			if k < 0 || group[n].seg.size != group[n].size || k == 0 && !group[n].synced {
				break
			}
			n++
		}
	}
	l.mu.RUnlock()
	if err := removeCleaned(group[n:]); err != nil {
		return 0, err
	}
	var full []*cleanedSegment // segments that are replaced, not deleted
	emptied := 0
	for _, c := range group[:n] {
		l.mu.RLock()
		k := indexOf(c.seg)
		l.mu.RUnlock()
		if c.out.size > 0 || k == 0 {
			full = append(full, c)
			continue
		}
		// Nothing of the segment stays: it goes, rather than stay as an empty file forever
		// (its offsets become a gap at the end of the previous segment). The first segment
		// stays even when empty: its base is the log start.
		if err := removeCleaned([]*cleanedSegment{c}); err != nil {
			return 0, err
		}
		l.mu.Lock()
		l.mu.segments = append(l.mu.segments[:k:k], l.mu.segments[k+1:]...)
		l.mu.Unlock()
		if err := c.seg.removeFiles(l.fs, l.dir); err != nil {
			return 0, l.fail(err)
		}
		l.scheduleCloseLocked([]*segment{c.seg})
		emptied++
	}
	// The removals share one directory fsync: the swap's first one (after the index renames,
	// before any .log rename commits a segment of the group), or this one when nothing is
	// swapped. Either way they are durable before a later segment's cleaned copy is committed,
	// so a record they dropped in favour of a later one (or of a tombstone the later clean
	// removes) cannot come back after a crash while that later one is gone.
	if emptied > 0 && len(full) == 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return 0, l.fail(err)
		}
	}
	rename := func(suffix, from, to string) func(*cleanedSegment) error {
		return func(c *cleanedSegment) error {
			base := c.seg.baseOffset
			return l.fs.Rename(fileName(l.dir, base, suffix+from), fileName(l.dir, base, suffix+to))
		}
	}
	syncDir := func() error { return l.fs.SyncDir(l.dir) }
	detach := func(c *cleanedSegment) error { c.seg.detachFiles(); return nil }
	// Each step is made for every segment of full; nil perSegment is a directory fsync.
	steps := []func(*cleanedSegment) error{
		rename(indexSuffix, cleanedSuffix, swapSuffix), rename(timeIndexSuffix, cleanedSuffix, swapSuffix), nil,
		rename(logSuffix, cleanedSuffix, swapSuffix), nil, // commit
		detach,
		rename(indexSuffix, swapSuffix, ""), rename(timeIndexSuffix, swapSuffix, ""), nil,
		rename(logSuffix, swapSuffix, ""), nil,
	}
	if len(full) > 0 {
		for _, step := range steps {
			if step == nil {
				if err := syncDir(); err != nil {
					return 0, l.fail(err)
				}
				continue
			}
			for _, c := range full {
				if err := step(c); err != nil {
					return 0, l.fail(err)
				}
			}
		}
	}
	for _, c := range full {
		seg, out := c.seg, c.out
		fresh, err := openSegmentFiles(l.fs, l.dir, seg.baseOffset, false, &l.mu.cfg)
		if err != nil {
			return 0, l.fail(err)
		}
		l.mu.Lock()
		fresh.index.entries, fresh.index.written = out.index.entries, len(out.index.entries)
		fresh.timeIndex.entries, fresh.timeIndex.written = out.timeIndex.entries, len(out.timeIndex.entries)
		fresh.size, fresh.nextOffset = out.size, out.nextOffset
		fresh.maxTimestamp, fresh.offsetOfMaxTimestamp = out.maxTimestamp, out.offsetOfMaxTimestamp
		fresh.bytesSinceLastIndexEntry = out.bytesSinceLastIndexEntry
		fresh.rollingBasedTimestamp = out.rollingBasedTimestamp
		fresh.created, fresh.lastModified = seg.created, seg.lastModified
		fresh.txn, seg.txn = seg.txn, txnIndex{} // markers are kept by a clean, so are their entries
		l.mu.segments[indexOf(seg)] = fresh
		l.mu.Unlock()
		l.scheduleCloseLocked([]*segment{seg})
	}
	if n < len(group) {
		return n, errCleanAborted
	}
	return n, nil
}

// detachFiles makes seg's files outlive their replacement: they are pinned open (so FileSlices
// handed to readers keep reading the old bytes) and never reopened by path, which now names
// the cleaned file.
// REQUIRES: Log.appendMu held.
func (s *segment) detachFiles() {
	if cf, ok := s.log.(*cachedFile); ok && !s.logHeld {
		if _, err := cf.pin(); err == nil {
			s.logHeld = true
		}
	}
	// The .txnindex is not replaced by a clean: it moves to the cleaned segment (swapIn).
	for _, f := range []File{s.log, s.indexFile(), s.timeIndexFile()} {
		if cf, ok := f.(*cachedFile); ok {
			cf.markRemoved()
		}
	}
}

// completeSwaps finishes an interrupted swap found on open: a <base>.log.swap is a committed
// cleaned segment, so any <base>.index.swap / .timeindex.swap are renamed over their final
// names first, then the .log.swap. Index .swap files without a .log.swap belong to an
// uncommitted swap and are removed later with the other leftovers.
// REQUIRES: called from load only.
func (l *Log) completeSwaps(names []string) (bool, error) {
	done := false
	for _, name := range names {
		base, ok := parseOffsetName(name, logSuffix+swapSuffix)
		if !ok {
			continue
		}
		// Indexes first and made durable, so a .log.swap still on disk means the swap is not
		// complete, whatever the file system reordered.
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, "", logSuffix} {
			if suffix == "" {
				if err := l.fs.SyncDir(l.dir); err != nil {
					return done, err
				}
				continue
			}
			from := fileName(l.dir, base, suffix+swapSuffix)
			if err := l.fs.Rename(from, fileName(l.dir, base, suffix)); err != nil && !isNotExist(err) {
				return done, err
			}
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return done, err
		}
		l.logger.Info("logstore: completed an interrupted swap of a cleaned segment", "dir", l.dir, "segment", base)
		done = true
	}
	return done, nil
}

// checkpointFirstDirty records that the log is clean below offset, unless a truncation came
// since the clean began.
func (l *Log) checkpointFirstDirty(offset int64, truncations uint64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.truncations.Load() != truncations {
		return nil
	}
	if err := l.usableLocked(); err != nil {
		return err
	}
	if err := WriteFileAtomic(l.fs, l.dir, cleanerCheckpointFile, encodeOffsetCheckpoint(l.dir, offset)); err != nil {
		return l.cleanFail(err)
	}
	l.firstDirty.Store(offset)
	return nil
}

// loadFirstDirty reads the cleaner checkpoint on open. A value beyond the log end (a crash
// after a truncation) is clamped to it: records counted clean that are not cost only a less
// thorough clean, never a record.
// REQUIRES: called from load.
func (l *Log) loadFirstDirty() {
	if off, ok := readOffsetCheckpoint(l.fs, l.dir, cleanerCheckpointFile); ok {
		l.firstDirty.Store(max(0, min(off, l.mu.logEnd)))
	}
}

// noteTruncationLocked tells the cleaner the log is cut at offset: what follows is dirty, and
// a Clean in progress aborts its swaps.
// REQUIRES: appendMu held.
func (l *Log) noteTruncationLocked(offset int64) {
	l.truncations.Add(1)
	if l.firstDirty.Load() > offset {
		l.firstDirty.Store(offset)
	}
}

// cleanFail is fail for the cleaner: a log closed or deleted under it is not a storage failure.
func (l *Log) cleanFail(err error) error {
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return l.fail(err)
}
