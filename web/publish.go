package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	esbuild "github.com/evanw/esbuild/pkg/api"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/workshop"
)

// MaxPublishedBytes is the largest page Publish writes: a run that would
// not fit even with its ticks merged is refused, saying so.
const MaxPublishedBytes = 8 << 20

// publication is what a published page shows beside the run's final view.
type publication struct {
	View runner.RunView
	// Styles, UPlot and Replay are the page's style sheet and scripts,
	// inline; CSP allows them by their hashes and nothing else.
	Styles, UPlot, Replay, CSP string
	// Data is {"run": view, "stream": [...]}, as JSON that is safe in a
	// script element (encoding/json escapes <, > and &).
	Data     string
	Version  string
	Exported time.Time
	Thinned  string // what was merged to keep the page small, if anything
	Embed    bool   // in another site's frame: no margins
}

// kit is the published pages' style sheet and scripts, the same for every
// run: bundled once per Publisher.
type kit struct {
	styles, uplot, replay, csp string
}

// Publisher writes runs as pages that replay them anywhere, from the
// static tree the run page is served from: the replay draws with the run
// page's own chart modules, bundled with esbuild into one inline script.
type Publisher struct {
	static fs.FS
	once   sync.Once
	kit    kit
	err    error
}

// NewPublisher is a Publisher of pages built from static (the static/
// tree: app.css, the page modules, vendor/uPlot).
func NewPublisher(static fs.FS) *Publisher { return &Publisher{static: static} }

// Page is run e as one HTML page that needs no server, or an error that
// says why it cannot be one.
func (p *Publisher) Page(e workshop.Export, embed bool) ([]byte, error) {
	p.once.Do(func() { p.kit, p.err = buildKit(p.static) })
	if p.err != nil {
		return nil, p.err
	}
	stream, thinned, err := replayStream(e.Run, e.Stream)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(struct {
		Run    runner.RunView    `json:"run"`
		Stream []json.RawMessage `json:"stream"`
	}{e.Run, stream})
	if err != nil {
		return nil, err
	}
	pub := publication{View: e.Run, Styles: p.kit.styles, UPlot: p.kit.uplot, Replay: p.kit.replay, CSP: p.kit.csp,
		Data: string(data), Version: Version(), Exported: e.ExportedAt, Thinned: thinned, Embed: embed}
	var buf bytes.Buffer
	if err := publishedPage(pub).Render(context.Background(), &buf); err != nil {
		return nil, err
	}
	if buf.Len() > MaxPublishedBytes {
		return nil, &TooLargeError{Bytes: buf.Len()}
	}
	return buf.Bytes(), nil
}

// TooLargeError is a run too large to publish as one page.
type TooLargeError struct{ Bytes int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the run would make a page of %.1f MB, more than the %d MB a published run may be: export it as JSON instead", float64(e.Bytes)/1e6, MaxPublishedBytes>>20)
}

// buildKit reads the style sheets and uPlot, bundles static/replay.js with
// the modules it imports, and hashes each for the page's CSP.
func buildKit(static fs.FS) (kit, error) {
	var k kit
	var css strings.Builder
	for _, name := range []string{"vendor/uPlot.min.css", "app.css"} {
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return k, fmt.Errorf("publish: %w (make assets copies uPlot)", err)
		}
		css.Write(b)
		css.WriteByte('\n')
	}
	uplot, err := fs.ReadFile(static, "vendor/uPlot.iife.min.js")
	if err != nil {
		return k, fmt.Errorf("publish: %w (make assets copies uPlot)", err)
	}
	replay, err := bundle(static, "replay.js")
	if err != nil {
		return k, err
	}
	k.styles, k.uplot, k.replay = css.String(), string(uplot), replay
	for _, s := range []struct{ text, end string }{{k.styles, "</style"}, {k.uplot, "</script"}, {k.replay, "</script"}} {
		if strings.Contains(strings.ToLower(s.text), s.end) {
			return k, fmt.Errorf("publish: an inline asset holds %q", s.end)
		}
	}
	k.csp = fmt.Sprintf("default-src 'none'; script-src %s %s; style-src %s; img-src data:; base-uri 'none'; form-action 'none'",
		hash(k.uplot), hash(k.replay), hash(k.styles))
	return k, nil
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// bundle is the module entry under static and every module it imports, as
// one script (esbuild, reading only from static).
func bundle(static fs.FS, entry string) (string, error) {
	const ns = "static"
	plugin := esbuild.Plugin{Name: ns, Setup: func(b esbuild.PluginBuild) {
		b.OnResolve(esbuild.OnResolveOptions{Filter: `.*`}, func(a esbuild.OnResolveArgs) (esbuild.OnResolveResult, error) {
			p := a.Path
			if a.Kind != esbuild.ResolveEntryPoint {
				p = path.Join(path.Dir(a.Importer), a.Path)
			}
			return esbuild.OnResolveResult{Path: path.Clean(p), Namespace: ns}, nil
		})
		b.OnLoad(esbuild.OnLoadOptions{Filter: `.*`, Namespace: ns}, func(a esbuild.OnLoadArgs) (esbuild.OnLoadResult, error) {
			src, err := fs.ReadFile(static, a.Path)
			if err != nil {
				return esbuild.OnLoadResult{}, err
			}
			text := string(src)
			return esbuild.OnLoadResult{Contents: &text, Loader: esbuild.LoaderJS}, nil
		})
	}}
	res := esbuild.Build(esbuild.BuildOptions{
		EntryPoints: []string{entry}, Bundle: true, Write: false, Format: esbuild.FormatIIFE,
		Target: esbuild.ES2020, MinifySyntax: true, MinifyWhitespace: true, Charset: esbuild.CharsetUTF8,
		LogLevel: esbuild.LogLevelSilent, Plugins: []esbuild.Plugin{plugin},
	})
	if len(res.Errors) > 0 {
		var msgs []string
		for _, m := range res.Errors {
			msgs = append(msgs, m.Text)
		}
		return "", errors.New("publish: bundling " + entry + ": " + strings.Join(msgs, "; "))
	}
	if len(res.OutputFiles) != 1 {
		return "", fmt.Errorf("publish: bundling %s gave %d files", entry, len(res.OutputFiles))
	}
	return string(res.OutputFiles[0].Contents), nil
}

// version is the release's, where make release stamps it
// (-ldflags -X).
var version string

// Version is this build of Limit Lab: the release it was built as, its
// module version (go install at a version), or its commit where the build
// recorded one.
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+changes"
			}
		}
	}
	if rev != "" && (v == "" || v == "(devel)") {
		return rev + modified
	}
	if v == "" {
		return "(devel)"
	}
	return v
}

// provenanceText names what ran the run, where and when, and what
// published it.
func provenanceText(p publication) string {
	v := p.View
	s := "Recorded by Limit Lab"
	if v.Host != "" {
		s += " on " + v.Host
	}
	if v.Engine != "" {
		s += " (engine " + v.Engine + ")"
	}
	when := v.StartedAt
	if when.IsZero() {
		when = v.CreatedAt
	}
	s += ", " + when.UTC().Format("2006-01-02 15:04 MST") + "; " + string(v.Mode) + ", every sample " + f3(float64(v.IntervalMs)/1000) + " s."
	s += " Published by Limit Lab " + p.Version
	if !p.Exported.IsZero() {
		s += " on " + p.Exported.UTC().Format("2006-01-02")
	}
	return s + ". A replay: nothing here runs a container."
}
