package workshop

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/limitlab/limitlab/internal/hub"
)

func storedOf(n int) stored {
	h := hub.New(0)
	h.Publish(make([]byte, n))
	h.Close()
	return stored{hub: h}
}

// TestStreamCacheLoadsOnceForManyViewers: twenty viewers of an ended run
// arriving together cost one read of the store and one copy in memory.
func TestStreamCacheLoadsOnceForManyViewers(t *testing.T) {
	c := newStreamCache(1 << 20)
	var loads atomic.Int32
	release := make(chan struct{})
	load := func(id string) (stored, error) {
		loads.Add(1)
		<-release
		return storedOf(1000), nil
	}
	var wg sync.WaitGroup
	got := make([]stored, 20)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.get("run", load)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	for loads.Load() == 0 {
		runtime.Gosched() // until the first get is loading
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("%d loads for 20 viewers, want 1", n)
	}
	for _, s := range got {
		if s.hub != got[0].hub {
			t.Fatal("viewers got different copies")
		}
	}
	if _, err := c.get("run", load); err != nil || loads.Load() != 1 {
		t.Errorf("a later viewer loaded again: %d loads", loads.Load())
	}
}

func TestStreamCacheKeepsToItsBudget(t *testing.T) {
	budget := 3 * cost(storedOf(1000))
	c := newStreamCache(budget)
	loads := map[string]int{}
	load := func(id string) (stored, error) { loads[id]++; return storedOf(1000), nil }
	for i := range 5 {
		if _, err := c.get(fmt.Sprint(i), load); err != nil {
			t.Fatal(err)
		}
	}
	if b := c.bytes(); b > budget {
		t.Errorf("holds %d bytes, over its budget of %d", b, budget)
	}
	c.get("4", load) // the most recent stays
	c.get("0", load) // the oldest was evicted: read again
	if loads["4"] != 1 || loads["0"] != 2 {
		t.Errorf("loads %v: want run 4 kept and run 0 evicted", loads)
	}
	big := func(string) (stored, error) { return storedOf(int(budget)), nil }
	if _, err := c.get("huge", big); err != nil || c.bytes() > budget {
		t.Errorf("a run larger than the budget was kept: %d bytes", c.bytes())
	}
}
