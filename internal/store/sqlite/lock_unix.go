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
