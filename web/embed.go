package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// ParseEmbedOrigins reads -embed-origins: the sites (scheme://host[:port],
// comma-separated) whose pages may frame /embed/....
func ParseEmbedOrigins(s string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(s, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(u.Host, "*;' ") {
			return nil, fmt.Errorf("-embed-origins: %q: want an origin such as https://blog.example.com", o)
		}
		out = append(out, u.Scheme+"://"+strings.ToLower(u.Host))
	}
	return out, nil
}

// embeddable lets the EmbedOrigins frame a page; without them framing
// stays refused to any other site, as on every page.
func (h *handlers) embeddable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(h.EmbedOrigins) > 0 {
			w.Header().Set("Content-Security-Policy", strings.Replace(AppCSP, "frame-ancestors 'self'", "frame-ancestors 'self' "+strings.Join(h.EmbedOrigins, " "), 1))
			// A browser that reads frame-ancestors ignores X-Frame-Options;
			// one that does not would refuse every other site's frame.
			w.Header().Del("X-Frame-Options")
		}
		next.ServeHTTP(w, r)
	})
}

// publishedFrame is the header policy of a published page served for a
// frame: only who may frame it. The page's own policy (a meta element)
// allows its inline scripts by their hashes and nothing else; a header
// policy of 'self' scripts would refuse them, since a browser enforces
// both.
func publishedFrame(w http.ResponseWriter, origins []string) {
	w.Header().Set("Content-Security-Policy", strings.TrimSpace("frame-ancestors 'self' "+strings.Join(origins, " ")))
}

// embedRun is a run's replay for another site's frame: the published page,
// which sizes itself to the frame and tells it its height.
func (h pages) embedRun(w http.ResponseWriter, r *http.Request) {
	release, ok := h.exportSlot(w, r, "run")
	if !ok {
		return
	}
	defer release()
	page, err := h.published(r.Context(), chi.URLParam(r, "id"), true)
	if err != nil {
		writePublishFailure(w, h.Log, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page's own policy (a meta element) allows its inline scripts by
	// hash; the header allows the framing sites.
	publishedFrame(w, h.EmbedOrigins)
	_, _ = newFloorWriter(w, h.WriteTimeout).Write(page)
}

// writePublishFailure answers a page that could not be made, logging
// what was the server's fault.
func writePublishFailure(w http.ResponseWriter, log *slog.Logger, err error) {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, "format", err.Error())
		return
	}
	if statusOf(err) >= http.StatusInternalServerError {
		log.Error("publish", slog.Any("err", err))
	}
	writeFailure(w, "run", err)
}

// published is run id as one page. The last few pages are kept: an ended
// run's for as long as it is among them, for the embeds that a tutorial's
// readers open again and again; a running run's for a moment. At most
// publishSlots pages are made at once, however many ask.
func (h *handlers) published(ctx context.Context, id string, embed bool) ([]byte, error) {
	key := id
	if embed {
		key += "/embed"
	}
	if page, err, ok := h.publishedPages.get(key, time.Now()); ok {
		return page, err
	}
	select {
	case h.publishSlots <- struct{}{}:
		defer func() { <-h.publishSlots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Made meanwhile by the request this one waited behind.
	if page, err, ok := h.publishedPages.get(key, time.Now()); ok {
		return page, err
	}
	e, err := h.History.Export(id)
	if err != nil {
		return nil, err
	}
	page, err := h.publisher.Page(e, embed)
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge) && e.Run.Ended:
		// An ended run too large to publish stays so: it is refused from
		// now on without being made again.
		h.publishedPages.refuse(key, err)
		return nil, err
	case err != nil:
		return nil, err
	}
	h.publishedPages.put(key, keptPage{page: page, ended: e.Run.Ended}, time.Now())
	return page, nil
}

// publishSlots is how many pages are made at once; publishedKept how many
// are kept, and runningKept for how long a running run's is.
const (
	publishSlots  = 2
	publishedKept = 8
	runningKept   = 2 * time.Second
)

// pageCache keeps the last few published pages, and the ended runs found
// too large to publish.
type pageCache struct {
	mu    sync.Mutex
	order []string
	pages map[string]keptPage
	// refused are the ended runs too large to publish, and why; at most
	// maxRefused, the first forgotten first.
	refused      map[string]error
	refusedOrder []string
}

// maxRefused bounds the runs remembered as too large to publish.
const maxRefused = 1024

// refuse remembers that an ended run's page is too large to make.
func (c *pageCache) refuse(key string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused == nil {
		c.refused = map[string]error{}
	}
	if _, ok := c.refused[key]; ok {
		return
	}
	if len(c.refusedOrder) == maxRefused {
		delete(c.refused, c.refusedOrder[0])
		c.refusedOrder = c.refusedOrder[1:]
	}
	c.refused[key] = err
	c.refusedOrder = append(c.refusedOrder, key)
}

// keptPage is a published page.
type keptPage struct {
	page  []byte
	ended bool
	at    time.Time
}

func (c *pageCache) get(key string, now time.Time) ([]byte, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err, ok := c.refused[key]; ok {
		return nil, err, true
	}
	p, ok := c.pages[key]
	if !ok || (!p.ended && now.Sub(p.at) > runningKept) {
		return nil, nil, false
	}
	return p.page, nil, true
}

func (c *pageCache) put(key string, p keptPage, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[string]keptPage{}
	}
	if _, ok := c.pages[key]; !ok {
		if len(c.order) == publishedKept {
			delete(c.pages, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, key)
	}
	p.at = now
	c.pages[key] = p
}
