package web

// The pages are templ components; their generated *_templ.go files are
// committed. Regenerate them with `go generate ./web` (the pinned templ, run
// from this directory, so the file names embedded in errors stay stable).
//go:generate go tool templ generate
