package experiments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// rawSpec is the first pass of parsing: lanes stay raw so that each can be
// decoded on its own and its errors can name it.
type rawSpec struct {
	Lab      string            `json:"lab"`
	Name     string            `json:"name"`
	Mode     Mode              `json:"mode"`
	Duration Value             `json:"duration"`
	Lanes    []json.RawMessage `json:"lanes"`
}

// Parse decodes a spec from JSON, or the spec of a lab when the request
// names one ({"lab": "cpus-ladder"}). Unknown fields are errors, so a
// misspelt limit ("cpu_shares") is reported rather than silently ignored.
// Every problem found is returned, each naming its lane and field.
func Parse(data []byte) (Spec, Errors) {
	raw, errs := decodeRaw(data)
	if errs != nil || raw.Lab == "" {
		return lanesOf(raw, errs)
	}
	lab, ok := LabByID(raw.Lab)
	switch {
	case !ok:
		return Spec{}, Errors{{Lane: -1, Field: "lab", Message: fmt.Sprintf("no lab %q", raw.Lab)}}
	case len(raw.Lanes) > 0:
		// A lab's lanes are the lab; changed lanes are a new experiment.
		return Spec{}, Errors{{Lane: -1, Field: "lab", Message: "give either a lab or lanes, not both"}}
	}
	return lab.LabSpec(), nil
}

// parseCustom parses a spec that must not name a lab: a lab's own.
func parseCustom(data []byte) (Spec, Errors) {
	raw, errs := decodeRaw(data)
	if errs == nil && raw.Lab != "" {
		return Spec{}, Errors{{Lane: -1, Field: "lab", Message: "a lab's spec cannot name a lab"}}
	}
	return lanesOf(raw, errs)
}

func decodeRaw(data []byte) (rawSpec, Errors) {
	var raw rawSpec
	if err := strictDecode(data, &raw); err != nil {
		return raw, Errors{{Lane: -1, Field: jsonField(err, "spec"), Message: jsonMessage(err)}}
	}
	return raw, nil
}

// lanesOf decodes each lane on its own, so that its errors name it.
func lanesOf(raw rawSpec, errs Errors) (Spec, Errors) {
	if errs != nil {
		return Spec{}, errs
	}
	spec := Spec{Name: raw.Name, Mode: raw.Mode, Duration: string(raw.Duration)}
	for i, l := range raw.Lanes {
		var lane Lane
		if err := strictDecode(l, &lane); err != nil {
			errs = append(errs, FieldError{Lane: i, Field: jsonField(err, "lane"), Message: jsonMessage(err)})
		}
		spec.Lanes = append(spec.Lanes, lane)
	}
	return spec, errs
}

// ParseLimits decodes a live change of limits: a JSON object with the
// spec's limit names.
func ParseLimits(data []byte) (Limits, Errors) {
	var l Limits
	if err := strictDecode(data, &l); err != nil {
		return Limits{}, Errors{{Lane: -1, Field: jsonField(err, "limits"), Message: jsonMessage(err)}}
	}
	return l, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// jsonField names the field a decoding error is about, where encoding/json
// says so.
func jsonField(err error, fallback string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(name, `"`)
	}
	return fallback
}

func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		return "unknown field"
	}
	if errors.Is(err, io.EOF) {
		return "empty body: want a JSON spec"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
