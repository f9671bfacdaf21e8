package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/workshop"
)

// checkErrorShape fails unless b is the API's one error shape: an object
// with "errors", a non-empty list of {lane, field, message} with a field
// and a message, and at most "quota" beside it.
func checkErrorShape(t testing.TB, what string, contentType string, b []byte) {
	t.Helper()
	if !strings.HasPrefix(contentType, "application/json") {
		t.Errorf("%s: Content-Type %q, want JSON: %s", what, contentType, b)
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		t.Errorf("%s: not a JSON object: %s", what, b)
		return
	}
	for k := range body {
		if k != "errors" && k != "quota" {
			t.Errorf("%s: key %q beside errors: %s", what, k, b)
		}
	}
	var errs []map[string]any
	if err := json.Unmarshal(body["errors"], &errs); err != nil || len(errs) == 0 {
		t.Errorf("%s: errors is not a list of problems: %s", what, b)
		return
	}
	for _, e := range errs {
		_, lane := e["lane"].(float64)
		field, _ := e["field"].(string)
		msg, _ := e["message"].(string)
		if len(e) != 3 || !lane || field == "" || msg == "" {
			t.Errorf("%s: a problem is not {lane, field, message}: %v", what, e)
		}
	}
}

// Every API error has the one shape, whatever its status.
func TestAPIErrorsHaveOneShape(t *testing.T) {
	srv, m := newServerWith(t, func(d *Deps) { d.PresenterToken = strings.Repeat("p", 20); d.MaxViewersPerRun = 1 })
	do := func(method, path, contentType, body string) (int, string, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		res, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), b
	}
	// A run that has ended, for a change of its limits (409).
	status, b := postJSON(t, srv.URL+"/api/runs", `{"name": "short", "duration": "10s", "lanes": [{"workload": {"kind": "spin", "seconds": 0.2}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("a short run: %d %s", status, b)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(b, &created)
	enginetest := func() bool { v, ok := m.Archive().View(created.ID); return ok && v.State.Ended() }
	for deadline := time.Now().Add(time.Minute); !enginetest(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the short run never ended")
		}
	}

	cases := []struct {
		name         string
		method, path string
		contentType  string
		body         string
		want         int
	}{
		{"bad spec", "POST", "/api/runs", "application/json", `{"name": `, http.StatusBadRequest},
		{"bad limit", "GET", "/api/runs?limit=x", "", "", http.StatusBadRequest},
		{"no content type nor origin", "POST", "/api/runs", "text/plain", `{}`, http.StatusForbidden},
		{"presenter without token", "POST", "/api/queue/clear", "application/json", ``, http.StatusUnauthorized},
		{"no such run", "GET", "/api/runs/0000000000000000", "", "", http.StatusNotFound},
		{"no such live run", "GET", "/api/runs/0000000000000000/live", "", "", http.StatusNotFound},
		{"no such call", "GET", "/api/nothing", "", "", http.StatusNotFound},
		{"no such method", "DELETE", "/api/runs", "application/json", "", http.StatusMethodNotAllowed},
		{"limits of an ended run", "POST", "/api/runs/" + created.ID + "/lanes/0/limits", "application/json", `{"cpus": "0.5"}`, http.StatusConflict},
		{"spec too large", "POST", "/api/runs", "application/json", `{"name": "` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
		{"bad format", "GET", "/api/runs/" + created.ID + "/export?format=xml", "", "", http.StatusBadRequest},
		{"bad search", "POST", "/api/find", "application/json", `{"search": {"limit": "cpus", "min": "x"}}`, http.StatusBadRequest},
		{"no such search", "GET", "/api/find/0000000000000000", "", "", http.StatusNotFound},
		{"stop no such search", "POST", "/api/find/0000000000000000/stop", "application/json", "{}", http.StatusNotFound},
	}
	for _, c := range cases {
		status, ct, b := do(c.method, c.path, c.contentType, c.body)
		if status != c.want {
			t.Errorf("%s: status %d, want %d: %s", c.name, status, c.want, b)
		}
		checkErrorShape(t, c.name, ct, b)
	}
	// 429: imports past the rate.
	for i := range ImportsBurst + 1 {
		status, ct, b := do("POST", "/api/runs/import", "application/json", `{}`)
		if i == ImportsBurst {
			if status != http.StatusTooManyRequests {
				t.Errorf("import %d: status %d, want 429: %s", i+1, status, b)
			}
			checkErrorShape(t, "too many imports", ct, b)
		} else {
			checkErrorShape(t, fmt.Sprintf("import %d", i+1), ct, b)
		}
	}
	// 421: a Host not allowed.
	req, _ := http.NewRequest("GET", srv.URL+"/api/host", nil)
	req.Host = "evil.example"
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %d", res.StatusCode)
	}
	checkErrorShape(t, "foreign host", res.Header.Get("Content-Type"), b)
	// 503: the server is shutting down.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = m.Shutdown(ctx)
	status, ct, b := do("POST", "/api/runs", "application/json", `{"name": "late", "duration": "10s", "lanes": [{"workload": {"kind": "spin", "seconds": 1}}]}`)
	if status != http.StatusServiceUnavailable {
		t.Errorf("a run while shutting down: %d %s", status, b)
	}
	checkErrorShape(t, "shutting down", ct, b)
}

