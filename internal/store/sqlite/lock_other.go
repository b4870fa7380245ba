//go:build !unix

package sqlite

import "os"

// lockFile: without flock there is no way to keep other processes out, so
// the stores of the file keep nothing derived from it in memory.
func lockFile(*os.File) error { return errNoLocks }

// Without flock a backup cannot hold the event log still (Backup).
func guardShared(*os.File, bool) error { return nil }
func guardExclusive(*os.File) error    { return nil }
func guardRelease(*os.File)            {}
