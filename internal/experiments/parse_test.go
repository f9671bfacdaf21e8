package experiments

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// A run's recorded spec names its lab beside the lab's lanes: it reads
// back as that lab's run while the lab here has the same lanes, and as a
// custom run of its lanes when they differ or the lab is unknown.
func TestParseRecorded(t *testing.T) {
	lab, ok := LabByID("cpus-ladder")
	if !ok {
		t.Fatal("no lab cpus-ladder")
	}
	recorded := lab.LabSpec()
	b, _ := json.Marshal(recorded)
	if spec, errs := ParseRecorded(b); errs != nil || spec.Lab != "cpus-ladder" || len(spec.Lanes) != len(recorded.Lanes) {
		t.Errorf("the lab's own run: lab %q, %d lanes, %v", spec.Lab, len(spec.Lanes), errs)
	}
	if _, errs := Parse(b); errs == nil {
		t.Error("a client's spec with a lab and lanes was taken")
	}
	changed := recorded
	changed.Lanes = append([]specs.Lane{}, recorded.Lanes...)
	changed.Lanes[0].Limits.CPUs = "0.3"
	b, _ = json.Marshal(changed)
	if spec, errs := ParseRecorded(b); errs != nil || spec.Lab != "" {
		t.Errorf("lanes other than the lab's: lab %q, %v", spec.Lab, errs)
	}
	changed.Lab = "no-such-lab"
	b, _ = json.Marshal(changed)
	if spec, errs := ParseRecorded(b); errs != nil || spec.Lab != "" {
		t.Errorf("an unknown lab: lab %q, %v", spec.Lab, errs)
	}
	b = bytes.Replace(b, []byte(`"cpus":"0.3"`), []byte(`"cpu":"0.3"`), 1)
	if _, errs := ParseRecorded(b); errs == nil || errs[0].Lane != 0 {
		t.Errorf("a bad lane of a recorded spec: %v", errs)
	}
}
