package web

import (
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// apiRoutes are every route of the API, each with the body its success
// answers with (nil: no JSON body of its own, as a websocket, a CSV or an
// export whose types are listed apart). A route the router has and this
// table lacks fails TestEveryAPIRouteHasItsShape, so a new one cannot
// miss the shape tests.
var apiRoutes = map[string]any{
	"GET /api/host":                           engine.HostView{},
	"GET /api/engines":                        enginesBody{},
	"GET /api/labs":                           labsBody{},
	"GET /api/runs":                           runsBody{},
	"POST /api/runs":                          createdBody{},
	"GET /api/runs/{id}":                      runner.RunView{},
	"GET /api/series/{id}":                    workshop.SeriesView{},
	"POST /api/runs/{id}/stop":                runner.RunView{},
	"POST /api/runs/{id}/lanes/{lane}/limits": runner.ChangeRecord{},
	"GET /api/runs/{id}/export":               workshop.Export{},
	"POST /api/runs/import":                   createdBody{},
	"POST /api/join":                          joinAnswer{},
	"POST /api/find":                          createdBody{},
	"GET /api/find/{id}":                      workshop.SearchView{},
	"POST /api/find/{id}/stop":                stoppingBody{},
	"GET /api/featured":                       runner.RunView{},
	"POST /api/runs/{id}/feature":             featuredBody{},
	"POST /api/queue/clear":                   clearedBody{},
	"GET /api/presenter/check":                presenterBody{},
	"GET /api/presenter/room":                 roomBody{},
	"GET /api/presenter/room.csv":             nil,
	"POST /api/presenter/room/{ref}/remove":   removedAnswer{},
	"POST /api/presenter/room/close":          roomState{},
	"POST /api/presenter/room/open":           roomState{},
	"GET /api/runs/{id}/live":                 nil, // runner.Message over a websocket
	"GET /api/featured/live":                  nil, // runner.Message over a websocket
	"GET /api/presenter/room/live":            roomBody{},
}

// The other wire types: what the websockets carry and every error.
var otherWireTypes = []any{runner.Message{}, errorBody{}}

// snakeKey is the form of every JSON key of the API.
var snakeKey = regexp.MustCompile(`^[a-z0-9_]+$`)

// The exceptions, which docs/design.md lists. dataKeyed are the wire
// fields whose JSON is a map keyed by data, not by names of the API: their
// keys are not checked. flagNamed are the types whose keys are the docker
// CLI's flags, as a spec writes them (cpu-shares, pids-limit).
var (
	dataKeyed = map[string]bool{"HostView.limits": true, "HostView.unsupported": true, "LaneResult.flags": true}
	flagNamed = map[reflect.Type]bool{reflect.TypeOf(specs.Limits{}): true}
)

// TestEveryAPIRouteHasItsShape walks the router's routes: every /api route
// is in apiRoutes, and every route there is the router's.
func TestEveryAPIRouteHasItsShape(t *testing.T) {
	srv, _, _ := newFakeServer(t, nil)
	var routes []string
	err := chi.Walk(srv.Config.Handler.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/") {
			routes = append(routes, method+" "+strings.TrimSuffix(route, "/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(routes)
	for _, r := range routes {
		if _, ok := apiRoutes[r]; !ok {
			t.Errorf("the router has %s, which the shape tests do not: add it to apiRoutes with its body's type", r)
		}
	}
	for r := range apiRoutes {
		if !slices.Contains(routes, r) {
			t.Errorf("apiRoutes has %s, which the router does not", r)
		}
	}
}

// TestWireKeysAreSnakeCase: every key of every body the API writes is
// snake_case, read from the types' tags, nested types included.
func TestWireKeysAreSnakeCase(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var bad []string
	var walk func(tp reflect.Type, path string)
	walk = func(tp reflect.Type, path string) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Array {
			tp = tp.Elem()
		}
		if tp.Kind() == reflect.Map {
			if !dataKeyed[path] {
				bad = append(bad, path+" (a map: its keys are data, list it in dataKeyed and docs/design.md, or make it a struct)")
			}
			walk(tp.Elem(), path+"[]")
			return
		}
		if tp.Kind() != reflect.Struct || seen[tp] || tp.PkgPath() == "time" {
			return
		}
		seen[tp] = true
		for i := range tp.NumField() {
			f := tp.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case name == "" && f.Anonymous:
				walk(f.Type, path)
				continue
			case name == "":
				bad = append(bad, tp.Name()+"."+f.Name+" (no json tag)")
				continue
			case !snakeKey.MatchString(name) && !flagNamed[tp]:
				bad = append(bad, tp.Name()+"."+name)
			}
			walk(f.Type, tp.Name()+"."+name)
		}
	}
	for _, v := range apiRoutes {
		if v != nil {
			walk(reflect.TypeOf(v), "")
		}
	}
	for _, v := range otherWireTypes {
		walk(reflect.TypeOf(v), "")
	}
	sort.Strings(bad)
	for _, b := range slices.Compact(bad) {
		t.Errorf("a key of the API that is not %s: %s", snakeKey, b)
	}
}
