package testbed

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A test engine whose test never stopped it (as when go test is
// interrupted) is found by its pidfile and stopped, its files and loop
// disk removed; the next engine of that name starts cleanly.
func TestStaleEngineIsReaped(t *testing.T) {
	d, err := StartEngine("st", DockerdOptions{DataRootOnLoop: true})
	if err != nil {
		t.Fatal(err)
	}
	pid := d.cmd.Process.Pid
	d.Pause() // even a paused one
	names, err := ReapStale()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "st") {
		t.Errorf("reaped %v, want st", names)
	}
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("dockerd %d still runs", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, p := range []string{d.run, d.data, d.data + ".img"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
	if d.loop != "" {
		if b, _ := os.ReadFile("/sys/block/" + d.loop[len("/dev/"):] + "/loop/backing_file"); len(b) > 0 {
			t.Errorf("%s still backed by %s", d.loop, b)
		}
	}
	again, err := StartEngine("st", DockerdOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := again.Close(); err != nil {
			t.Log(err)
		}
	})
	if again.cmd.Process.Pid == pid {
		t.Fatal("the same engine")
	}
}
