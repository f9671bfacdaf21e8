package specs

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
	Repeat   int               `json:"repeat"`
	Interval Value             `json:"interval"`
	Lanes    []json.RawMessage `json:"lanes"`
}

// ParseRequest decodes a spec as a request gives it: a client's lanes,
// or the id of the lab it names ({"lab": "cpus-ladder"}) with the run's
// repeats and interval, which the catalogue resolves. Unknown fields are
// errors, so a misspelt limit ("cpu_shares") is reported rather than
// silently ignored. Every problem found is returned, each naming its lane
// and field.
func ParseRequest(data []byte) (Spec, Errors) {
	raw, errs := decodeRaw(data)
	if errs != nil || raw.Lab == "" {
		return clientLanes(raw, errs)
	}
	if len(raw.Lanes) > 0 {
		// A lab's lanes are the lab; changed lanes are a new experiment.
		return Spec{}, Errors{{Lane: -1, Field: "lab", Message: "give either a lab or lanes, not both"}}
	}
	return Spec{Lab: raw.Lab, Repeat: raw.Repeat, Interval: string(raw.Interval)}, nil
}

// DecodeRecorded decodes a spec as a run recorded it (an export's): its
// lanes checked as a client's are, and the lab it names, if any, which
// the catalogue keeps only if its lanes are the same.
func DecodeRecorded(data []byte) (Spec, Errors) {
	raw, errs := decodeRaw(data)
	id := raw.Lab
	raw.Lab = ""
	spec, errs := clientLanes(raw, errs)
	if errs == nil {
		spec.Lab = id
	}
	return spec, errs
}

// clientLanes is a spec of lanes as a client gives them: each lane
// decoded on its own, and no image the server does not allow.
func clientLanes(raw rawSpec, errs Errors) (Spec, Errors) {
	spec, errs := lanesOf(raw, errs)
	if errs == nil {
		errs = RefuseImages(spec)
	}
	return spec, errs
}

// ParseCustom parses a spec that must not name a lab: a lab's own.
func ParseCustom(data []byte) (Spec, Errors) {
	raw, errs := decodeRaw(data)
	if errs == nil && raw.Lab != "" {
		return Spec{}, Errors{{Lane: -1, Field: "lab", Message: "a lab's spec cannot name a lab"}}
	}
	return lanesOf(raw, errs)
}

func decodeRaw(data []byte) (rawSpec, Errors) {
	var raw rawSpec
	if err := StrictDecode(data, &raw); err != nil {
		return raw, Errors{{Lane: -1, Field: JSONField(err, "spec"), Message: JSONMessage(err)}}
	}
	return raw, nil
}

// lanesOf decodes each lane on its own, so that its errors name it.
func lanesOf(raw rawSpec, errs Errors) (Spec, Errors) {
	if errs != nil {
		return Spec{}, errs
	}
	if len(raw.Lanes) > MaxLanes {
		// Refused before a lane is read: the cost of a spec is bounded by
		// the lane cap, not by the body's size.
		return Spec{}, Errors{{Lane: -1, Field: "lanes", Message: fmt.Sprintf("want 1 to %d lanes, got %d", MaxLanes, len(raw.Lanes))}}
	}
	spec := Spec{Name: raw.Name, Mode: raw.Mode, Duration: string(raw.Duration), Repeat: raw.Repeat, Interval: string(raw.Interval)}
	for i, l := range raw.Lanes {
		var lane Lane
		if err := StrictDecode(l, &lane); err != nil {
			errs = append(errs, FieldError{Lane: i, Field: JSONField(err, "lane"), Message: JSONMessage(err)})
		}
		spec.Lanes = append(spec.Lanes, lane)
	}
	return spec, errs
}

// ParseLimits decodes a live change of limits: a JSON object with the
// spec's limit names.
func ParseLimits(data []byte) (Limits, Errors) {
	var l Limits
	if err := StrictDecode(data, &l); err != nil {
		return Limits{}, Errors{{Lane: -1, Field: JSONField(err, "limits"), Message: JSONMessage(err)}}
	}
	return l, nil
}

func StrictDecode(data []byte, v any) error {
	if err := checkKeys(data); err != nil {
		return err
	}
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

// keyError is a key that encoding/json would take but a spec must not
// have: one that differs from a field's name only by case (json matches
// names case-insensitively, so "Lanes" would fill lanes), or one given
// twice (json keeps the last).
type keyError struct{ key, why string }

func (e *keyError) Error() string { return e.why }

// checkKeys walks a JSON value's tokens and refuses duplicate keys in an
// object and keys that are not lowercase (every spec field's name is).
// Malformed JSON is left to the decoder to describe.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				if t != strings.ToLower(t) {
					return &keyError{t, fmt.Sprintf("unknown field: field names are lowercase (%q)", strings.ToLower(t))}
				}
				if top.seen[t] {
					return &keyError{t, "given twice"}
				}
				top.seen[t] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended: a key comes next
		}
	}
}

// JSONField names the field a decoding error is about, where encoding/json
// says so.
func JSONField(err error, fallback string) string {
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.key
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(name, `"`)
	}
	return fallback
}

func JSONMessage(err error) string {
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.why
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type == bytesType {
		return fmt.Sprintf(`want a size in bytes: a whole number, or one with the docker CLI's units ("1m" is 1048576, "64k" 65536), got JSON %s`, te.Value)
	}
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
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "malformed JSON: it ends before the value does"
	}
	if errors.Is(err, io.EOF) {
		return "empty body: want a JSON spec"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
