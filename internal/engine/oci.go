package engine

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
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
	st, err := bin.Stat()
	if err != nil {
		return nil, err
	}
	ref, err := OCIImageRef(binPath)
	if err != nil {
		return nil, err
	}
	// The layer goes to a temporary file: its digest comes before it in
	// the archive's index, and the binary is never held whole.
	layer, err := os.CreateTemp("", "limitlab-layer-*.tar")
	if err != nil {
		return nil, err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	lh := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, lh), io.NewSectionReader(bin, 0, st.Size())); err != nil {
		return nil, fmt.Errorf("engine: write image layer: %w", err)
	}
	layerSize, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	layerDigest := "sha256:" + hex.EncodeToString(lh.Sum(nil))

	tw := tar.NewWriter(w)
	blobs := map[string]bool{}
	blob := func(b []byte) (string, error) {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		if !blobs[d] {
			blobs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + d, Mode: 0o644, Size: int64(len(b))}); err != nil {
				return "", err
			}
			if _, err := tw.Write(b); err != nil {
				return "", err
			}
		}
		return "sha256:" + d, nil
	}
	for _, f := range []struct {
		name string
		data string
	}{{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + strings.TrimPrefix(layerDigest, "sha256:"), Mode: 0o644, Size: layerSize}); err != nil {
		return nil, err
	}
	if _, err := io.Copy(tw, io.NewSectionReader(layer, 0, layerSize)); err != nil {
		return nil, err
	}

	images := []struct{ ref, cmd string }{{ref, "workload"}}
	if pause {
		images = append(images, struct{ ref, cmd string }{PauseImage, "pause"})
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	index.SchemaVersion, index.MediaType = 2, "application/vnd.oci.image.index.v1+json"
	var refs []string
	for _, im := range images {
		config, _ := json.Marshal(map[string]any{
			"architecture": "amd64", "os": "linux",
			"config": map[string]any{"Entrypoint": []string{"/limitlab", im.cmd}, "User": "65534:65534", "WorkingDir": "/"},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		})
		cd, err := blob(config)
		if err != nil {
			return nil, err
		}
		manifest, _ := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: cd, Size: int64(len(config))},
			"layers": []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: layerSize}},
		})
		md, err := blob(manifest)
		if err != nil {
			return nil, err
		}
		index.Manifests = append(index.Manifests, descriptor{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: md, Size: int64(len(manifest)),
			Annotations: map[string]string{"io.containerd.image.name": im.ref, "org.opencontainers.image.ref.name": im.ref[strings.LastIndex(im.ref, ":")+1:]},
		})
		refs = append(refs, im.ref)
	}
	ib, _ := json.Marshal(index)
	if err := tw.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: int64(len(ib))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(ib); err != nil {
		return nil, err
	}
	return refs, tw.Close()
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
