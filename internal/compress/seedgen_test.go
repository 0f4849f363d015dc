package compress

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteSeeds regenerates testdata/fuzz/FuzzDecompress when
// SLUICE_WRITE_SEEDS=1; otherwise it checks each codec has a seed there.
func TestWriteSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecompress")
	if os.Getenv("SLUICE_WRITE_SEEDS") == "1" {
		os.MkdirAll(dir, 0o755)
		in := recordsLike(600, 7)
		write := func(name string, codec int, data []byte) {
			body := fmt.Sprintf("go test fuzz v1\nbyte(%s)\n[]byte(%s)\n", strconv.QuoteRune(rune(codec)), strconv.Quote(string(data)))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, codec := range allCodecs {
			enc, _ := Compress(codec, nil, in, 0)
			write("seed-"+Name(codec), codec, enc)
		}
		write("seed-snappy-raw", Snappy, clientPayloads(t, in)["snappy/raw"].data)
		write("seed-lz4-pierrec", LZ4, clientPayloads(t, in)["lz4/content-size+block-checksum"].data)
		write("seed-zstd-stream", Zstd, clientPayloads(t, in)["zstd/stream"].data)
		write("seed-gzip-stdlib", Gzip, clientPayloads(t, in)["gzip/stdlib"].data)
	}
	for _, codec := range allCodecs {
		if _, err := os.Stat(filepath.Join(dir, "seed-"+Name(codec))); err != nil {
			t.Errorf("missing fuzz seed for %s: %v (regenerate with SLUICE_WRITE_SEEDS=1)", Name(codec), err)
		}
	}
}
