package experiments

import (
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

func TestALabLinkChangesLimits(t *testing.T) {
	lab, _ := LabByID("noisy-neighbour-cpu")
	spec, changes, errs := lab.WithLinkLimits("burner 1:cpus=0.25,--memory=256m; burner 2:cpu-shares=512")
	if errs != nil {
		t.Fatal(errs)
	}
	if spec.Lab != "" || !strings.Contains(spec.Name, "limits from a link") {
		t.Errorf("a changed lab is still the lab: %q %q", spec.Lab, spec.Name)
	}
	if l := spec.Lanes[1].Limits; l.CPUs != "0.25" || l.Memory != "256m" {
		t.Errorf("burner 1's limits: %+v", l)
	}
	if l := spec.Lanes[2].Limits; l.CPUShares != "512" {
		t.Errorf("burner 2's limits: %+v", l)
	}
	// The other lanes keep theirs.
	if l := spec.Lanes[3].Limits; l.CPUs != "0.25" {
		t.Errorf("tamed 1's limits: %+v", l)
	}
	if len(changes) != 2 || changes[0].Name != "burner 1" || changes[1].Lane != 2 {
		t.Errorf("changes %+v", changes)
	}
	if same, changes, errs := lab.WithLinkLimits(" ; "); errs != nil || len(changes) != 0 || same.Lab != lab.ID {
		t.Errorf("an empty link changes the lab: %+v %v", changes, errs)
	}
}

func TestABadLabLinkNamesItsLaneAndField(t *testing.T) {
	lab, _ := LabByID("noisy-neighbour-cpu")
	for link, want := range map[string]specs.FieldError{
		"nobody:cpus=1":           {Lane: -1, Field: "lanes", Message: `no lane "nobody"`},
		"burner 1":                {Lane: -1, Field: "lanes", Message: "want lane:flag=value"},
		"burner 1:cpus":           {Lane: 1, Field: "limits", Message: "want flag=value"},
		"burner 1:cpu_shares=2":   {Lane: 1, Field: "cpu_shares", Message: ""},
		strings.Repeat("x", 3000): {Lane: -1, Field: "lanes", Message: "at most 2048 bytes"},
	} {
		_, _, errs := lab.WithLinkLimits(link)
		if len(errs) != 1 || errs[0].Lane != want.Lane || errs[0].Field != want.Field || !strings.Contains(errs[0].Message, want.Message) {
			t.Errorf("%.40q: %v, want %+v", link, errs, want)
		}
	}
}
