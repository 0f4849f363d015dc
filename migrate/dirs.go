package migrate

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sluice/internal/batch"
)

// metaProps is a Kafka log directory's meta.properties.
type metaProps struct {
	Version     string
	ClusterID   string
	NodeID      int32
	DirectoryID string
	BrokerID    string // version 0 (ZooKeeper) directories
}

// readMetaProperties reads dir's meta.properties (Java properties syntax).
func readMetaProperties(dir string) (metaProps, error) {
	path := filepath.Join(dir, "meta.properties")
	data, err := readFileLimit(path, 64<<10)
	if err != nil {
		return metaProps{}, err
	}
	kv := parseProperties(string(data))
	mp := metaProps{Version: kv["version"], ClusterID: kv["cluster.id"], DirectoryID: kv["directory.id"], BrokerID: kv["broker.id"]}
	switch mp.Version {
	case "0":
		return mp, fmt.Errorf("%s: version 0 (broker.id %s): this is a ZooKeeper-mode Kafka directory. "+
			"Migrate the cluster to KRaft first with Kafka's own tools (Kafka 3.x, KIP-866), then run sluice migrate on the KRaft broker's directory", path, mp.BrokerID)
	case "1":
	default:
		return mp, fmt.Errorf("%s: unsupported version %q", path, mp.Version)
	}
	if mp.ClusterID == "" {
		return mp, fmt.Errorf("%s: no cluster.id", path)
	}
	id, err := strconv.ParseInt(kv["node.id"], 10, 32)
	if err != nil || id < 0 {
		return mp, fmt.Errorf("%s: node.id %q", path, kv["node.id"])
	}
	mp.NodeID = int32(id)
	return mp, nil
}

func parseProperties(s string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if i := strings.IndexAny(line, "=:"); i > 0 {
			kv[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
		}
	}
	return kv
}

// readOffsetCheckpoint reads Kafka's per-directory offset checkpoint ("0", a count, then
// "topic partition offset" lines). A missing or empty file is an empty map.
func readOffsetCheckpoint(path string) (map[string]int64, error) {
	data, err := readFileLimit(path, 64<<20)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseOffsetCheckpoint(path, data)
}

// parseOffsetCheckpoint parses the bytes of the offset checkpoint file path.
func parseOffsetCheckpoint(path string, data []byte) (map[string]int64, error) {
	out := map[string]int64{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return out, nil
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%s: not Kafka's offset checkpoint format (version 0)", path)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: count %q does not match %d entries", path, lines[1], len(lines)-2)
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		out[f[0]+"-"+f[1]] = off
	}
	return out, nil
}

// partitionReport is what verifying one partition directory found.
type partitionReport struct {
	Dir          string
	Segments     int
	Bytes        int64
	LogStart     int64 // first segment's base
	LogEnd       int64 // offset after the last batch
	MaxEpoch     int32 // the largest leader epoch in leader-epoch-checkpoint (-1: none)
	CRCChecked   int   // segments whose every batch's CRC was checked
	TopicIDInDir kafkaUUID
	Problems     []string
}

