// Package benchdoc writes one benchmark's section of a markdown file
// (docs/benchmarks.md): the lines between its begin and end markers, or,
// where the file has none yet, a new section with a heading at its end.
package benchdoc

import (
	"os"
	"strings"
)

// Replace puts body between the markers begin and end in the file at
// path; without them, it appends heading, the markers and body.
func Replace(path, begin, end, heading, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	section := begin + "\n" + body + end
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i >= 0 && j > i {
		s = s[:i] + section + s[j+len(end):]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + heading + "\n\n" + section + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
