package compress

import (
	"fmt"
	"testing"
)

// benchPayload is a 1 MiB records-like batch body, about the size of a
// default max.request.size batch.
var benchPayload = recordsLike(1<<20, 100)

func BenchmarkDecompress(b *testing.B) {
	for _, codec := range allCodecs {
		enc, err := Compress(codec, nil, benchPayload, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(Name(codec), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			b.ReportMetric(float64(len(benchPayload))/float64(len(enc)), "ratio")
			for b.Loop() {
				if _, err := Decompress(codec, enc, len(benchPayload)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// Formats other clients write, where they differ from ours.
	for name, p := range clientPayloads(b, benchPayload) {
		if name != "snappy/raw" && name != "zstd/stream" && name != "lz4/pierrec-default" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(benchPayload)))
			for b.Loop() {
				if _, err := Decompress(p.codec, p.data, len(benchPayload)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCompress(b *testing.B) {
	for _, codec := range allCodecs {
		for _, level := range []int{0} {
			b.Run(fmt.Sprintf("%s/level=%d", Name(codec), level), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(benchPayload)))
				dst := make([]byte, 0, 2<<20)
				for b.Loop() {
					var err error
					if dst, err = Compress(codec, dst[:0], benchPayload, level); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
