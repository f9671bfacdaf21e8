package engine

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteInContainer writes data to file (an absolute path inside the
// container whose first process is pid) through /proc/<pid>/root, written
// beside it and renamed, so that a reader never sees it half written. The
// server writes as root: a symlink that the container's image or its
// process put in the way could send the write anywhere on the host, so no
// symlink is followed. The directory is resolved inside the container's
// root (openat2 with RESOLVE_IN_ROOT and RESOLVE_NO_SYMLINKS), the file
// is created with O_NOFOLLOW and renamed within that directory.
func WriteInContainer(pid int, file string, data []byte) error {
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("engine: the root of process %d: %w", pid, err)
	}
	defer unix.Close(root)
	return writeUnder(root, file, data)
}

// writeUnder is WriteInContainer under the directory root.
func writeUnder(root int, file string, data []byte) error {
	dir, name := path.Split(path.Clean("/" + file))
	rel := strings.Trim(dir, "/")
	if rel == "" {
		rel = "."
	}
	d, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("engine: %s in the container: %w", dir, err)
	}
	defer unix.Close(d)
	tmp := name + ".new"
	fd, err := unix.Openat(d, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("engine: %s in the container: %w", path.Join(dir, tmp), err)
	}
	for b := data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("engine: %s in the container: %w", path.Join(dir, tmp), err)
		}
		b = b[n:]
	}
	if err := unix.Close(fd); err != nil {
		return err
	}
	if err := unix.Renameat(d, tmp, d, name); err != nil {
		return fmt.Errorf("engine: %s in the container: %w", path.Join(dir, name), err)
	}
	return nil
}
