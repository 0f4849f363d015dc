//go:build unix

package logstore

import "syscall"

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and returns the limits in
// force afterwards.
func raiseFileLimit() (soft, hard uint64, raised bool, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, false, err
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			return uint64(lim.Cur), uint64(lim.Max), false, err
		}
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, 0, false, err
		}
		raised = true
	}
	return uint64(lim.Cur), uint64(lim.Max), raised, nil
}
