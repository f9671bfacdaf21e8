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

// featured is the run a presenter shows to everybody, and a stream of its
// changes for the /live page.
type featured struct {
	mu  sync.Mutex
	id  string
	hub *hub.Hub
}

func newFeatured() *featured { return &featured{hub: hub.New(0)} }

func (f *featured) set(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id = id
	b, _ := json.Marshal(runner.Message{Type: runner.KindFeatured, ID: id})
	f.hub.Publish(b)
}

// Feature makes a run the featured one.
func (m *Manager) Feature(id string) error {
	if st := m.opts.Store; st != nil {
		// The run's row is written before this, in order, when it is
		// submitted.
		if err := st.Feature(id, time.Now()); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w %q", ErrNoRun, id)
		} else if err != nil {
			return err
		}
	} else if _, ok := m.View(id); !ok {
		return fmt.Errorf("%w %q", ErrNoRun, id)
	}
	m.featured.set(id)
	return nil
}

// Featured is the featured run's id, if any.
func (m *Manager) Featured() (string, bool) {
	m.featured.mu.Lock()
	defer m.featured.mu.Unlock()
	return m.featured.id, m.featured.id != ""
}

// FeaturedFeed streams {"type":"featured","id":...} on each change; its
// history ends with the current one.
func (m *Manager) FeaturedFeed() *hub.Hub { return m.featured.hub }
