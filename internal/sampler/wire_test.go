package sampler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
)

// Counters cross the wire and come back whole: every field of
// engine.Counters is set to a value of its own, sent as the sampler sends
// it and read as the dashboard reads it. A field added to engine.Counters
// and not to the protocol fails here.
func TestCountersRoundTrip(t *testing.T) {
	var c engine.Counters
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint64:
			f.SetUint(uint64(1000 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct: // At
			f.Set(reflect.ValueOf(time.Date(2026, 12, 2, 6, 0, 0, 123456789, time.UTC)))
		default:
			t.Fatalf("field %s of kind %s: give the protocol a way to carry it", v.Type().Field(i).Name, f.Kind())
		}
	}
	b, err := json.Marshal(reply{Counters: ptr(toWire(c))})
	if err != nil {
		t.Fatal(err)
	}
	var back reply
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := fromWire(*back.Counters); got != c {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, c)
	}
	// The names on the wire are the protocol's, all snake_case.
	var keys struct{ Counters map[string]any }
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys.Counters) != v.NumField() {
		t.Errorf("%d keys on the wire for %d fields: %s", len(keys.Counters), v.NumField(), b)
	}
	for k := range keys.Counters {
		if strings.ToLower(k) != k {
			t.Errorf("key %q is not snake_case", k)
		}
	}
}

func ptr[T any](v T) *T { return &v }
