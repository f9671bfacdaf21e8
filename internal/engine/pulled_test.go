package engine

import "testing"

// A workload image the nodes are to pull names its registry; the image
// this server writes is imported, never pulled.
func TestParsePulledImage(t *testing.T) {
	for _, c := range []struct {
		ref string
		ok  bool
	}{
		{"ghcr.io/limitlab/limitlab-workload:v1.2.0", true},
		{"127.0.0.1:5000/limitlab-workload@sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12", true},
		{"localhost:5000/limitlab/workload:v1", true},
		{"ubuntu:24.04", false},
		{OCIRepo + ":0123456789abcdef", false},
		{"ghcr.io/limitlab/limitlab-workload:v1 --privileged", false},
		{"ghcr.io/Limitlab/x:v1", false},
	} {
		_, err := ParsePulledImage(c.ref)
		if (err == nil) != c.ok {
			t.Errorf("%q: error %v, want ok %v", c.ref, err, c.ok)
		}
	}
	if Pulled(OCIRepo+":0123456789abcdef") || !Pulled("ghcr.io/limitlab/limitlab-workload:v1") {
		t.Error("Pulled does not tell the written image from a registry's")
	}
}
