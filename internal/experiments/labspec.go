package experiments

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Parse decodes a spec from JSON, or the spec of a lab of the catalogue in
// use when the request names one ({"lab": "cpus-ladder"}). Every problem
// found is returned, each naming its lane and field.
func Parse(data []byte) (specs.Spec, specs.Errors) {
	req, errs := specs.ParseRequest(data)
	if errs != nil || req.Lab == "" {
		return req, errs
	}
	lab, errs := labOf(req.Lab)
	if errs != nil {
		return specs.Spec{}, errs
	}
	spec := lab.LabSpec()
	spec.Repeat = req.Repeat
	if req.Interval != "" {
		spec.Interval = req.Interval
	}
	return spec, nil
}

// ParseRecorded decodes a spec as a run recorded it (an export's): a lab's
// run names its lab beside the lab's lanes. It stays that lab's run when
// the lab here has the same lanes, and is a custom run of those lanes
// otherwise; either way the lanes are checked as a client's are.
func ParseRecorded(data []byte) (specs.Spec, specs.Errors) {
	spec, errs := specs.DecodeRecorded(data)
	if errs != nil || spec.Lab == "" {
		return spec, errs
	}
	id := spec.Lab
	spec.Lab = ""
	if lab, ok := LabByID(id); ok {
		mine, _ := json.Marshal(lab.LabSpec().Lanes)
		theirs, _ := json.Marshal(spec.Lanes)
		if bytes.Equal(mine, theirs) {
			spec.Lab = id
		}
	}
	return spec, nil
}

// Validate checks a spec against a host (ValidateLanes) and the lab it
// names: one of the catalogue in use that this host can show, whose
// verdict and steps the plan then carries. A plan is returned only when
// there is no problem at all.
func Validate(spec specs.Spec, host specs.Host) (specs.Plan, specs.Errors) {
	var labErrs specs.Errors
	var lab Lab
	if spec.Lab != "" {
		lab, labErrs = labOf(spec.Lab)
		if labErrs == nil {
			if shows, why := lab.Shows(host); !shows {
				labErrs = specs.Errors{{Lane: -1, Field: "lab", Message: why}}
			}
		}
	}
	plan, errs := specs.ValidateLanes(spec, host)
	if errs = append(labErrs, errs...); len(errs) > 0 {
		return specs.Plan{}, errs
	}
	if spec.Lab != "" {
		plan.Lab, plan.Verdict, plan.Steps = lab.ID, lab.Verdict, lab.Steps
	}
	return plan, nil
}

// labOf is the lab of the catalogue in use with that id, or the error
// that names it.
func labOf(id string) (Lab, specs.Errors) {
	lab, ok := LabByID(id)
	if !ok {
		return Lab{}, specs.Errors{{Lane: -1, Field: "lab", Message: fmt.Sprintf("no lab %q", id)}}
	}
	return lab, nil
}
