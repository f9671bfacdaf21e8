package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// InstanceFile holds the id of the server that uses a data directory.
const InstanceFile = "instance"

// Instance is the id of the server whose store is in dir: made at random
// on first start and kept, so that a restarted server knows its own
// containers (labelled with it) from another server's on the same engine.
func Instance(dir string) (string, error) {
	path := filepath.Join(dir, InstanceFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 8)
		_, _ = rand.Read(raw)
		id := hex.EncodeToString(raw)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("store: data directory: %w", err)
		}
		if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("store: instance id: %w", err)
		}
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("store: instance id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" || len(id) > 64 || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyz-") != "" {
		return "", fmt.Errorf("store: %s holds %q: want a short lowercase id", path, id)
	}
	return id, nil
}

// SecretFile holds the server's own secret: the participant ids it
// issues and their join proofs are signed with it.
const SecretFile = "secret"

// Secret is the server's own secret, kept in dir (0600): made at random
// on first start, so that the identities a server issued hold across its
// restarts, and no one who lacks the data directory can make one.
func Secret(dir string) ([]byte, error) {
	path := filepath.Join(dir, SecretFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: data directory: %w", err)
		}
		if err := os.WriteFile(path, []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("store: secret: %w", err)
		}
		return raw, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: secret: %w", err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(raw) < 32 {
		return nil, fmt.Errorf("store: %s: want 64 hex digits", path)
	}
	return raw, nil
}

// ImageFile names the workload image the server last built: when its
// binary changes, it removes that one, its own, from its engines.
const ImageFile = "workload-image"

// SwapImage records current as this data directory's workload image and
// returns the one it had before, if another: every engine of a pool asks,
// and each gets the same answer until the binary changes again.
func SwapImage(dir, current string) (previous string, err error) {
	path := filepath.Join(dir, ImageFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("store: workload image: %w", err)
	}
	// The file holds the current image and, under it, the one before.
	lines := strings.Fields(string(b))
	if len(lines) > 0 && lines[0] == current {
		if len(lines) > 1 {
			return lines[1], nil
		}
		return "", nil
	}
	if len(lines) > 0 {
		previous = lines[0]
	}
	if err := os.WriteFile(path, []byte(current+"\n"+previous+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("store: workload image: %w", err)
	}
	return previous, nil
}
