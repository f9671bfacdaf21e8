package engine

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// OCIRepo is the workload image's name where a cluster's nodes import it
// from an OCI archive (WriteOCIArchive); PauseImage is the sandbox image
// of the test cluster, the same binary.
const (
	OCIRepo    = "localhost/limitlab/workload"
	PauseImage = "localhost/limitlab/pause:1"
)

// OCIImageRef is the workload image's reference in an OCI archive of the
// static binary at binPath: tagged, like the Docker image, by the binary's
// digest.
func OCIImageRef(binPath string) (string, error) {
	f, err := os.Open(binPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return OCIRepo + ":" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// WriteOCIArchive writes an OCI image layout, as one tar, holding the
// workload image of the static binary at binPath (and, with pause, the
// test cluster's sandbox image: the same layer, another entrypoint), for
// `ctr images import` on a node. Nothing is pulled or built by an engine.
// It returns the references it wrote.
func WriteOCIArchive(w io.Writer, binPath string, pause bool) ([]string, error) {
	bin, err := os.Open(binPath)
	if err != nil {
		return nil, err
	}
	defer bin.Close()
	if err := checkStatic(bin); err != nil {
		return nil, fmt.Errorf("engine: %s cannot run in an image of its own: %w (build it with CGO_ENABLED=0)", binPath, err)
	}
	ref, err := OCIImageRef(binPath)
	if err != nil {
		return nil, err
	}
	layer, err := layerOf(bin)
	if err != nil {
		return nil, err
	}
	defer layer.remove()

	ow := ociWriter{tw: tar.NewWriter(w), blobs: map[string]bool{}}
	if err := ow.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, err
	}
	if err := ow.tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + strings.TrimPrefix(layer.digest, "sha256:"), Mode: 0o644, Size: layer.size}); err != nil {
		return nil, err
	}
	if _, err := io.Copy(ow.tw, io.NewSectionReader(layer.f, 0, layer.size)); err != nil {
		return nil, err
	}
	images := []struct{ ref, cmd string }{{ref, "workload"}}
	if pause {
		images = append(images, struct{ ref, cmd string }{PauseImage, "pause"})
	}
	var index struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     []ociDescriptor `json:"manifests"`
	}
	index.SchemaVersion, index.MediaType = 2, "application/vnd.oci.image.index.v1+json"
	var refs []string
	for _, im := range images {
		d, err := ow.image(layer, im.ref, im.cmd)
		if err != nil {
			return nil, err
		}
		index.Manifests = append(index.Manifests, d)
		refs = append(refs, im.ref)
	}
	ib, _ := json.Marshal(index)
	if err := ow.file("index.json", ib); err != nil {
		return nil, err
	}
	return refs, ow.tw.Close()
}

// ociLayer is the image's one layer, the binary, in a temporary file: its
// digest comes before it in the archive's index, and the binary is never
// held whole.
type ociLayer struct {
	f      *os.File
	size   int64
	digest string
}

func layerOf(bin *os.File) (ociLayer, error) {
	st, err := bin.Stat()
	if err != nil {
		return ociLayer{}, err
	}
	f, err := os.CreateTemp("", "limitlab-layer-*.tar")
	if err != nil {
		return ociLayer{}, err
	}
	l := ociLayer{f: f}
	h := sha256.New()
	if err := writeLayer(io.MultiWriter(f, h), io.NewSectionReader(bin, 0, st.Size())); err != nil {
		l.remove()
		return ociLayer{}, fmt.Errorf("engine: write image layer: %w", err)
	}
	if l.size, err = f.Seek(0, io.SeekCurrent); err != nil {
		l.remove()
		return ociLayer{}, err
	}
	l.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return l, nil
}

func (l ociLayer) remove() {
	l.f.Close()
	os.Remove(l.f.Name())
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ociWriter writes an OCI image layout as a tar stream, each blob once.
type ociWriter struct {
	tw    *tar.Writer
	blobs map[string]bool
}

func (ow ociWriter) file(name string, data []byte) error {
	if err := ow.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := ow.tw.Write(data)
	return err
}

// blob writes b under its digest, unless it is there already.
func (ow ociWriter) blob(b []byte) (string, error) {
	sum := sha256.Sum256(b)
	d := hex.EncodeToString(sum[:])
	if !ow.blobs[d] {
		ow.blobs[d] = true
		if err := ow.file("blobs/sha256/"+d, b); err != nil {
			return "", err
		}
	}
	return "sha256:" + d, nil
}

// image writes the config and manifest of an image of the layer that runs
// the binary with cmd as nobody, and returns its descriptor, named ref.
// The binary is this one, so the image is for the architecture it was
// built for: a node of another cannot run it, and says so.
func (ow ociWriter) image(layer ociLayer, ref, cmd string) (ociDescriptor, error) {
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/limitlab", cmd}, "User": "65534:65534", "WorkingDir": "/"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.digest}},
	})
	cd, err := ow.blob(config)
	if err != nil {
		return ociDescriptor{}, err
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": ociDescriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: cd, Size: int64(len(config))},
		"layers": []ociDescriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layer.digest, Size: layer.size}},
	})
	md, err := ow.blob(manifest)
	if err != nil {
		return ociDescriptor{}, err
	}
	return ociDescriptor{
		MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: md, Size: int64(len(manifest)),
		Annotations: map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:]},
	}, nil
}

// writeLayer is the image's one layer: the binary, and /data owned by
// nobody for the disk workloads, as in the Docker image.
func writeLayer(w io.Writer, bin *io.SectionReader) error {
	tw := tar.NewWriter(w)
	for _, h := range []*tar.Header{
		{Name: "data/", Mode: 0o755, Typeflag: tar.TypeDir, Uid: 65534, Gid: 65534},
		{Name: "data/README", Mode: 0o644, Size: int64(len(dataReadme)), Uid: 65534, Gid: 65534},
		{Name: "limitlab", Mode: 0o755, Size: bin.Size()},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		var err error
		switch h.Name {
		case "data/README":
			_, err = io.WriteString(tw, dataReadme)
		case "limitlab":
			_, err = io.Copy(tw, bin)
		}
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// Pulled says whether image is one a registry serves, which nodes pull,
// rather than the one this server writes and nodes import.
func Pulled(image string) bool {
	return image != "" && !strings.HasPrefix(image, OCIRepo+":")
}

// ParsePulledImage checks a workload image reference that a cluster's
// nodes are to pull: registry/repository with a tag or a digest.
func ParsePulledImage(ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	if _, err := name.ParseReference(ref, name.StrictValidation); err != nil {
		return "", fmt.Errorf("not an image reference: %w", err)
	}
	if !Pulled(ref) {
		return "", fmt.Errorf("%s is the name of the image this server writes for the nodes to import, not one they pull", OCIRepo)
	}
	host, _, found := strings.Cut(ref, "/")
	if !found || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "", fmt.Errorf("%q names no registry: give its host, e.g. ghcr.io/limitlab/limitlab-workload:v1.0.0", ref)
	}
	return ref, nil
}
