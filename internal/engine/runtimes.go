package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// RuntimesBase is the image images/runtimes/build.sh makes from Debian's
// packages: the JDK 17, Node.js and Python, and a probe for each. It is
// never pulled. RuntimesRepo is the image a runtimes lane runs: that base
// with this server's workload binary added.
const (
	RuntimesBase = "limitlab-runtimes-base:latest"
	RuntimesRepo = "limitlab-runtimes"
)

// NoRuntimesBase is why the runtimes workload cannot run on an engine
// without RuntimesBase.
const NoRuntimesBase = "the runtimes image (" + RuntimesBase + ") is not on this engine, and nothing is pulled: build it there with images/runtimes/build.sh, from Debian's packages"

// ensureRuntimes makes the image a runtimes lane runs, from RuntimesBase
// and the workload image: the base with the workload binary copied in.
// It returns the image's reference, or why there is none: the base is
// not on the engine, or the build failed.
func ensureRuntimes(ctx context.Context, eng Engine, workload string, log *slog.Logger) (ref, why string) {
	base, err := eng.ImageInspect(ctx, RuntimesBase)
	switch {
	case cerrdefs.IsNotFound(err):
		log.Info("no runtimes image on the engine: the runtimes workload is refused there", slog.String("base", RuntimesBase))
		return "", NoRuntimesBase
	case err != nil:
		return "", fmt.Sprintf("the runtimes image could not be inspected: %v", err)
	}
	_, tag, _ := strings.Cut(workload, ":")
	ref = fmt.Sprintf("%s:%s-%.12s", RuntimesRepo, tag, strings.TrimPrefix(base.ID, "sha256:"))
	if _, err := eng.ImageInspect(ctx, ref); err == nil {
		return ref, ""
	}
	// The base is named by its ID, so that the image is the one the tag
	// says even if the base is rebuilt meanwhile.
	dockerfile := fmt.Sprintf("FROM %s AS workload\nFROM %s\nCOPY --from=workload /limitlab /limitlab\nUSER 65534:65534\nENTRYPOINT [\"/limitlab\", \"workload\"]\n",
		workload, base.ID)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))})
	_, _ = io.WriteString(tw, dockerfile)
	_ = tw.Close()
	log.Info("building the runtimes image", slog.String("image", ref))
	res, err := eng.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags: []string{ref}, Remove: true, ForceRemove: true,
		Labels: map[string]string{"io.limitlab.image": "runtimes"},
	})
	if err == nil {
		err = followBuild(res.Body, log)
		res.Body.Close()
	}
	if err != nil {
		log.Warn("the runtimes image", slog.Any("err", err))
		return "", fmt.Sprintf("the runtimes image could not be built on this engine: %v", err)
	}
	return ref, ""
}
