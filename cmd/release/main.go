// Command release builds Limit Lab's dashboard image for every platform it
// ships on and pushes it to a registry as one OCI image index (make
// release VERSION=v0.1.0 REGISTRY=host/path): a static binary (CGO off)
// per platform, FROM scratch, each image's config naming its own
// architecture, written and pushed with go-containerregistry. Beside it,
// at REGISTRY-workload, the same binary as the workload image that the
// lanes' pods and the sampler of a cluster pull (the Helm chart's
// workloadImage).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var o options
	flag.StringVar(&o.version, "version", "", "the release's `version`, e.g. v0.1.0 (its image's tag)")
	flag.StringVar(&o.registry, "registry", "", "where to push: `host[:port]/path`, e.g. ghcr.io/limitlab/limitlab")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "the `platforms` to build for")
	flag.Parse()
	o.platforms = strings.Split(*platforms, ",")
	refs, err := release(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(refs, "\n"))
}

type options struct {
	version, registry string
	platforms         []string
	// dir is the module's root (the working directory if empty).
	dir string
}

// semver is a release's version as its tag.
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// release builds the binaries and images and pushes the two indexes; it
// returns their references by digest, the dashboard's first.
func release(ctx context.Context, o options, log io.Writer) ([]string, error) {
	if !semver.MatchString(o.version) {
		return nil, fmt.Errorf("-version %q: want a version such as v0.1.0", o.version)
	}
	if o.registry == "" {
		return nil, errors.New("-registry: name where to push, e.g. ghcr.io/limitlab/limitlab")
	}
	ref, err := name.ParseReference(o.registry+":"+o.version, insecureOnLoopback(o.registry)...)
	if err != nil {
		return nil, fmt.Errorf("-registry %q: %w", o.registry, err)
	}
	wref, err := name.ParseReference(o.registry+"-workload:"+o.version, insecureOnLoopback(o.registry)...)
	if err != nil {
		return nil, fmt.Errorf("-registry %q: %w", o.registry, err)
	}
	if _, err := os.Stat(filepath.Join(o.dir, "static", "vendor", "uPlot.iife.min.js")); err != nil {
		return nil, fmt.Errorf("the chart library is not in static/vendor (it is in the repository; make assets-update takes it from npm): %w", err)
	}
	tmp, err := os.MkdirTemp("", "limitlab-release")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	work := idx
	for _, p := range o.platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil || plat.OS != "linux" {
			return nil, fmt.Errorf("-platforms: %q is not a linux platform", p)
		}
		bin := filepath.Join(tmp, "limitlab-"+plat.Architecture)
		fmt.Fprintf(log, "release: building %s for %s\n", o.version, plat)
		if err := build(ctx, o, plat, bin); err != nil {
			return nil, err
		}
		img, err := image(bin, o.version, *plat, dashboardConfig)
		if err != nil {
			return nil, err
		}
		wimg, err := image(bin, o.version, *plat, workloadConfig)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
		work = mutate.AppendManifests(work, mutate.IndexAddendum{Add: wimg, Descriptor: v1.Descriptor{Platform: plat}})
	}
	var refs []string
	for _, push := range []struct {
		ref name.Reference
		idx v1.ImageIndex
	}{{ref, idx}, {wref, work}} {
		fmt.Fprintf(log, "release: pushing %s\n", push.ref)
		if err := remote.WriteIndex(push.ref, push.idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return nil, fmt.Errorf("push %s: %w", push.ref, err)
		}
		d, err := push.idx.Digest()
		if err != nil {
			return nil, err
		}
		refs = append(refs, push.ref.Context().Digest(d.String()).String())
	}
	return refs, nil
}

// insecureOnLoopback lets a registry on this machine be reached over
// plain http, as Docker does for 127.0.0.0/8.
func insecureOnLoopback(registry string) []name.Option {
	host, _, _ := strings.Cut(registry, "/")
	h := host
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	if h == "localhost" || strings.HasPrefix(h, "127.") || h == "[::1]" {
		return []name.Option{name.Insecure}
	}
	return nil
}

// build compiles the server, static, for the platform.
func build(ctx context.Context, o options, p *v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out,
		"-ldflags", "-s -w -X github.com/limitlab/limitlab/web.version="+o.version, "./cmd/server")
	cmd.Dir = o.dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", p, err, out)
	}
	return nil
}

// The dashboard's defaults in its image: it listens on the container's
// port, answers to the names a published loopback port is reached by,
// reads the host's cgroup files where the run line mounts them, and
// keeps its store in /data.
var imageEnv = []string{
	"LIMITLAB_ADDR=0.0.0.0:8080",
	"LIMITLAB_ALLOW_HOST=localhost,127.0.0.1,::1",
	"LIMITLAB_CGROUP_ROOT=/host/sys/fs/cgroup",
	"LIMITLAB_DATA=/data",
}

// dashboardConfig is the dashboard image's: the server, with its
// healthcheck and defaults.
func dashboardConfig(version string) v1.Config {
	return v1.Config{
		Entrypoint:   []string{"/limitlab"},
		Env:          imageEnv,
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Volumes:      map[string]struct{}{"/data": {}},
		WorkingDir:   "/",
		Healthcheck: &v1.HealthConfig{Test: []string{"CMD", "/limitlab", "healthcheck"},
			Interval: 30 * time.Second, Timeout: 5 * time.Second, StartPeriod: time.Minute, Retries: 3},
		Labels: labels(version, "Limit Lab"),
	}
}

// workloadConfig is the workload image's, as `limitlab image` writes it
// for an engine (internal/engine/oci.go): the lanes' load as nobody; the
// sampler's pods name their own command.
func workloadConfig(version string) v1.Config {
	return v1.Config{
		Entrypoint: []string{"/limitlab", "workload"},
		User:       "65534:65534",
		WorkingDir: "/",
		Labels:     labels(version, "Limit Lab workload"),
	}
}

func labels(version, title string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.source":   "https://github.com/limitlab/limitlab",
	}
}

// image is one of the release's images for one platform: FROM scratch,
// the static binary and an empty /data, its config naming the platform.
func image(bin, version string, p v1.Platform, config func(string) v1.Config) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(bin) })
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = config(version)
	return mutate.ConfigFile(img, cf)
}

// layerTar is the image's one layer: /limitlab and /data.
func layerTar(bin string) (io.ReadCloser, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, h := range []*tar.Header{
		{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "limitlab", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b)), ModTime: epoch},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(b); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}
