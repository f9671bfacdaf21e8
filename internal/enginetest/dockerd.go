package enginetest

import (
	"testing"

	"github.com/limitlab/limitlab/internal/testbed"
)

// StartDockerd starts an engine named name (a few lowercase letters) and
// returns once it answers; the test's end stops it and removes its files.
func StartDockerd(t testing.TB, name string, o testbed.DockerdOptions) *testbed.Dockerd {
	t.Helper()
	d, err := testbed.StartEngine(name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Log(err)
		}
	})
	return d
}
