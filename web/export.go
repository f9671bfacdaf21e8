package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/experiments"
)

// The exports served at once: in all, and from one client address,
// whether its participant joined or not. Each holds a page of the run's
// messages and a buffer while its client reads, and a published page
// (shared with the page cache) while it is sent.
const (
	MaxExports           = 32
	MaxExportsPerAddress = 8
)

// exportSlots counts the exports being served.
type exportSlots struct {
	mu     sync.Mutex
	total  int
	byAddr map[string]int
}

// acquire takes a slot for a client address, or says why there is none.
func (s *exportSlots) acquire(address string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := guardKey(address)
	switch {
	case s.total >= MaxExports:
		return nil, fmt.Errorf("the server is sending %d exports already: try again in a moment", s.total)
	case s.byAddr[key] >= MaxExportsPerAddress:
		return nil, fmt.Errorf("%d exports are being sent to %s already: wait for one to finish", s.byAddr[key], address)
	}
	if s.byAddr == nil {
		s.byAddr = map[string]int{}
	}
	s.total++
	s.byAddr[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.byAddr[key]--; s.byAddr[key] <= 0 {
				delete(s.byAddr, key)
			}
		})
	}, nil
}

// exportSlot takes an export slot for the request, or answers 429 and
// says so.
func (h *handlers) exportSlot(w http.ResponseWriter, r *http.Request, field string) (func(), bool) {
	release, err := h.exports.acquire(addressOf(r))
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(ExportGrace/time.Second)))
		writeError(w, http.StatusTooManyRequests, field, "export: "+err.Error())
		return nil, false
	}
	return release, true
}

func (h api) apiExport(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "json"
	}
	switch format {
	case "json", "csv", "html", "lab":
	default:
		writeError(w, http.StatusBadRequest, "format", fmt.Sprintf("format %q: want json, csv, html or lab", format))
		return
	}
	v, ok := h.History.View(id)
	if !ok {
		writeError(w, http.StatusNotFound, "run", "no such run")
		return
	}
	release, ok := h.exportSlot(w, r, "format")
	if !ok {
		return
	}
	defer release()
	name := "limitlab-" + id
	out := newFloorWriter(w, h.WriteTimeout)
	switch format {
	case "lab":
		// The run's spec as a lab file for -labs, its lab's texts, verdict
		// and steps with it where it ran one.
		var from *experiments.Lab
		if lab, ok := experiments.LabByID(v.Lab); ok {
			from = &lab
		}
		lab := experiments.LabFile(experiments.LabID(v.Name, id[:min(6, len(id))]), v.Spec, from)
		w.Header().Set("Content-Disposition", `attachment; filename="`+lab.ID+`.json"`)
		writeJSON(w, http.StatusOK, lab)
	case "json":
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.json"`)
		w.Header().Set("Content-Type", "application/json")
		if err := h.History.WriteExport(out, id); err != nil {
			h.Log.Debug("export json", slog.String("run", id), slog.Any("err", err))
		}
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		if err := h.History.WriteCSV(out, id); err != nil {
			h.Log.Debug("export csv", slog.String("run", id), slog.Any("err", err))
		}
	case "html":
		// One page that replays the run with no server: docs/tutorials.md.
		page, err := h.published(r.Context(), id, false)
		if err != nil {
			writePublishFailure(w, h.Log, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.html"`)
		publishedFrame(w, h.EmbedOrigins)
		_, _ = out.Write(page)
	}
}
