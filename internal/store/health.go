package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/go-units"
	"golang.org/x/sys/unix"
)

// Health says whether the store can take a new run: its last write went
// through, and the disk under it has at least minFree bytes free. A full
// disk is refused here, with a clear message, rather than found out by
// writes that fail while a run records.
func (s *Store) Health(minFree int64) error {
	if err := s.failed.Load(); err != nil {
		return fmt.Errorf("the run store's last write failed (%v): no new runs until it writes again", *err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.dir, &st); err != nil {
		return fmt.Errorf("the run store's disk: %w", err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < minFree {
		return fmt.Errorf("the disk under the run store (%s) has %s free, less than the %s a run needs to be recorded: no new runs until there is room",
			s.dir, units.BytesSize(float64(free)), units.BytesSize(float64(minFree)))
	}
	return nil
}

// Size is the store's size on disk: its database file and its
// write-ahead log.
func (s *Store) Size() int64 {
	var n int64
	for _, name := range []string{FileName, FileName + "-wal"} {
		if st, err := os.Stat(filepath.Join(s.dir, name)); err == nil {
			n += st.Size()
		}
	}
	return n
}