// verifyPartitionDir checks one partition directory as Kafka left it, reading and changing
// nothing but the files' bytes it reads: partition.metadata, leader-epoch-checkpoint, and for
// every segment its offset and time indexes (present, whole entries) and its batch chain
// (each batch header: magic 2, a length that fits, offsets increasing and at or above the
// segment's base; the chain ends exactly at the end of the file). Segments that end above the
// recovery point (not known flushed; after a clean shutdown only the newest) have the whole
// chain walked and every batch's CRC checked, as Kafka's recovery would; checkAllCRCs does that
// for every segment. Flushed segments, as Kafka trusts them, have the chain walked from the
// batch their offset index's last entry points at (walkSegment), so the cost follows the
// number of segments, not their bytes or batches.
func verifyPartitionDir(dir string, recoveryPoint int64, checkAllCRCs bool) partitionReport {
	rep := partitionReport{Dir: dir, MaxEpoch: -1}
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	if data, err := readFileLimit(filepath.Join(dir, "partition.metadata"), 4096); err != nil {
		problem("partition.metadata: %v", err)
	} else {
		kv := parseColonProperties(string(data))
		b, err := base64.RawURLEncoding.DecodeString(kv["topic_id"])
		if kv["version"] != "0" || err != nil || len(b) != 16 {
			problem("partition.metadata: not version 0 with a topic_id")
		} else {
			copy(rep.TopicIDInDir[:], b)
		}
	}
	if data, err := readFileLimit(filepath.Join(dir, "leader-epoch-checkpoint"), 16<<20); err == nil {
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for _, l := range lines[min(2, len(lines)):] {
			f := strings.Fields(l)
			if len(f) == 2 {
				if e, err := strconv.ParseInt(f[0], 10, 32); err == nil {
					rep.MaxEpoch = max(rep.MaxEpoch, int32(e))
				}
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		problem("leader-epoch-checkpoint: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		problem("%v", err)
		return rep
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".log") && len(name) == 24 {
			base, err := strconv.ParseInt(name[:20], 10, 64)
			if err != nil {
				problem("segment name %s", name)
				continue
			}
			bases = append(bases, base)
		}
		if strings.HasSuffix(name, ".swap") || strings.HasSuffix(name, ".cleaned") || strings.HasSuffix(name, ".deleted") {
			problem("%s: an interrupted compaction or deletion of Kafka's; start Kafka once and stop it cleanly to finish it", name)
		}
	}
	slices.Sort(bases)
	if len(bases) == 0 {
		problem("no segment (.log) files")
		return rep
	}
	rep.LogStart = bases[0]
	prevEnd := int64(-1)
	for i, base := range bases {
		stem := filepath.Join(dir, fmt.Sprintf("%020d", base))
		for _, idx := range []struct {
			ext   string
			entry int64
		}{{".index", 8}, {".timeindex", 12}} {
			info, err := os.Stat(stem + idx.ext)
			if err != nil {
				problem("%s: missing index: %v", filepath.Base(stem+idx.ext), err)
			} else if info.Size()%idx.entry != 0 {
				problem("%s: %d bytes is not a whole number of %d-byte entries", filepath.Base(stem+idx.ext), info.Size(), idx.entry)
			}
		}
		if base < prevEnd {
			problem("%020d.log: base offset %d is below the previous segment's end %d", base, base, prevEnd)
		}
		// A segment ends below the next one's base: it is wholly below the recovery point
		// (flushed, trusted by Kafka's recovery) when that base is.
		flushed := i+1 < len(bases) && bases[i+1] <= recoveryPoint
		end, size, crcs, err := walkSegment(stem+".log", stem+".index", base, checkAllCRCs || !flushed)
		rep.Bytes += size
		rep.Segments++
		if crcs {
			rep.CRCChecked++
		}
		if err != nil {
			problem("%020d.log: %v (if Kafka did not stop cleanly, start it once and stop it cleanly: its recovery cuts a torn tail; otherwise the segment is damaged)", base, err)
			continue
		}
		if end > base {
			prevEnd = end
		} else {
			prevEnd = max(prevEnd, base)
		}
	}
	rep.LogEnd = max(prevEnd, bases[len(bases)-1])
	return rep
}

// walkSegment follows the batch chain of one segment file and returns the offset after its
// last batch (base when empty) and the file's size. With checkCRC every batch is read whole
// and its CRC-32C checked from the file's start. Otherwise only the 61-byte headers are read,
// from the batch the offset index's last entry points at (indexStart) to the file's end, as
// Kafka trusts a flushed segment and its index: the cost is a few reads a segment, not one a
// batch; an index entry that does not point at a batch holding its offset means a walk from
// the start.
func walkSegment(path, indexPath string, base int64, checkCRC bool) (end, size int64, crcChecked bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return base, 0, false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return base, 0, false, err
	}
	size = info.Size()
	end = base
	var hdr [batch.HeaderSize]byte
	var buf []byte
	pos := int64(0)
	if !checkCRC {
		if p, first, ok := indexStart(f, size, indexPath, base); ok {
			pos, end = p, first
		}
	}
	for pos < size {
		if size-pos < batch.HeaderSize {
			return end, size, checkCRC, fmt.Errorf("truncated: %d bytes at byte %d are less than a batch header", size-pos, pos)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return end, size, checkCRC, err
		}
		h, err := batch.ParseHeader(hdr[:])
		if err != nil {
			return end, size, checkCRC, fmt.Errorf("batch at byte %d: %v", pos, err)
		}
		if pos+h.Size() > size {
			return end, size, checkCRC, fmt.Errorf("truncated: the batch at byte %d claims %d bytes, the file has %d", pos, h.Size(), size-pos)
		}
		if h.BaseOffset < end || h.LastOffsetDelta < 0 {
			return end, size, checkCRC, fmt.Errorf("batch at byte %d: offsets %d..%d do not follow %d", pos, h.BaseOffset, h.LastOffset(), end)
		}
		if checkCRC {
			buf = slices.Grow(buf[:0], int(h.Size()))[:h.Size()]
			if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
				return end, size, true, err
			}
			if batch.CRC(buf) != h.CRC {
				return end, size, true, fmt.Errorf("batch at byte %d (offsets %d..%d): CRC mismatch", pos, h.BaseOffset, h.LastOffset())
			}
		}
		end = h.NextOffset()
		pos += h.Size()
	}
	return end, size, checkCRC, nil
}

// indexStart reads the last entry of a segment's offset index (relative offset, byte
// position: Kafka indexes a batch's last offset at the batch's start) and returns the position
// and base offset of the batch it points at, when that batch's header is there, at or above the
// segment's base, and holds the entry's offset. ok is false for an empty, unreadable or
// inconsistent index (zero-filled, or from another file): the caller walks from the start.
func indexStart(f *os.File, size int64, indexPath string, base int64) (pos, first int64, ok bool) {
	idx, err := os.Open(indexPath)
	if err != nil {
		return 0, 0, false
	}
	defer idx.Close()
	info, err := idx.Stat()
	if err != nil || info.Size() < 8 || info.Size()%8 != 0 {
		return 0, 0, false
	}
	var entry [8]byte
	if _, err := idx.ReadAt(entry[:], info.Size()-8); err != nil {
		return 0, 0, false
	}
	rel, p := int64(binary.BigEndian.Uint32(entry[:4])), int64(binary.BigEndian.Uint32(entry[4:]))
	if p <= 0 || p+batch.HeaderSize > size {
		return 0, 0, false
	}
	var hdr [batch.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], p); err != nil {
		return 0, 0, false
	}
	h, err := batch.ParseHeader(hdr[:])
	if err != nil || h.BaseOffset < base || h.LastOffsetDelta < 0 || base+rel < h.BaseOffset || base+rel > h.LastOffset() {
		return 0, 0, false
	}
	return p, h.BaseOffset, true
}

// parseColonProperties parses partition.metadata's "key: value" lines.
func parseColonProperties(s string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv
}

// splitPartitionDirName splits "<topic>-<partition>".
func splitPartitionDirName(name string) (topic string, partition int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return name[:i], int32(p), true
}
