package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
	"unsafe"
)

// limits are the machine's physical ceilings, measured in the same run as the brokers.
type limits struct {
	DiskWriteMiBps float64 // sequential 1 MiB writes, one fdatasync at the end
	DiskWriteMiB   int64   // how much was written for that
	// DiskDirectMiBps is the same amount written with O_DIRECT (no page cache), then one
	// fdatasync: what the device itself takes. On a VM the page-cache figure can be far lower.
	DiskDirectMiBps float64
	FsyncWritesPerS float64       // 4 KiB append + fdatasync, one after another
	FsyncP50        time.Duration // median of those append+fdatasync pairs
	LoopbackMiBps   float64       // one TCP connection on 127.0.0.1, 256 KiB writes, reader discards
}

func measureLimits(dir string, diskMiB int64, pumpFor time.Duration) (*limits, error) {
	l := &limits{DiskWriteMiB: diskMiB}
	var err error
	if l.DiskWriteMiBps, err = diskWrite(dir, diskMiB, false); err != nil {
		return nil, err
	}
	if l.DiskDirectMiBps, err = diskWrite(dir, diskMiB, true); err != nil {
		return nil, err
	}
	if l.FsyncWritesPerS, l.FsyncP50, err = fsyncRate(dir, 2*time.Second); err != nil {
		return nil, err
	}
	if l.LoopbackMiBps, err = loopbackPump(pumpFor); err != nil {
		return nil, err
	}
	return l, nil
}

// diskWrite is `dd bs=1M conv=fdatasync` in Go (with direct, `oflag=direct` too): MiB/s of
// mib 1 MiB writes including the final flush to disk.
func diskWrite(dir string, mib int64, direct bool) (float64, error) {
	path := filepath.Join(dir, "disk-write.test")
	open := os.Create
	if direct {
		open = openDirect
	}
	f, err := open(path)
	if err != nil {
		return 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	const align = 4096 // O_DIRECT wants an aligned buffer
	raw := make([]byte, 1<<20+align)
	off := int(uintptr(align) - uintptr(unsafe.Pointer(&raw[0]))%align)
	buf := raw[off : off+1<<20]
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for i := int64(0); i < mib; i++ {
		if _, err := f.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := fdatasync(f); err != nil {
		return 0, err
	}
	return float64(mib) / time.Since(start).Seconds(), nil
}

func fsyncRate(dir string, dur time.Duration) (float64, time.Duration, error) {
	path := filepath.Join(dir, "fsync.test")
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(path)
	defer f.Close()
	buf := make([]byte, 4096)
	var h hist
	start := time.Now()
	n := 0
	for time.Since(start) < dur {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, 0, err
		}
		h.record(time.Since(t))
		n++
	}
	return float64(n) / time.Since(start).Seconds(), h.quantile(0.5), nil
}

// loopbackPump pushes bytes through one plain TCP connection on 127.0.0.1 for dur.
func loopbackPump(dur time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	start := time.Now()
	for time.Since(start) < dur {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
	}
	c.Close()
	n := <-got
	if n < 0 {
		return 0, fmt.Errorf("loopback accept failed")
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}

func fdatasync(f *os.File) error { return fdatasyncFile(f) }
