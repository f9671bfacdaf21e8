package web

import (
	"net/http"

	"github.com/limitlab/limitlab/internal/experiments/specs"
	"github.com/limitlab/limitlab/internal/workshop"
)

// errorBody is the one shape of every error the API answers, whatever
// its status: the problems, each naming its lane (-1 for none) and its
// field, and for a refusal by a quota the quota's figures. A client reads
// errors and nothing else (static/post.js).
type errorBody struct {
	Errors specs.Errors         `json:"errors"`
	Quota  *workshop.QuotaError `json:"quota,omitempty"`
}

// writeErrors answers status with errs, in the one shape.
func writeErrors(w http.ResponseWriter, status int, errs specs.Errors) {
	if errs == nil {
		errs = specs.Errors{}
	}
	writeJSON(w, status, errorBody{Errors: errs})
}

// writeError answers status with one problem, of no lane.
func writeError(w http.ResponseWriter, status int, field, message string) {
	writeErrors(w, status, specs.Errors{{Lane: -1, Field: field, Message: message}})
}

// writeFailure answers an error of the workshop or the runner with the
// status it maps to (statusOf), naming field.
func writeFailure(w http.ResponseWriter, field string, err error) {
	writeError(w, statusOf(err), field, err.Error())
}

// writeQuota refuses a run or a change over a quota as Kubernetes refuses a
// pod: 403, naming the limit and by how much.
func writeQuota(w http.ResponseWriter, quota *workshop.QuotaError) {
	writeJSON(w, http.StatusForbidden, errorBody{
		Errors: specs.Errors{{Lane: quota.Lane, Field: "quota: " + quota.Limit, Message: quota.Text}},
		Quota:  quota,
	})
}
