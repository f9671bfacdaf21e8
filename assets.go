// Package limitlab holds the assets the server embeds: the static tree
// (CSS, page scripts, and the uPlot files `make assets` copies from npm).
package limitlab

import (
	"embed"
	"io/fs"
)

//go:embed static
var staticFiles embed.FS

// Static is the static/ tree, rooted at its contents.
func Static() fs.FS {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	return sub
}
