package workshop

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/limitlab/limitlab/internal/hub"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
)

// Featured is the run a presenter shows to everybody, and a stream of its
// changes for the /live page.
type Featured struct {
	st     *store.Store // nil: kept in memory only
	exists func(id string) bool

	mu  sync.Mutex
	id  string
	hub *hub.Hub
}

func newFeatured(st *store.Store, exists func(id string) bool) *Featured {
	return &Featured{st: st, exists: exists, hub: hub.New(0)}
}

func (f *Featured) set(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id = id
	b, _ := json.Marshal(runner.Message{Type: runner.KindFeatured, ID: id})
	f.hub.Publish(b)
}

// Feature makes a run the featured one.
func (f *Featured) Feature(id string) error {
	if st := f.st; st != nil {
		// The run's row is written before this, in order, when it is
		// submitted.
		if err := st.Feature(id, time.Now()); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w %q", ErrNoRun, id)
		} else if err != nil {
			return err
		}
	} else if !f.exists(id) {
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	f.set(id)
	return nil
}

// Current is the featured run's id, if any.
func (f *Featured) Current() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id, f.id != ""
}

// Feed streams {"type":"featured","id":...} on each change; its history
// ends with the current one.
func (f *Featured) Feed() *hub.Hub { return f.hub }
