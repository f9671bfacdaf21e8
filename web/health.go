package web

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// health serves the operators' probes and metrics ahead of the router, so
// that no guard of a page stands in their way (a probe from kubelet, or
// Prometheus, names the pod's address as its Host): /healthz says the
// process serves; /readyz says it can take runs, once ready says so;
// /metrics is the metrics handler's, behind its token if it has one.
func health(next http.Handler, ready func() error, metrics http.Handler, token string) chi.Router {
	mux := chi.NewRouter()
	if metrics != nil {
		mux.Method(http.MethodGet, "/metrics", metricsToken(metrics, token))
	}
	mux.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Mount("/", next)
	return mux
}

// metricsToken refuses a scrape without the bearer token, when there is
// one.
func metricsToken(next http.Handler, token string) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="limitlab metrics"`)
			http.Error(w, "metrics: send Authorization: Bearer <the -metrics-token-file token>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
