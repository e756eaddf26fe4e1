//go:build !unix

package audit

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir only creates the lock file here: no flock, so one spool
// directory per process is up to the configuration.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("audit: spool lock: %w", err)
	}
	return f, nil
}
