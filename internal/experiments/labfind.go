package experiments

import (
	"fmt"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// ParseFind decodes a search, its keys exact, or a search lab's of the
// catalogue in use ({"lab": "right-size-go"}).
func ParseFind(data []byte) (finder.FindSpec, specs.Errors) {
	fs, errs := finder.DecodeFind(data)
	if errs != nil || fs.Lab == "" {
		return fs, errs
	}
	lab, errs := labOf(fs.Lab)
	switch {
	case errs != nil:
		return finder.FindSpec{}, errs
	case lab.Find == nil:
		return finder.FindSpec{}, specs.Errors{{Lane: -1, Field: "lab", Message: fmt.Sprintf("lab %q is not a search: run it as a lab", fs.Lab)}}
	}
	return lab.FindOf()
}

// FindOf is a search lab's search: its spec's service and load lanes, its
// target and its range.
func (l Lab) FindOf() (finder.FindSpec, specs.Errors) {
	bad := func(msg string) (finder.FindSpec, specs.Errors) {
		return finder.FindSpec{}, specs.Errors{{Lane: -1, Field: "spec", Message: msg}}
	}
	if l.Find == nil {
		return bad("the lab is not a search")
	}
	fs := finder.FindSpec{Name: l.Title, Lab: l.ID, Target: l.Find.Target, Search: l.Find.Search, Then: l.Find.Then}
	var svc, load *specs.Lane
	spec := l.LabSpec()
	for i := range spec.Lanes {
		switch spec.Lanes[i].Name {
		case finder.ProbeService:
			svc = &spec.Lanes[i]
		case finder.ProbeLoad:
			load = &spec.Lanes[i]
		}
	}
	if svc == nil || load == nil || len(spec.Lanes) != 2 {
		return bad(fmt.Sprintf("a search lab's spec has two lanes, %q and %q", finder.ProbeService, finder.ProbeLoad))
	}
	w := load.Workload
	if w.Kind != specs.KindLoad || w.Target != finder.ProbeService {
		return bad(fmt.Sprintf("the %q lane is a load on the %q lane", finder.ProbeLoad, finder.ProbeService))
	}
	fs.Service = svc.Workload
	fs.Load = finder.FindLoad{Rate: w.Rate, Concurrency: w.Concurrency, Seconds: w.Seconds}
	return fs, nil
}
