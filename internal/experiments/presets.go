package experiments

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
)

// Preset is a ready experiment from the seeds' write-ups: a spec with a
// title and a sentence on what it shows.
type Preset struct {
	ID    string          `json:"id"`
	Title string          `json:"title"`
	Seed  string          `json:"seed"`
	About string          `json:"about"`
	Spec  json.RawMessage `json:"spec"`
}

//go:embed presets/*.json
var presetFiles embed.FS

var presets = mustLoadPresets()

func mustLoadPresets() []Preset {
	ps, err := loadPresets(presetFiles)
	if err != nil {
		panic(err)
	}
	return ps
}

func loadPresets(fsys fs.FS) ([]Preset, error) {
	names, err := fs.Glob(fsys, "presets/*.json")
	if err != nil {
		return nil, err
	}
	var out []Preset
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var p Preset
		if err := strictDecode(b, &p); err != nil {
			return nil, fmt.Errorf("preset %s: %w", name, err)
		}
		if _, errs := Parse(p.Spec); errs != nil {
			return nil, fmt.Errorf("preset %s: %w", name, errs)
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seed < out[j].Seed })
	return out, nil
}

// Presets lists the ready experiments.
func Presets() []Preset { return presets }
