package finder

import (
	"fmt"
	"strings"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// checkTurns checks a search's second turn and its fixed limits: the
// second searches the other limit, and no fixed limit is one a turn
// searches. Errors name the field ("then.min", "fixed.cpus").
func (fs FindSpec) checkTurns() specs.Errors {
	var errs specs.Errors
	searched := map[LimitKind]bool{fs.Search.Limit: true}
	if t := fs.Then; t != nil {
		switch {
		case t.Limit == fs.Search.Limit:
			errs = append(errs, specs.FieldError{Lane: -1, Field: "then.limit", Message: fmt.Sprintf("the second turn searches the other limit, not %q again", t.Limit)})
		default:
			second := fs
			second.Search, second.Then = *t, nil
			_, _, _, rerrs := second.Range()
			for _, e := range rerrs {
				e.Field = "then." + strings.TrimPrefix(e.Field, "search.")
				errs = append(errs, e)
			}
			if msg := repeatsWrong(max(t.Repeats, 1)); msg != "" { // 0: the first turn's
				errs = append(errs, specs.FieldError{Lane: -1, Field: "then.repeats", Message: msg})
			}
		}
		searched[t.Limit] = true
	}
	for limit, set := range map[LimitKind]bool{FindCPUs: fs.Fixed.CPUs != "", FindMemory: fs.Fixed.Memory != ""} {
		if set && searched[limit] {
			errs = append(errs, specs.FieldError{Lane: -1, Field: "fixed." + string(limit), Message: "the search sets this limit in every probe: leave it out of fixed"})
		}
	}
	return errs
}

// Following is the second turn of a search: the other limit searched,
// with the first one fixed at limit, the limit the first recommends (its
// answer with the headroom above it: the answer itself is the edge, where
// a second limit would tip the service over). False when the search has
// no second turn.
func (fs FindSpec) Following(limit string) (FindSpec, bool) {
	if fs.Then == nil {
		return FindSpec{}, false
	}
	next := fs
	next.Search, next.Then = *fs.Then, nil
	switch v := specs.Value(limit); fs.Search.Limit {
	case FindCPUs:
		next.Fixed.CPUs = v
	case FindMemory:
		next.Fixed.Memory = v
	}
	return next, true
}
