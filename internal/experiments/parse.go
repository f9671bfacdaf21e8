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
	Name     string            `json:"name"`
	Mode     Mode              `json:"mode"`
	Duration Value             `json:"duration"`
	Lanes    []json.RawMessage `json:"lanes"`
}

// Parse decodes a spec from JSON. Unknown fields are errors, so a misspelt
// limit ("cpu_shares") is reported rather than silently ignored. Every
// problem found is returned, each naming its lane and field.
func Parse(data []byte) (Spec, Errors) {
	var raw rawSpec
	if err := strictDecode(data, &raw); err != nil {
		return Spec{}, Errors{{Lane: -1, Field: jsonField(err, "spec"), Message: jsonMessage(err)}}
	}
	spec := Spec{Name: raw.Name, Mode: raw.Mode, Duration: string(raw.Duration)}
	var errs Errors
	for i, l := range raw.Lanes {
		var lane Lane
		if err := strictDecode(l, &lane); err != nil {
			errs = append(errs, FieldError{Lane: i, Field: jsonField(err, "lane"), Message: jsonMessage(err)})
		}
		spec.Lanes = append(spec.Lanes, lane)
	}
	return spec, errs
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
