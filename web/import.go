package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// maxImportBytes bounds an imported file: a twelve-lane run of ten
// minutes at 100 ms samples is about 40 MiB of JSON.
const maxImportBytes = 64 << 20

func (h api) apiImport(w http.ResponseWriter, r *http.Request) {
	if !h.imports.allow(participantOf(r), time.Now()) {
		writeError(w, http.StatusTooManyRequests, "import", fmt.Sprintf("import: at most %d imports at once per participant, then one every %s", ImportsBurst, ImportsEvery))
		return
	}
	size := r.ContentLength
	if size < 0 || size > maxImportBytes {
		size = maxImportBytes
	}
	id, err := h.History.Import(http.MaxBytesReader(w, r.Body, maxImportBytes), size)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "import", "import: larger than 64 MiB")
		return
	case err != nil:
		writeFailure(w, "import", err)
		return
	}
	w.Header().Set("Location", "/runs/"+id)
	writeJSON(w, http.StatusCreated, createdBody{ID: id})
}
