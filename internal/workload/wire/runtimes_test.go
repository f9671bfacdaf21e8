package wire

import (
	"strings"
	"testing"
)

func TestRuntimeReportsAreChecked(t *testing.T) {
	good := `{"runtime":"java","version":"17.0.21+2-1-deb12u1-Debian","figures":[{"name":"available_processors","value":1},{"name":"max_heap_bytes","value":134217728}],"gc":"Serial"}`
	r, err := ParseRuntimeReport([]byte(good+"\n"), "java")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Figure("available_processors"); !ok || v != 1 || r.GC != "Serial" {
		t.Errorf("read %+v", r)
	}
	for name, out := range map[string]string{
		"another runtime":  strings.Replace(good, `"java"`, `"node"`, 1),
		"markup version":   strings.Replace(good, `17.0.21+2-1-deb12u1-Debian`, `<script>`, 1),
		"unknown figure":   strings.Replace(good, `available_processors`, `cores`, 1),
		"repeated figure":  strings.Replace(good, `max_heap_bytes`, `available_processors`, 1),
		"unknown field":    strings.Replace(good, `"gc"`, `"note":"x","gc"`, 1),
		"unknown gc":       strings.Replace(good, `Serial`, `ZGC`, 1),
		"two reports":      good + good,
		"an error field":   strings.Replace(good, `"gc"`, `"error":"x","gc"`, 1),
		"huge value":       strings.Replace(good, `134217728`, `1e300`, 1),
		"not json":         "Exception in thread main",
		"over the maximum": good + strings.Repeat(" ", MaxRuntimeReport),
	} {
		if _, err := ParseRuntimeReport([]byte(out), "java"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	e := RuntimeError("node", errStr("exit status 1\n\x1b[31m"+strings.Repeat("x", 300)))
	if err := e.Check(); err != nil || len(e.Error) != MaxRuntimeError {
		t.Errorf("a failed probe's report: %q, %v", e.Error, err)
	}
	if err := CheckRuntimeRounds([]RuntimeRound{{}, {}, {}}); err == nil {
		t.Error("three rounds accepted")
	}
	if err := CheckRuntimeRounds([]RuntimeRound{{Reports: []RuntimeReport{r, r}}}); err == nil {
		t.Error("a runtime twice in a round accepted")
	}
}

type errStr string

func (e errStr) Error() string { return string(e) }
