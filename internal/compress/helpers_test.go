package compress

import (
	"fmt"
	"math/rand/v2"
)

// recordsLike returns n bytes resembling a batch's records section: JSON-ish
// values with repeated keys and varying numbers, compressible about as much
// as typical Kafka payloads.
func recordsLike(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 0, n+256)
	for i := 0; len(out) < n; i++ {
		out = fmt.Appendf(out, `{"id":%d,"user":"user-%d","event":"%s","ts":%d,"amount":%d.%02d}`,
			i, r.IntN(5000), []string{"click", "view", "purchase", "login"}[r.IntN(4)],
			1700000000000+int64(i)*37, r.IntN(10000), r.IntN(100))
	}
	return out[:n]
}

// randomBytes returns n incompressible bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

var allCodecs = []int{None, Gzip, Snappy, LZ4, Zstd}

// testInputs are the payloads every round trip test runs over.
func testInputs() map[string][]byte {
	return map[string][]byte{
		"empty":       {},
		"one-byte":    {'x'},
		"small":       []byte("hello, kafka"),
		"records-1k":  recordsLike(1000, 1),
		"records-70k": recordsLike(70<<10, 2),  // more than one snappy and lz4 block
		"random-100k": randomBytes(100<<10, 3), // incompressible blocks
		"zeros-300k":  make([]byte, 300<<10),
	}
}
