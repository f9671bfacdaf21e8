package specs

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/distribution/reference"
)

// KindImage is a facilitator's own service: an image already on the
// engine, which a lab file names with its port and command. A
// participant's spec never names one (RefuseImages), and a server runs
// only the images it allows (-allow-image; Host.Images). Load lanes load
// it as they load the built-in http service. It is not among the Kinds the
// builder offers.
const KindImage = "image"

// Bounds of a facilitator's service.
const (
	// MinImagePort: the service runs as nobody without capabilities, so
	// it cannot bind a privileged port.
	MinImagePort   = 1024
	MaxCommandLen  = 512
	MaxCommandArgs = 32
)

// Service says whether the workload is a service a load lane may target:
// the built-in http service or a facilitator's image.
func (w Workload) Service() bool { return w.Kind == KindHTTP || w.Kind == KindImage }

// NamesImage says whether any of a facilitator's fields is set.
func (w Workload) NamesImage() bool {
	return w.Kind == KindImage || w.Image != "" || w.Port != 0 || w.Cmd != ""
}

// CheckImageName checks an image's name as the engine takes it
// (repository, optional tag or digest), without asking any registry.
func CheckImageName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("want an image name of 1 to 255 characters")
	}
	if _, err := reference.ParseNormalizedNamed(name); err != nil {
		return fmt.Errorf("%q is not an image name: %v", name, err)
	}
	return nil
}

// validateImage checks a facilitator's service: its image's name, its
// port (default wire.ServicePort) and its command (the image's own if
// empty), printable words separated by spaces.
func validateImage(w *Workload, add func(field, format string, args ...any)) {
	if err := CheckImageName(w.Image); err != nil {
		add("workload.image", "%v", err)
	}
	switch {
	case w.Port == 0:
		w.Port = 8080
	case w.Port < MinImagePort || w.Port > 65535:
		add("workload.port", "want a port from %d to 65535 (the service runs as nobody, without capabilities), got %d", MinImagePort, w.Port)
	}
	args := strings.Fields(w.Cmd)
	switch {
	case len(w.Cmd) > MaxCommandLen || len(args) > MaxCommandArgs:
		add("workload.command", "at most %d words in %d characters", MaxCommandArgs, MaxCommandLen)
	case strings.IndexFunc(w.Cmd, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		add("workload.command", "printable characters only")
	}
}

// RefuseImages refuses a participant's spec whose lanes name an image:
// only a facilitator's lab file may, on a server that allows the image.
func RefuseImages(spec Spec) Errors {
	var errs Errors
	for i, l := range spec.Lanes {
		if l.Workload.NamesImage() {
			errs = append(errs, ImageRefused(i, "workload.image"))
		}
	}
	return errs
}

func ImageRefused(lane int, field string) FieldError {
	return FieldError{Lane: lane, Field: field, Message: "a participant's spec cannot name an image: a facilitator's service comes from a lab file, on a server that allows its image (-allow-image)"}
}

// checkAllowed refuses a facilitator's service whose image this engine
// does not have, or this server does not allow.
func checkAllowed(i int, w Workload, h Host) *FieldError {
	if w.Kind == KindRuntimes {
		return CheckRuntimes(i, h)
	}
	if w.Kind != KindImage {
		return nil
	}
	present, allowed := h.Images[w.Image]
	switch {
	case h.Images == nil && !h.Kubernetes:
		return nil
	case h.Kubernetes:
		return &FieldError{Lane: i, Field: "workload.image", Message: "a facilitator's image runs on Docker engines only"}
	case !allowed:
		return &FieldError{Lane: i, Field: "workload.image", Message: fmt.Sprintf("this server does not allow the image %q: its facilitator starts it with -allow-image %s", w.Image, w.Image)}
	case !present:
		return &FieldError{Lane: i, Field: "workload.image", Message: fmt.Sprintf("the image %q is not on this engine, and nothing is pulled: build or load it there", w.Image)}
	}
	return nil
}

// CheckRuntimes refuses the runtimes workload where its image is not.
func CheckRuntimes(i int, h Host) *FieldError {
	switch {
	case h.Kubernetes:
		return &FieldError{Lane: i, Field: "workload.kind", Message: "the runtimes workload runs on Docker engines only: its image is built on the engine (images/runtimes), not pulled by a node"}
	case h.NoRuntimes != "":
		return &FieldError{Lane: i, Field: "workload.kind", Message: h.NoRuntimes}
	}
	return nil
}
