package migrate

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/internal/batch"
	"sluice/internal/compress"
)

// groupsIn lists the groups __consumer_offsets holds records of (offset commits, classic group
// metadata, and KIP-848 consumer group records, whose keys start with the group ID as well),
// for the report. Damage found here is reported by the partition checks, not here.
//
// newProtocol lists the groups with KIP-848 (or streams or share) group records, whose
// membership and assignment sluice's coordinator does not read back.
func groupsIn(dataDir string, im *kafkaImage) (groups, newProtocol []string) {
	id, ok := im.topicByName["__consumer_offsets"]
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	newSeen := map[string]bool{}
	for p := range im.topics[id].partitions {
		dir := filepath.Join(dataDir, fmt.Sprintf("__consumer_offsets-%d", p))
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".log") {
				continue
			}
			data, err := readFileLimit(filepath.Join(dir, e.Name()), maxMetadataFileBytes)
			if err != nil {
				continue
			}
			for pos := 0; pos < len(data); {
				h, err := batch.Check(data[pos:])
				if err != nil {
					break
				}
				records := data[pos+batch.HeaderSize : pos+int(h.Size())]
				pos += int(h.Size())
				if h.IsControl() {
					continue
				}
				if c := h.Compression(); c != 0 {
					if records, err = compress.Decompress(c, records, maxDecompressedBatch); err != nil {
						continue
					}
				}
				batch.WalkRecords(records, h.RecordCount, func(ri batch.RecordInfo) bool {
					if g, ok := groupOfKey(ri.Key); ok {
						seen[g] = true
						if int16(binary.BigEndian.Uint16(ri.Key)) >= 3 {
							newSeen[g] = true
						}
					}
					return true
				})
			}
		}
	}
	return sortedKeys(seen), sortedKeys(newSeen)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// groupOfKey returns the group of a __consumer_offsets record key: the key's int16 version
// (record type), then the group ID as a string (int16 length) for OffsetCommitKey (0, 1) and
// GroupMetadataKey (2), or a compact string for the flexible KIP-848 keys (3 and above).
func groupOfKey(key []byte) (string, bool) {
	if len(key) < 2 {
		return "", false
	}
	switch v := int16(binary.BigEndian.Uint16(key)); {
	case v == 0 || v == 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil {
			return "", false
		}
		return k.Group, true
	case v == 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil {
			return "", false
		}
		return k.Group, true
	case v >= 3:
		// KIP-848 keys are not flexible: GroupId is an int16-length string too.
		if len(key) < 4 {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(key[2:]))
		if 4+n > len(key) {
			return "", false
		}
		return string(key[4 : 4+n]), true
	}
	return "", false
}
