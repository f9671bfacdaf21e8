package experiments

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"

	"github.com/limitlab/limitlab/internal/experiments/finder"
	"github.com/limitlab/limitlab/internal/experiments/specs"
)

// Lab is a ready experiment from one of the seeds' write-ups: the question
// it answers, what to look for before and after, the spec, and how the
// verdict compares prediction with measurement. Labs are data: one embedded
// JSON file each under labs/.
type Lab struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Seed     string `json:"seed"`
	Question string `json:"question"`
	Before   string `json:"before"`
	After    string `json:"after"`
	// RequiresCPUs is the fewest CPUs on which the lab shows its effect.
	RequiresCPUs int `json:"requires_cpus"`
	// RequiresCPUManager is the kubelet CPU manager policy the lab needs
	// of its node ("static"); empty for any engine.
	RequiresCPUManager specs.CPUManagerPolicy `json:"requires_cpu_manager,omitempty"`
	Topic              string                 `json:"topic"` // one of Topics
	Verdict            *specs.VerdictSpec     `json:"verdict,omitempty"`
	Steps              []specs.Step           `json:"steps,omitempty"`
	Spec               json.RawMessage        `json:"spec"`
	// Find makes the lab a limit search: its spec's "service" lane under
	// one limit after another beside its "load" lane, until the smallest
	// limit that meets the target (the spec's own limit is one example).
	Find *finder.LabFind `json:"find,omitempty"`
	// File is the lab file it came from, for a facilitator's lab; empty
	// for the built-in ones.
	File string `json:"file,omitempty"`
}

//go:embed labs/*.json
var labFiles embed.FS

// builtin is the catalogue the binary carries.
var builtin = mustLoadLabs()

func mustLoadLabs() []Lab {
	ls, err := loadLabs(labFiles)
	if err != nil {
		panic(err)
	}
	return ls
}

func loadLabs(fsys fs.FS) ([]Lab, error) {
	names, err := fs.Glob(fsys, "labs/*.json")
	if err != nil {
		return nil, err
	}
	var out []Lab
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		l, broken := ParseLabFile(name, b)
		if broken != nil {
			return nil, broken
		}
		l.File = ""
		out = append(out, l)
	}
	sortLabs(out)
	return out, nil
}

func sortLabs(ls []Lab) {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Seed < ls[j].Seed })
}

// Labs lists the labs of the catalogue in use, by seed.
func Labs() []Lab { return current.Load().labs }

// LabByID finds a lab in the catalogue in use.
func LabByID(id string) (Lab, bool) { return current.Load().Lab(id) }

// Shows says whether this host can show the lab's effect, and why not: it
// needs its CPUs, and every limit it uses must be one the host applies.
func (l Lab) Shows(h specs.Host) (bool, string) {
	if h.NCPU > 0 && h.NCPU < l.RequiresCPUs {
		return false, fmt.Sprintf("this host has %d CPU(s); the lab needs %d to show its effect", h.NCPU, l.RequiresCPUs)
	}
	// A host of no CPUs is none in particular (a lab's page lists its
	// lanes): it shows any lab.
	if l.RequiresCPUManager != "" && h.NCPU > 0 && h.CPUManager != l.RequiresCPUManager {
		return false, specs.CPUManagerWhy(l.RequiresCPUManager, h)
	}
	spec, _ := specs.ParseCustom(l.Spec)
	for _, lane := range spec.Lanes {
		if lane.Workload.Kind == specs.KindRuntimes {
			if e := specs.CheckRuntimes(0, h); e != nil {
				return false, "this host cannot show it: " + e.Message
			}
		}
		if _, _, errs := specs.ResolveLane(lane, lane.Workload, h); errs != nil {
			return false, "this host cannot show it: " + errs[0].Field + ": " + errs[0].Message
		}
	}
	return true, ""
}

// LabSpec is the lab's spec, tagged with the lab's id.
func (l Lab) LabSpec() specs.Spec {
	spec, _ := specs.ParseCustom(l.Spec) // checked when the labs were loaded
	spec.Lab = l.ID
	return spec
}
