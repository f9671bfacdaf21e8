package experiments

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// MaxLinkLanes bounds the lanes= parameter of a lab link, in bytes.
const MaxLinkLanes = 2048

// LinkChange is one lane's limits as a lab link changes them.
type LinkChange struct {
	Lane   int
	Name   string
	Limits specs.Limits
}

// WithLinkLimits is the lab's spec with a link's limits: lanes is
// "lane:flag=value,flag=value;lane:flag=value", by the lanes' names and
// the spec's limit names ("worker:cpus=0.25"). A changed lab is an
// experiment of its own, as a changed spec is: it carries the lab's lanes
// and texts but not its verdict or steps. Every error names its lane and
// field; the spec must still be validated against a host.
func (l Lab) WithLinkLimits(lanes string) (specs.Spec, []LinkChange, specs.Errors) {
	spec := l.LabSpec()
	if len(lanes) > MaxLinkLanes {
		return spec, nil, specs.Errors{{Lane: -1, Field: "lanes", Message: fmt.Sprintf("at most %d bytes", MaxLinkLanes)}}
	}
	var changes []LinkChange
	var errs specs.Errors
	for _, part := range strings.Split(lanes, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		name, flags, ok := strings.Cut(part, ":")
		i := laneIndex(spec, strings.TrimSpace(name))
		switch {
		case !ok:
			errs = append(errs, specs.FieldError{Lane: -1, Field: "lanes", Message: fmt.Sprintf("%q: want lane:flag=value", part)})
			continue
		case i < 0:
			errs = append(errs, specs.FieldError{Lane: -1, Field: "lanes", Message: fmt.Sprintf("the lab has no lane %q", name)})
			continue
		}
		obj := map[string]string{}
		for _, f := range strings.Split(flags, ",") {
			k, v, ok := strings.Cut(f, "=")
			k = strings.TrimPrefix(strings.TrimSpace(k), "--")
			if !ok || k == "" {
				errs = append(errs, specs.FieldError{Lane: i, Field: "limits", Message: fmt.Sprintf("%q: want flag=value", f)})
				continue
			}
			obj[k] = strings.TrimSpace(v)
		}
		b, _ := json.Marshal(obj)
		change, lerrs := specs.ParseLimits(b)
		for _, e := range lerrs {
			e.Lane = i
			errs = append(errs, e)
		}
		if lerrs == nil {
			spec.Lanes[i].Limits = spec.Lanes[i].Limits.With(change)
			changes = append(changes, LinkChange{Lane: i, Name: spec.Lanes[i].Name, Limits: change})
		}
	}
	if errs != nil {
		return spec, nil, errs
	}
	if len(changes) > 0 {
		spec.Lab = ""
		spec.Name = l.Title + " (limits from a link)"
	}
	return spec, changes, nil
}

func laneIndex(spec specs.Spec, name string) int {
	for i, l := range spec.Lanes {
		if l.Name == name {
			return i
		}
	}
	return -1
}
