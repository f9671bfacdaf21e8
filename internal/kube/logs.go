package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Logs copies the container's output: kubelet keeps one stream, so the
// workload's JSON lines go to stdout and anything else to stderr.
//
// A follow can end while the container runs: the API server or kubelet
// may close a long stream. It is opened again from the time of the last
// line it gave (each line is asked with kubelet's timestamp, and lines at
// or before that time are not copied twice), until the container has
// ended or ctx does.
func (p *Pods) Logs(ctx context.Context, id string, stdout, stderr io.Writer) error {
	var last time.Time // kubelet's time of the last line copied
	for {
		err := p.followLog(ctx, id, &last, stdout, stderr)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if ctx.Err() != nil || !p.running(ctx, id) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// followLog copies the container's lines after *last, moving *last on.
func (p *Pods) followLog(ctx context.Context, id string, last *time.Time, stdout, stderr io.Writer) error {
	opts := &corev1.PodLogOptions{Container: Container, Follow: true, Timestamps: true}
	if !last.IsZero() {
		since := metav1.NewTime(last.Truncate(time.Second)) // the API takes whole seconds
		opts.SinceTime = &since
	}
	rc, err := p.c.streams.CoreV1().Pods(p.c.cfg.Namespace).GetLogs(id, opts).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		at, line := splitTimestamp(sc.Bytes())
		if !at.IsZero() {
			if !at.After(*last) {
				continue // given before the stream was opened again
			}
			*last = at
		}
		w := stderr
		if json.Valid(line) && bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			w = stdout
		}
		// A copy: the scanner's buffer holds the lines still to come.
		if _, err := w.Write(append(slices.Clip(line), '\n')); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// splitTimestamp takes kubelet's RFC 3339 timestamp off the front of a
// line; a line without one is returned whole, with no time.
func splitTimestamp(b []byte) (time.Time, []byte) {
	i := bytes.IndexByte(b, ' ')
	if i < 0 {
		return time.Time{}, b
	}
	at, err := time.Parse(time.RFC3339Nano, string(b[:i]))
	if err != nil {
		return time.Time{}, b
	}
	return at, b[i+1:]
}

// running says whether the pod's container is still running (or not yet
// started): its output may go on.
func (p *Pods) running(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pod, err := p.c.cs.CoreV1().Pods(p.c.cfg.Namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return false
	}
	_, over := ended(pod)
	return !over && pod.DeletionTimestamp == nil
}
