package wire

import (
	"reflect"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	p := Progress{T: 1.5, Done: 200, Rate: 133.3, Unit: "MiB", RSSMB: 12, Failures: 3,
		Latency: &Latency{P50: 1, P90: 2, P99: 3, Max: 4}, Ops: 50, IOPS: 33.3}
	b := AppendRecord(nil, p)
	got, ok := ParseRecord(b)
	if !ok || !reflect.DeepEqual(got, p) {
		t.Fatalf("ParseRecord(AppendRecord(p)) = %+v, %v\nwant %+v", got, ok, p)
	}
	// A shorter record written over a longer one: the old tail is not read.
	long := AppendRecord(nil, Progress{T: 100, Done: 123456789, Unit: "requests", Latency: &Latency{P99: 999}})
	short := AppendRecord(nil, Progress{T: 2, Done: 5, Unit: "MiB"})
	over := append(append([]byte{}, short...), long[len(short):]...)
	if got, ok := ParseRecord(over); !ok || got.Done != 5 {
		t.Errorf("a short record over a long one: %+v %v", got, ok)
	}
	// A torn record: the new one's start over the old one's end.
	torn := append(append([]byte{}, long[:10]...), AppendRecord(nil, Progress{T: 101, Done: 123456999, Unit: "requests"})[10:]...)
	if _, ok := ParseRecord(torn); ok {
		t.Error("a torn record parsed")
	}
	for _, bad := range [][]byte{nil, []byte("{}"), []byte("{}\tzz\n"), []byte("{\t0\n")} {
		if _, ok := ParseRecord(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
