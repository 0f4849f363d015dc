package migrate

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sluice/internal/batch"
)

// BenchmarkPrepare measures Prepare (what `sluice migrate` costs before it writes anything) on
// one partition of segments×batches batches of batchKiB each, after a clean shutdown (the
// recovery point at the log end), plus a small active segment. A flushed segment costs its
// files' opens and the header reads from its offset index's last entry to its end; only the
// active segment is read whole for its CRCs. So the time follows the number of segments, not
// their batches or bytes: compare segments=20/batchKiB=16 with batchKiB=64 (4× the bytes) and
// with segments=80 (4× the segments and bytes). make migrate-big measures it on real Kafka
// directories (bench/results/2026-12-05-migrate.md).
//
//	go test ./migrate -run XXX -bench Prepare -benchtime 5x
func BenchmarkPrepare(b *testing.B) {
	for _, c := range []struct{ segments, batches, batchKiB int }{{20, 64, 16}, {20, 64, 64}, {80, 64, 16}} {
		b.Run(fmt.Sprintf("segments=%d/batches=%d/batchKiB=%d", c.segments, c.batches, c.batchKiB), func(b *testing.B) {
			dir := benchKafkaDir(b, c.segments, c.batches, c.batchKiB<<10)
			b.ResetTimer()
			for b.Loop() {
				p, err := Prepare(Options{KafkaDirs: []string{dir}, LogDir: dir, MetadataDir: dir, NodeID: 1, OffsetsTopicPartitions: 50, TransactionTopicPartitions: 50})
				if err != nil || len(p.Problems) > 0 {
					b.Fatal(err, p.Problems)
				}
			}
			b.ReportMetric(float64(c.segments*c.batches*c.batchKiB)/1024, "MiB")
		})
	}
}

func benchKafkaDir(b *testing.B, segments, batches, batchBytes int) string {
	b.Helper()
	dir := b.TempDir()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("node.id=1\nversion=1\ncluster.id=c2x1aWNlLWJlbmNoLTAwMQ\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, ".kafka_cleanshutdown"), []byte(`{"version":0,"brokerEpoch":3}`), 0o644))
	must(os.MkdirAll(filepath.Join(dir, KafkaMetadataDir), 0o755))
	must(os.WriteFile(filepath.Join(dir, KafkaMetadataDir, "00000000000000000000.log"),
		metadataBatch(0, topicRec("a", topicA), partitionRec(topicA, 0, 1)), 0o644))
	pdir := filepath.Join(dir, "a-0")
	must(os.MkdirAll(pdir, 0o755))
	value := make([]byte, batchBytes-100)
	offset := int64(0)
	for s := range segments {
		base := offset
		f, err := os.Create(filepath.Join(pdir, fmt.Sprintf("%020d.log", base)))
		must(err)
		// An offset index entry a batch, as Kafka writes one every index.interval.bytes (4 KiB).
		var index []byte
		pos := 0
		for range batches {
			bt := batch.Build(batch.Header{BaseOffset: offset, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
				[]batch.Record{{Key: []byte(fmt.Sprint(s)), Value: value}})
			_, err := f.Write(bt)
			must(err)
			index = binary.BigEndian.AppendUint32(index, uint32(offset-base))
			index = binary.BigEndian.AppendUint32(index, uint32(pos))
			pos += len(bt)
			offset++
		}
		must(f.Close())
		must(os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d.index", base)), index, 0o644))
		must(os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d.timeindex", base)), nil, 0o644))
	}
	// The active segment, read whole for its CRCs, is the same small one in every case, so
	// the cases differ only in the flushed segments.
	must(os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d.log", offset)), batch.Build(batch.Header{BaseOffset: offset, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]batch.Record{{Value: make([]byte, 1024)}}), 0o644))
	for _, ext := range []string{".index", ".timeindex"} {
		must(os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%020d%s", offset, ext)), nil, 0o644))
	}
	offset++
	must(os.WriteFile(filepath.Join(pdir, "partition.metadata"), []byte("version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4PEA\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte(fmt.Sprintf("0\n1\na 0 %d\n", offset)), 0o644))
	return dir
}
