package engine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteUnderFollowsNoSymlink: a begin file is written inside its
// root; a directory or a file in the way that is a symlink, to a place
// outside the root or inside it, is refused, and the place it points to
// stays as it was.
func TestWriteUnderFollowsNoSymlink(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("host's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(root string)
		ok    bool
	}{
		{"a plain directory", func(root string) { os.Mkdir(filepath.Join(root, "tmp"), 0o755) }, true},
		{"the directory a symlink out", func(root string) { os.Symlink(outside, filepath.Join(root, "tmp")) }, false},
		{"the directory a symlink within", func(root string) {
			os.Mkdir(filepath.Join(root, "real"), 0o755)
			os.Symlink("/real", filepath.Join(root, "tmp"))
		}, false},
		{"the file beside it a symlink out", func(root string) {
			os.Mkdir(filepath.Join(root, "tmp"), 0o755)
			os.Symlink(victim, filepath.Join(root, "tmp", "begin.new"))
		}, false},
		{"a way up out of the root", func(root string) {
			os.Mkdir(filepath.Join(root, "tmp"), 0o755)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.setup(root)
			fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			file := "/tmp/begin"
			if tc.name == "a way up out of the root" {
				file = "/../../../tmp/begin"
			}
			err = writeUnder(fd, file, []byte("go\n"))
			if tc.ok != (err == nil) {
				t.Fatalf("writeUnder: %v, want ok %v", err, tc.ok)
			}
			if tc.ok {
				if b, err := os.ReadFile(filepath.Join(root, "tmp", "begin")); err != nil || string(b) != "go\n" {
					t.Errorf("the file inside the root: %q %v", b, err)
				}
			}
			if b, _ := os.ReadFile(victim); string(b) != "host's\n" {
				t.Errorf("the file outside the root now reads %q", b)
			}
			if _, err := os.Stat(filepath.Join(outside, "begin")); err == nil {
				t.Error("a file was written outside the root")
			}
		})
	}
}
