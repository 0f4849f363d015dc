//go:build !unix

package logstore

// raiseFileLimit: no RLIMIT_NOFILE here; the caller uses a fixed default.
func raiseFileLimit() (soft, hard uint64, raised bool, err error) { return 0, 0, false, nil }
