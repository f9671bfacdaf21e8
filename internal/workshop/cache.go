package workshop

import (
	"container/list"
	"sync"

	"golang.org/x/sync/singleflight"
)

// DefaultCacheBytes is how much of ended runs' streams the archive keeps in
// memory for their viewers, exports and CSVs.
const DefaultCacheBytes = 64 << 20

// streamCache keeps the most recently used ended runs, as loaded from the
// store, within a byte budget; concurrent loads of one run share a single
// read of the store. Every viewer of an ended run reads the one copy.
type streamCache struct {
	budget int64
	flight singleflight.Group

	mu    sync.Mutex
	size  int64
	order *list.List // of *cached, most recent first
	byID  map[string]*list.Element
}

type cached struct {
	id    string
	s     stored
	bytes int64
}

func newStreamCache(budget int64) *streamCache {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &streamCache{budget: budget, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns the run from the cache, or loads it once however many ask
// at the same time. A run larger than the whole budget is served but not
// kept.
func (c *streamCache) get(id string, load func(string) (stored, error)) (stored, error) {
	c.mu.Lock()
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cached).s, nil
	}
	c.mu.Unlock()
	v, err, _ := c.flight.Do(id, func() (any, error) {
		// A load that ended between the look above and this flight has
		// put it already: the viewers that missed it then get it now.
		c.mu.Lock()
		if el, ok := c.byID[id]; ok {
			c.mu.Unlock()
			return el.Value.(*cached).s, nil
		}
		c.mu.Unlock()
		s, err := load(id)
		if err != nil {
			return stored{}, err
		}
		c.put(id, s)
		return s, nil
	})
	if err != nil {
		return stored{}, err
	}
	return v.(stored), nil
}

// msgOverhead is what one kept message costs beside its bytes (its slice
// header and the allocator's rounding); viewOverhead is a run's view, its
// hub and its place in the cache. Counting only the bytes let a cache of
// many short runs hold several times its budget.
const (
	msgOverhead  = 48
	viewOverhead = 16 << 10
)

// cost is what a run kept in the cache holds in memory.
func cost(s stored) int64 {
	n := int64(viewOverhead)
	for _, m := range s.hub.History() {
		n += int64(len(m)) + msgOverhead
	}
	return n
}

// peek returns the run if the cache holds it, loading nothing.
func (c *streamCache) peek(id string) (stored, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		return el.Value.(*cached).s, true
	}
	return stored{}, false
}

func (c *streamCache) put(id string, s stored) {
	n := cost(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; ok || n > c.budget {
		return
	}
	c.byID[id] = c.order.PushFront(&cached{id: id, s: s, bytes: n})
	c.size += n
	for c.size > c.budget {
		el := c.order.Back()
		old := el.Value.(*cached)
		c.order.Remove(el)
		delete(c.byID, old.id)
		c.size -= old.bytes
	}
}

// bytes is what the cache holds now.
func (c *streamCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
