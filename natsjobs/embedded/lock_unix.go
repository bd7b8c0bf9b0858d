//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir/natsjobs.lock, so that two
// processes never run an embedded server on one store. The kernel releases
// it when the process dies, so a crash leaves no stale lock.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "natsjobs.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("natsjobs/embedded: store lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("natsjobs/embedded: store dir %s is in use by another process", dir)
		}
		return nil, fmt.Errorf("natsjobs/embedded: store lock: %w", err)
	}
	return func() { f.Close() }, nil
}
