//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on f without waiting. flock locks are
// released by the kernel when the process ends, also on SIGKILL.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// guardShared takes a shared lock on a log's backup guard, waiting for a
// backup that holds it exclusively when wait is set.
func guardShared(f *os.File, wait bool) error {
	how := syscall.LOCK_SH
	if !wait {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}

// guardExclusive takes an exclusive lock on a log's backup guard, waiting
// for the shared holders.
func guardExclusive(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}

func guardRelease(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
