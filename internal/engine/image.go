package engine

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ImageRepo is the name of the workload image; its tag is a digest of the
// binary inside, so a rebuilt server never runs an old workload.
const ImageRepo = "limitlab-workload"

// LabelRun marks every container Limit Lab creates, with the run's id as
// its value; LabelLane holds the lane's index.
const (
	LabelRun  = "io.limitlab.run"
	LabelLane = "io.limitlab.lane"
	// LabelInstance holds the id of the server that made the container:
	// a server reaps only its own, never another's on the same engine.
	LabelInstance = "io.limitlab.instance"
)

// EnsureImage makes sure the workload image for the static binary at
// binPath exists on the engine, building it FROM scratch if not. Nothing is
// pulled: no registry is needed. It returns the image reference.
func EnsureImage(ctx context.Context, eng Engine, binPath string, log *slog.Logger) (string, error) {
	// The binary is read from its file as it is needed, never held whole:
	// a pool prepares several engines at once, each with its own build.
	f, err := os.Open(binPath)
	if err != nil {
		return "", fmt.Errorf("engine: read workload binary: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("engine: read workload binary: %w", err)
	}
	if err := checkStatic(f); err != nil {
		return "", fmt.Errorf("engine: %s cannot run in a FROM scratch image: %w (build it with CGO_ENABLED=0)", binPath, err)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, io.NewSectionReader(f, 0, st.Size())); err != nil {
		return "", fmt.Errorf("engine: read workload binary: %w", err)
	}
	ref := ImageRepo + ":" + hex.EncodeToString(sum.Sum(nil))[:16]
	if _, err := eng.ImageInspect(ctx, ref); err == nil {
		log.Info("workload image present", slog.String("image", ref))
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("engine: inspect image %s: %w", ref, err)
	}
	log.Info("building workload image", slog.String("image", ref), slog.Int64("binary_bytes", st.Size()))
	buildCtx := buildContext(io.NewSectionReader(f, 0, st.Size()))
	// A build that ends early stops the context's writer.
	defer buildCtx.Close()
	res, err := eng.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:        []string{ref, ImageRepo + ":latest"},
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{"io.limitlab.image": "workload"},
	})
	if err != nil {
		return "", fmt.Errorf("engine: build workload image: %w", err)
	}
	defer res.Body.Close()
	if err := followBuild(res.Body, log); err != nil {
		return "", fmt.Errorf("engine: build workload image: %w", err)
	}
	log.Info("workload image built", slog.String("image", ref))
	return ref, nil
}

// checkStatic refuses a dynamically linked binary: a scratch image has no
// loader or libc.
func checkStatic(bin io.ReaderAt) error {
	f, err := elf.NewFile(bin)
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("it is dynamically linked")
		}
	}
	return nil
}

// The image holds /data owned by nobody: a new volume mounted there takes
// the directory's ownership, so the disk workloads can write to it.
const dockerfile = `FROM scratch
COPY limitlab /limitlab
COPY --chown=65534:65534 data /data
USER 65534:65534
ENTRYPOINT ["/limitlab", "workload"]
`

// buildContext is the build's tar stream, written as the engine reads it:
// the Dockerfile, the binary and the data directory.
func buildContext(bin *io.SectionReader) io.ReadCloser {
	pr, pw := io.Pipe()
	// Lives until the tar is written or the reader is closed.
	go func() { pw.CloseWithError(writeContext(pw, bin)) }()
	return pr
}

func writeContext(w io.Writer, bin *io.SectionReader) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "data/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		mode int64
		data io.Reader
		size int64
	}{
		{"Dockerfile", 0o644, strings.NewReader(dockerfile), int64(len(dockerfile))},
		{"limitlab", 0o755, bin, bin.Size()},
		{"data/README", 0o644, strings.NewReader(dataReadme), int64(len(dataReadme))},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: f.size}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

const dataReadme = "Disk workloads write here, in a volume of their lane's own.\n"

// followBuild logs the build's progress and returns the error it reports in
// its JSON message stream, if any.
func followBuild(r io.Reader, log *slog.Logger) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
		if s := strings.TrimSpace(msg.Stream); s != "" {
			log.Info("image build", slog.String("step", s))
		}
	}
}

// probeImages looks for a facilitator's images on the engine
// (-allow-image): each one's presence. Nothing is pulled: an image the
// engine lacks is logged, and a lab that runs it is refused there.
func probeImages(ctx context.Context, eng Engine, names []string, log *slog.Logger) map[string]bool {
	images := map[string]bool{}
	for _, name := range names {
		_, err := eng.ImageInspect(ctx, name)
		images[name] = err == nil
		if err != nil {
			log.Warn("a facilitator's image is not on the engine; nothing is pulled", slog.String("image", name), slog.Any("err", err))
		} else {
			log.Info("a facilitator's image", slog.String("image", name))
		}
	}
	return images
}

// imageRemover is the engine call RemoveOldImage makes, where the engine
// has it (the Docker client does; the fake engine has no images).
type imageRemover interface {
	ImageRemove(ctx context.Context, image string, opts client.ImageRemoveOptions) (client.ImageRemoveResult, error)
}

// RemoveOldImage removes old, a workload image this server built with an
// earlier binary, unless a container still uses it: a server keeps only
// its current image. It never touches another image: another server's,
// even another Limit Lab's, is that server's to remove.
func RemoveOldImage(ctx context.Context, eng Engine, old string, log *slog.Logger) {
	r, ok := eng.(imageRemover)
	if !ok || !strings.HasPrefix(old, ImageRepo+":") || old == ImageRepo+":latest" {
		return
	}
	removeOldRuntimes(ctx, eng, r, old, log)
	if _, err := r.ImageRemove(ctx, old, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
		if !cerrdefs.IsNotFound(err) {
			log.Info("the previous workload image is kept", slog.String("image", old), slog.Any("why", err))
		}
		return
	}
	log.Info("removed this server's previous workload image", slog.String("image", old))
}

// imageLister is the engine call removeOldRuntimes makes, where the engine
// has it.
type imageLister interface {
	ImageList(ctx context.Context, opts client.ImageListOptions) (client.ImageListResult, error)
}

// removeOldRuntimes removes the runtimes images made from the old
// workload image (ensureRuntimes names them after its tag), unless a
// container still uses one.
func removeOldRuntimes(ctx context.Context, eng Engine, r imageRemover, old string, log *slog.Logger) {
	l, ok := eng.(imageLister)
	_, tag, _ := strings.Cut(old, ":")
	if !ok || tag == "" {
		return
	}
	res, err := l.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", RuntimesRepo+":"+tag+"-*")})
	if err != nil {
		return
	}
	for _, img := range res.Items {
		for _, ref := range img.RepoTags {
			if !strings.HasPrefix(ref, RuntimesRepo+":"+tag+"-") {
				continue
			}
			if _, err := r.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err == nil {
				log.Info("removed this server's previous runtimes image", slog.String("image", ref))
			}
		}
	}
}
