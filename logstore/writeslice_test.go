package logstore

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// WriteSlice sends exactly the slice's bytes over TCP (sendfile) and to a plain writer, and
// reports a slice that outlived a truncation as io.ErrUnexpectedEOF.
func TestWriteSlice(t *testing.T) {
	l, err := Open(t.TempDir(), DefaultConfig(), Options{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 50; i++ {
		if _, err := l.AppendAsLeader(mkBatch(1+i%7, int64(i), -1, 0, 0), 0); err != nil {
			t.Fatal(err)
		}
	}
	rr, err := l.Read(20, 1500, 1<<62, true)
	if err != nil || len(rr.Slices) != 1 {
		t.Fatalf("%+v %v", rr, err)
	}
	s := rr.Slices[0]
	want := make([]byte, s.Length)
	if _, err := s.File.ReadAt(want, s.Position); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if n, err := WriteSlice(&buf, s); err != nil || n != s.Length || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("plain writer: %d %v", n, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := WriteSlice(c, s)
	c.Close()
	if err != nil || n != s.Length {
		t.Fatalf("tcp: %d %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("tcp peer got %d bytes, want %d", len(b), len(want))
	}

	// Truncation under a reader's feet.
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSlice(io.Discard, s); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after truncation: %v", err)
	}
}
