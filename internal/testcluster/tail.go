package testcluster

import (
	"fmt"
	"net"
	"sync"
)

// TailBuffer keeps the last Max bytes written to it (4 MiB when Max is 0). Safe for concurrent
// use; a node's Output.
type TailBuffer struct {
	Max int
	mu  struct {
		sync.Mutex
		buf     []byte
		dropped int64 // bytes discarded from the front
	}
}

func (b *TailBuffer) Write(p []byte) (int, error) {
	limit := b.Max
	if limit == 0 {
		limit = 4 << 20
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.buf = append(b.mu.buf, p...)
	if over := len(b.mu.buf) - limit; over > 0 {
		b.mu.buf = append([]byte(nil), b.mu.buf[over:]...)
		b.mu.dropped += int64(over)
	}
	return len(p), nil
}

func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.dropped > 0 {
		return fmt.Sprintf("[... %d earlier bytes dropped ...]\n%s", b.mu.dropped, b.mu.buf)
	}
	return string(b.mu.buf)
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago: all n are
// held open until every one is chosen, so the kernel cannot hand one out twice.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