// A quota's refusal is a 403 of the one shape, with its figures under quota.
func TestQuotaRefusalHasTheOneShape(t *testing.T) {
	srv, _ := newServerWith(t, nil, func(o *workshop.Options) { o.Quotas = &workshop.Quotas{Participant: workshop.Limits{Containers: 1}} })
	status, b := postJSON(t, srv.URL+"/api/runs", `{"name": "two", "duration": "10s", "lanes": [{"workload": {"kind": "spin", "seconds": 1}}, {"workload": {"kind": "spin", "seconds": 1}}]}`)
	if status != http.StatusForbidden {
		t.Fatalf("two lanes against a quota of one container: %d %s", status, b)
	}
	checkErrorShape(t, "quota", "application/json", b)
	var body struct{ Quota map[string]any }
	if json.Unmarshal(b, &body) != nil || body.Quota["limit"] == nil {
		t.Errorf("a quota refusal without its figures: %s", b)
	}
}

// nullLists names every list or map in v that would go out as null: a nil
// slice or map whose field has no omitempty.
func nullLists(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nullLists(v.Elem(), path)
	case reflect.Slice:
		if v.IsNil() {
			return []string{path}
		}
		var out []string
		for i := range v.Len() {
			out = append(out, nullLists(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return []string{path}
		}
		var out []string
		for _, k := range v.MapKeys() {
			out = append(out, nullLists(v.MapIndex(k), fmt.Sprintf("%s.%v", path, k))...)
		}
		return out
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fv := v.Field(i)
			if (fv.Kind() == reflect.Slice || fv.Kind() == reflect.Map) && fv.IsNil() && (strings.Contains(tag, "omitempty") || f.Type == reflect.TypeOf(json.RawMessage{})) {
				continue // left out, not null
			}
			out = append(out, nullLists(fv, path+"."+name)...)
		}
		return out
	}
	return nil
}

// badKeys are the keys of a JSON document that are not snake_case
// (snakeKey), but for those under the fields whose keys are data or the
// docker CLI's flags (docs/design.md): limits, flags, unsupported.
func badKeys(doc any, path string) []string {
	var out []string
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			if !snakeKey.MatchString(k) {
				out = append(out, path+"."+k)
			}
			if k == "limits" || k == "flags" || k == "unsupported" {
				continue
			}
			out = append(out, badKeys(v, path+"."+k)...)
		}
	case []any:
		for i, v := range d {
			out = append(out, badKeys(v, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// Lists are [] when empty, never null, and every key of every response is
// snake_case: on a new store, and again once a run has ended.
func TestResponsesHaveListsAndSnakeCase(t *testing.T) {
	srv, m := newServer(t)
	check := func(when string) {
		t.Helper()
		for path, v := range map[string]any{
			"/api/runs":    map[string]any{"runs": m.Archive().List("", 100)},
			"/api/engines": map[string]any{"engines": m.Pool().Engines()},
			"/api/host":    m.Pool().Host().View(),
			"/api/labs":    map[string]any{"labs": experiments.Current().Labs(), "broken": experiments.Current().Broken()},
		} {
			if nulls := nullLists(reflect.ValueOf(v), ""); len(nulls) > 0 {
				t.Errorf("%s %s: null lists %v", when, path, nulls)
			}
		}
		paths := []string{"/api/runs", "/api/engines", "/api/host", "/api/labs"}
		for _, v := range m.Archive().List("", 5) {
			paths = append(paths, "/api/runs/"+v.ID, "/api/runs/"+v.ID+"/export?format=json", "/api/runs/"+v.ID+"/export?format=lab")
			if v.Series != nil && v.Series.ID == v.ID {
				paths = append(paths, "/api/series/"+v.ID)
				sv, _ := m.Archive().Series(v.ID)
				if nulls := nullLists(reflect.ValueOf(sv), ""); len(nulls) > 0 {
					t.Errorf("%s /api/series: null lists %v", when, nulls)
				}
			}
		}
		for _, p := range paths {
			res, err := testClient.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Errorf("%s %s: %v", when, p, err)
				continue
			}
			if bad := badKeys(doc, ""); len(bad) > 0 {
				t.Errorf("%s %s: keys not snake_case %v", when, p, bad)
			}
			if strings.Contains(string(b), `"runs": null`) || strings.Contains(string(b), `"engines": null`) || strings.Contains(string(b), `"broken": null`) {
				t.Errorf("%s %s: a null list: %.300s", when, p, b)
			}
		}
	}
	check("new store")
	status, b := postJSON(t, srv.URL+"/api/runs", `{"name": "short", "duration": "10s", "repeat": 2, "lanes": [{"workload": {"kind": "spin", "seconds": 0.3}, "limits": {"cpus": "0.5"}}]}`)
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, b)
	}
	var created struct{ ID string }
	_ = json.Unmarshal(b, &created)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if sv, ok := m.Archive().Series(created.ID); ok && sv.Done == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the series never ended")
		}
	}
	check("after a run")
}
