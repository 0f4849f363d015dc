package wire

import (
	"math/bits"
	"sync"
)

// Request frames are read into buffers from size-classed pools, so that a busy producer's
// megabyte frames cost neither a fresh allocation (zeroed by the runtime, then garbage) nor
// growth copies. A frame goes back to its pool only when the handler says nothing aliases it any
// more (Request.ReleaseFrame); frames of requests that never say so are left to the garbage
// collector, as before. Pools empty themselves across garbage collections, so idle memory is
// returned.
const (
	minPooledShift = 12 // 4 KiB: smaller frames are allocated exactly; zeroing them is cheap
	maxPooledShift = 23 // 8 MiB: larger frames grow as their bytes arrive (readFrame)
)

// pooledFrameMax is the largest frame read into a pooled buffer, allocated in full before its
// bytes arrive (as Kafka allocates a declared frame). Larger frames grow as they are read, so
// a client that declares a huge frame and sends little costs about what it sent.
const pooledFrameMax = 1 << maxPooledShift

var framePools [maxPooledShift - minPooledShift + 1]sync.Pool

// frameClass returns the pool index for a frame of size bytes, or -1 when it is not pooled.
func frameClass(size int) int {
	if size <= 1<<(minPooledShift-1) || size > pooledFrameMax {
		return -1
	}
	shift := bits.Len(uint(size - 1)) // smallest power of two >= size
	return max(shift, minPooledShift) - minPooledShift
}

// getFrame returns a buffer of length size, pooled when its size has a class.
func getFrame(size int) []byte {
	c := frameClass(size)
	if c < 0 {
		return make([]byte, size)
	}
	if p, ok := framePools[c].Get().(*[]byte); ok {
		return (*p)[:size]
	}
	return make([]byte, size, 1<<(c+minPooledShift))
}

// putFrame returns b to its pool. Only buffers made by getFrame for a class fit one.
func putFrame(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPooledShift) {
		return
	}
	b = b[:0]
	framePools[c].Put(&b)
}
