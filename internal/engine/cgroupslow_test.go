package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fixture copies a test cgroup tree where a test may change its files.
func fixture(t *testing.T, tree string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", tree))); err != nil {
		t.Fatal(err)
	}
	return root
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, r *CgroupReader) Counters {
	t.Helper()
	c, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The files read less often are read again when what they follow moves,
// after a Refresh, and once they are a second old.
func TestSlowFilesV1(t *testing.T) {
	root := fixture(t, "cgroup-v1")
	r, err := FindCgroup(root, "abc123", 0)
	if err != nil {
		t.Fatal(err)
	}
	mem := filepath.Join(root, "memory/docker/abc123")
	blkio := filepath.Join(root, "blkio/docker/abc123")
	const usage = 73400320
	if c := read(t, r); c.MemBytes != usage-4194304 || c.MemLimit != 64<<20 || c.ReadBytes != 12288 {
		t.Fatalf("first reading %+v", c)
	}
	stat := func(inactive int) string {
		return "inactive_file 1048576\ntotal_inactive_file " + strconv.Itoa(inactive) + "\n"
	}

	// The cache moves while the usage stays: the reading keeps the cache
	// it read, for up to a second.
	write(t, filepath.Join(mem, "memory.stat"), stat(8<<20))
	if c := read(t, r); c.MemBytes != usage-4194304 {
		t.Errorf("memory.stat read again with the usage unchanged: %d", c.MemBytes)
	}
	// The usage, a gauge, rested at its last two readings: a move is
	// seen once it is a second old, and memory.stat is read with it.
	write(t, filepath.Join(mem, "memory.usage_in_bytes"), strconv.Itoa(usage+4096))
	if c := read(t, r); c.MemBytes != usage-4194304 {
		t.Errorf("a resting usage read again within the second: %d", c.MemBytes)
	}
	r.slow.usage.at = r.slow.usage.at.Add(-slowEvery)
	if c := read(t, r); c.MemBytes != usage+4096-8<<20 {
		t.Errorf("after the usage moved: %d, want %d", c.MemBytes, usage+4096-8<<20)
	}
	// Once it moved, it is read at every reading.
	write(t, filepath.Join(mem, "memory.usage_in_bytes"), strconv.Itoa(usage+8192))
	if c := read(t, r); c.MemBytes != usage+8192-8<<20 {
		t.Errorf("a moving usage: %d, want %d", c.MemBytes, usage+8192-8<<20)
	}
	// Once a second old it is read whatever the usage does.
	write(t, filepath.Join(mem, "memory.stat"), stat(2<<20))
	r.slow.memAt = r.slow.memAt.Add(-slowEvery)
	if c := read(t, r); c.MemBytes != usage+8192-2<<20 {
		t.Errorf("a second on: %d, want %d", c.MemBytes, usage+8192-2<<20)
	}

	// The limit: once a second, and at once after a Refresh.
	write(t, filepath.Join(mem, "memory.limit_in_bytes"), strconv.Itoa(128<<20))
	if c := read(t, r); c.MemLimit != 64<<20 {
		t.Errorf("limit re-read within the second: %d", c.MemLimit)
	}
	r.Refresh()
	if c := read(t, r); c.MemLimit != 128<<20 {
		t.Errorf("limit after Refresh: %d, want %d", c.MemLimit, 128<<20)
	}

	slowPidsIOAndSplitV1(t, r, root, blkio)
}

// slowPidsIOAndSplitV1 goes on with TestSlowFilesV1's reader r, on the
// fixture at root: pids, IO bytes, and the user and system split.
func slowPidsIOAndSplitV1(t *testing.T, r *CgroupReader, root, blkio string) {
	// pids, the other gauge: resting, read once a second; moving, at
	// every reading; all of it at once after a Refresh.
	pids := filepath.Join(root, "pids/docker/abc123/pids.current")
	first := read(t, r).Pids
	write(t, pids, strconv.FormatUint(first+1, 10))
	if c := read(t, r); c.Pids != first {
		t.Errorf("resting pids read again within the second: %d", c.Pids)
	}
	r.slow.pids.at = r.slow.pids.at.Add(-slowEvery)
	write(t, pids, strconv.FormatUint(first+2, 10))
	if c := read(t, r); c.Pids != first+2 {
		t.Errorf("pids a second on: %d, want %d", c.Pids, first+2)
	}
	write(t, pids, strconv.FormatUint(first+3, 10))
	if c := read(t, r); c.Pids != first+3 {
		t.Errorf("moving pids: %d, want %d", c.Pids, first+3)
	}
	read(t, r) // at rest again
	write(t, pids, strconv.FormatUint(first+4, 10))
	r.Refresh()
	if c := read(t, r); c.Pids != first+4 {
		t.Errorf("pids after a Refresh: %d, want %d", c.Pids, first+4)
	}

	// IO bytes follow the operation count, which is read every time.
	write(t, filepath.Join(blkio, "blkio.throttle.io_service_bytes"), "8:0 Read 65536\n8:0 Write 1048576\nTotal 1114112\n")
	if c := read(t, r); c.ReadBytes != 12288 {
		t.Errorf("bytes re-read with the count unchanged: %d", c.ReadBytes)
	}
	write(t, filepath.Join(blkio, "blkio.throttle.io_serviced"), "8:0 Read 5\n8:0 Write 256\nTotal 261\n")
	if c := read(t, r); c.ReadBytes != 65536 || c.ReadOps != 5 {
		t.Errorf("after the count moved: read %d bytes in %d ops, want 65536 in 5", c.ReadBytes, c.ReadOps)
	}

	// The user and system split: once a second; a lane's totals split the
	// exact CPU time by its last ratio.
	cpuacct := filepath.Join(root, "cpuacct/docker/abc123")
	before := read(t, r)
	write(t, filepath.Join(cpuacct, "cpuacct.stat"), "user 300\nsystem 100\n")
	write(t, filepath.Join(cpuacct, "cpuacct.usage"), "5000000000")
	c := read(t, r)
	if c.UserNs != before.UserNs || c.SysNs != before.SysNs || c.CPUNs != 5e9 {
		t.Errorf("split re-read within the second, or the total not: %+v", c)
	}
	r.slow.splitAt = r.slow.splitAt.Add(-slowEvery)
	c = read(t, r)
	if c.UserNs != 3e9 || c.SysNs != 1e9 {
		t.Errorf("a second on: user %d sys %d, want 3e9 and 1e9", c.UserNs, c.SysNs)
	}
	if u, sy := c.CPUSplit(); u != 3.75 || sy != 1.25 {
		t.Errorf("totals %.2f user, %.2f system: want 5 s split 3:1", u, sy)
	}
}

func TestSlowFilesV2(t *testing.T) {
	root := fixture(t, "cgroup-v2")
	r, err := FindCgroup(root, "abc123", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "system.slice/docker-abc123.scope")
	first := read(t, r)
	write(t, filepath.Join(dir, "memory.stat"), "inactive_file 0\n")
	write(t, filepath.Join(dir, "memory.max"), strconv.Itoa(256<<20))
	if c := read(t, r); c.MemBytes != first.MemBytes || c.MemLimit != 0 {
		t.Errorf("re-read within the second with the usage unchanged: %+v", c)
	}
	write(t, filepath.Join(dir, "memory.current"), "73404416")
	r.Refresh()
	if c := read(t, r); c.MemBytes != 73404416 || c.MemLimit != 256<<20 {
		t.Errorf("after the usage moved and a Refresh: mem %d, limit %d", c.MemBytes, c.MemLimit)
	}
}

// TickFiles names the files every reading takes, and no file a reading
// spaces out: each file it names was opened by a reading, and a second
// reading within the second, once the gauges rest, reads exactly those
// (told by the files' access times: every file's is set back a day first, and a read on a
// relatime file system moves it).
func TestTickFiles(t *testing.T) {
	for tree, want := range map[string][]string{
		"cgroup-v1": {"cpuacct/docker/abc123/cpuacct.usage", "cpu/docker/abc123/cpu.stat", "blkio/docker/abc123/blkio.throttle.io_serviced"},
		"cgroup-v2": {"system.slice/docker-abc123.scope/cpu.stat", "system.slice/docker-abc123.scope/io.stat",
			"system.slice/docker-abc123.scope/cpu.pressure", "system.slice/docker-abc123.scope/memory.pressure", "system.slice/docker-abc123.scope/io.pressure"},
	} {
		root := fixture(t, tree)
		r, err := FindCgroup(root, "abc123", 0)
		if err != nil {
			t.Fatal(err)
		}
		read(t, r)
		got := r.TickFiles()
		if len(got) != len(want) {
			t.Errorf("%s: %q, want %q", tree, got, want)
			continue
		}
		for k, name := range got {
			if name != filepath.Join(root, want[k]) {
				t.Errorf("%s: file %d is %s, want %s", tree, k, name, want[k])
			}
			if _, open := r.files[[2]string{filepath.Dir(name), filepath.Base(name)}]; !open {
				t.Errorf("%s: %s is not one a reading took", tree, name)
			}
		}
		// The gauges (memory usage, pids) count as moved at their first
		// reading and rest from the second that finds them still.
		read(t, r)
		read := readBy(t, root, func() { read(t, r) })
		if !slices.Equal(read, slices.Sorted(slices.Values(got))) {
			t.Errorf("%s: a reading within the second read\n%q\nbut TickFiles names\n%q", tree, read, got)
		}
	}
}

// readBy lists, sorted, the files under root that do reads, by their
// access times.
func readBy(t *testing.T, root string, do func()) []string {
	t.Helper()
	day := time.Now().Add(-24 * time.Hour)
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, p)
		return os.Chtimes(p, day.Add(-24*time.Hour), day)
	})
	if err != nil {
		t.Fatal(err)
	}
	do()
	var read []string
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); time.Unix(st.Atim.Unix()).After(day) {
			read = append(read, p)
		}
	}
	if len(read) == 0 {
		t.Fatalf("no file under %s shows a read: its file system does not keep access times (noatime)", root)
	}
	return read
}

// A file a cgroup lacks (PSI on a kernel built without it) is looked for
// once, at the first reading, not at every tick after it.
func TestAnAbsentFileIsNotLookedForAgain(t *testing.T) {
	root := fixture(t, "cgroup-v2")
	dir := filepath.Join(root, "system.slice/docker-abc123.scope")
	for _, f := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := FindCgroup(root, "abc123", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := read(t, r); c.HasPressure {
		t.Fatalf("pressure read from a cgroup without PSI: %+v", c)
	}
	if _, remembered := r.absent[[2]string{dir, "cpu.pressure"}]; !remembered {
		t.Errorf("cpu.pressure's absence was not remembered: %v", r.absent)
	}
	// Were it looked for again, the reading would find it now.
	write(t, filepath.Join(dir, "cpu.pressure"), "some avg10=0.00 avg60=0.00 avg300=0.00 total=5000\n")
	if c := read(t, r); c.HasPressure {
		t.Errorf("cpu.pressure was opened again at a later tick: %+v", c)
	}
}
