package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

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
			w.Header().Set("Content-Security-Policy", "frame-ancestors 'self' "+strings.Join(h.EmbedOrigins, " "))
			// A browser that reads frame-ancestors ignores X-Frame-Options;
			// one that does not would refuse every other site's frame.
			w.Header().Del("X-Frame-Options")
		}
		next.ServeHTTP(w, r)
	})
}

// embedRun is a run's replay for another site's frame: the published page,
// which sizes itself to the frame and tells it its height.
func (h pages) embedRun(w http.ResponseWriter, r *http.Request) {
	page, err := h.published(chi.URLParam(r, "id"), true)
	if err != nil {
		h.writePublishFailure(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page's own policy (a meta element) allows its inline scripts by
	// hash; the header allows the framing sites.
	_, _ = newDeadlineWriter(w, h.WriteTimeout).Write(page)
}

func (h *handlers) writePublishFailure(w http.ResponseWriter, err error) {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, "format", err.Error())
		return
	}
	if statusOf(err) >= http.StatusInternalServerError {
		h.Log.Error("publish", slog.Any("err", err))
	}
	writeFailure(w, "run", err)
}

// published is run id as one page, rendered again only while it runs: an
// ended run's page is kept, the last few of them, for the embeds that a
// tutorial's readers open again and again.
func (h *handlers) published(id string, embed bool) ([]byte, error) {
	key := id
	if embed {
		key += "/embed"
	}
	if page, ok := h.publishedPages.get(key); ok {
		return page, nil
	}
	e, err := h.History.Export(id)
	if err != nil {
		return nil, err
	}
	page, err := h.publisher.Page(e, embed)
	if err != nil {
		return nil, err
	}
	if e.Run.Ended {
		h.publishedPages.put(key, page)
	}
	return page, nil
}

// pageCache keeps the last few published pages.
type pageCache struct {
	mu    sync.Mutex
	order []string
	pages map[string][]byte
}

const publishedKept = 8

func (c *pageCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[key]
	return p, ok
}

func (c *pageCache) put(key string, page []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[string][]byte{}
	}
	if _, ok := c.pages[key]; ok {
		return
	}
	if len(c.order) == publishedKept {
		delete(c.pages, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, key)
	c.pages[key] = page
}
