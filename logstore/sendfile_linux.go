package logstore

import (
	"io"
	"os"
	"syscall"
)

// sendfile copies [pos, pos+length) of src to dst with sendfile(2), with an explicit offset so
// that concurrent readers of the same file do not interfere. handled is false when dst or src
// does not expose a file descriptor; the caller then copies in user space.
func sendfile(dst syscall.Conn, src *os.File, pos, length int64) (written int64, handled bool, err error) {
	dstRaw, err := dst.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	srcRaw, err := src.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var opErr error
	ctlErr := srcRaw.Control(func(srcFd uintptr) {
		wErr := dstRaw.Write(func(dstFd uintptr) bool {
			for written < length {
				n, e := syscall.Sendfile(int(dstFd), int(srcFd), &pos, int(min(length-written, 1<<30)))
				if n > 0 {
					written += int64(n)
				}
				switch {
				case e == syscall.EAGAIN:
					return false // wait until dst is writable
				case e == syscall.EINTR:
					continue
				case e != nil:
					opErr = os.NewSyscallError("sendfile", e)
					return true
				case n == 0:
					opErr = io.ErrUnexpectedEOF // the file is shorter than the slice
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = wErr
		}
	})
	if opErr == nil {
		opErr = ctlErr
	}
	return written, true, opErr
}
