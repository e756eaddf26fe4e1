//go:build unix

package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir's lock file: two processes
// appending to one spool would interleave their records. The kernel
// releases it when the process dies, SIGKILL included.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("audit: spool lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("audit: spool directory %s is in use by another process", dir)
		}
		return nil, fmt.Errorf("audit: spool lock: %w", err)
	}
	return f, nil
}
