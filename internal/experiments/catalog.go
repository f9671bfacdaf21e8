package experiments

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// Topics group the lab list, in the order the list shows them.
var Topics = []string{"cpu", "memory", "block-io", "services", "kubernetes"}

// TopicTitle is a topic as the pages name it.
func TopicTitle(t string) string {
	switch t {
	case "cpu":
		return "CPU"
	case "memory":
		return "Memory"
	case "block-io":
		return "Block IO"
	case "services":
		return "Services"
	case "kubernetes":
		return "Kubernetes"
	}
	return t
}

// Catalog is a set of labs: the built-in ones, then a facilitator's from
// lab files, and the lab files that could not be loaded, each with why.
// A catalogue is never changed once made: a reload makes a new one.
type Catalog struct {
	labs   []Lab
	broken []BrokenLab
}

// BrokenLab is a lab file that was not loaded, and the first reason.
type BrokenLab struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"` // 1-based; 0 when no line is to blame
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (b *BrokenLab) Error() string {
	var s strings.Builder
	s.WriteString(b.File)
	if b.Line > 0 {
		s.WriteString(":" + strconv.Itoa(b.Line))
	}
	if b.Field != "" {
		s.WriteString(": " + b.Field)
	}
	s.WriteString(": " + b.Message)
	return s.String()
}

// current is the catalogue the server uses: the built-in labs until a
// facilitator's directory is loaded. Readers take it whole, so a reload
// never shows them a half-loaded one.
var current atomic.Pointer[Catalog]

func init() { current.Store(&Catalog{labs: builtin}) }

// Install makes c the catalogue in use.
func Install(c *Catalog) { current.Store(c) }

// Current is the catalogue in use.
func Current() *Catalog { return current.Load() }

// NewCatalog is the built-in labs followed by extra ones, and the broken
// files. An extra lab whose id is taken, by a built-in lab or an earlier
// file, is broken rather than loaded.
func NewCatalog(extra []Lab, broken []BrokenLab) *Catalog {
	c := &Catalog{labs: slices.Clone(builtin), broken: slices.Clone(broken)}
	for _, l := range extra {
		if prev, ok := c.Lab(l.ID); ok {
			by := "a built-in lab"
			if prev.File != "" {
				by = prev.File
			}
			c.broken = append(c.broken, BrokenLab{File: l.File, Field: "id", Message: fmt.Sprintf("%q is taken by %s", l.ID, by)})
			continue
		}
		c.labs = append(c.labs, l)
	}
	sortLabs(c.labs)
	slices.SortFunc(c.broken, func(a, b BrokenLab) int { return strings.Compare(a.File, b.File) })
	return c
}

// Labs lists the catalogue's labs, by seed.
func (c *Catalog) Labs() []Lab { return c.labs }

// Broken lists the lab files that were not loaded, by file.
func (c *Catalog) Broken() []BrokenLab {
	if c.broken == nil {
		return []BrokenLab{}
	}
	return c.broken
}

// Lab finds a lab by id.
func (c *Catalog) Lab(id string) (Lab, bool) {
	for _, l := range c.labs {
		if l.ID == id {
			return l, true
		}
	}
	return Lab{}, false
}

// Builtin lists the labs the binary carries.
func Builtin() []Lab { return builtin }
