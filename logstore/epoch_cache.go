package logstore

import (
	"fmt"
	"sort"
	"strconv"
)

// epochEntry says: leader epoch Epoch wrote its first batch at StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Kafka's LeaderEpochFileCache: epoch → start offset, both strictly increasing,
// persisted as the text file leader-epoch-checkpoint ("0", count, "epoch offset" lines).
// Guarded by Log.mu; mutated with Log.appendMu held.
type epochCache struct {
	entries []epochEntry
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

func (c *epochCache) latestEpoch() int32 {
	if e, ok := c.latest(); ok {
		return e.Epoch
	}
	return -1
}

// assign records that epoch starts at offset, if epoch is newer than the latest; entries that
// conflict (start offset >= offset) are removed, as Kafka's assign does. Reports a change.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if e, ok := c.latest(); ok && e.Epoch >= epoch {
		return false
	}
	for len(c.entries) > 0 && c.entries[len(c.entries)-1].StartOffset >= offset {
		c.entries = c.entries[:len(c.entries)-1]
	}
	c.entries = append(c.entries, epochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// truncateFromEnd removes entries starting at or after endOffset (Kafka's truncateFromEnd).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for len(c.entries) > 0 && c.entries[len(c.entries)-1].StartOffset >= endOffset {
		c.entries = c.entries[:len(c.entries)-1]
	}
	return n != len(c.entries)
}

// truncateFromStart drops entries wholly before startOffset; the last of them is kept with its
// start moved to startOffset (Kafka's truncateFromStart).
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if i == 0 {
		return false
	}
	kept := c.entries[i-1]
	if i == 1 && kept.StartOffset == startOffset {
		return false
	}
	kept.StartOffset = startOffset
	c.entries = append([]epochEntry{kept}, c.entries[i:]...)
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache.endOffsetFor.
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == -1 {
		return -1, -1
	}
	if e, ok := c.latest(); ok && e.Epoch == requested {
		return requested, logEndOffset
	}
	// higher: first entry with epoch > requested; floor: last entry with epoch <= requested.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if i == len(c.entries) {
		return -1, -1
	}
	higher := c.entries[i]
	if i == 0 {
		return requested, higher.StartOffset
	}
	return c.entries[i-1].Epoch, higher.StartOffset
}

func (c *epochCache) encode() []byte {
	b := fmt.Appendf(nil, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		b = fmt.Appendf(b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b
}

func decodeEpochCache(data []byte) (epochCache, error) {
	var c epochCache
	lines, err := parseCheckpointLines(data, 2)
	if err != nil {
		return c, err
	}
	for _, f := range lines {
		epoch, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return epochCache{}, fmt.Errorf("logstore: bad leader-epoch-checkpoint line %q", f)
		}
		if n := len(c.entries); n > 0 && (c.entries[n-1].Epoch >= int32(epoch) || c.entries[n-1].StartOffset > off) {
			return epochCache{}, fmt.Errorf("logstore: leader-epoch-checkpoint not increasing")
		}
		c.entries = append(c.entries, epochEntry{Epoch: int32(epoch), StartOffset: off})
	}
	return c, nil
}

// epochFor returns the epoch whose range holds offset (the last entry starting at or below
// it), or -1.
func (c *epochCache) epochFor(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return -1
	}
	return c.entries[i-1].Epoch
}
