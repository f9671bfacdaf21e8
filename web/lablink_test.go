package web

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// A lab link opens the lab with a learner's limits, which its Run button
// sends as a spec; a bad one says what is wrong, naming the lane and
// field, and runs nothing.
func TestALabLinkOpensTheLabWithItsLimits(t *testing.T) {
	srv, m, _ := newFakeServer(t, nil)
	res, body := get(t, srv.URL+"/labs/noisy-neighbour-cpu?lanes="+url.QueryEscape("burner 1:cpus=0.25"))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%d %.300s", res.StatusCode, body)
	}
	if !strings.Contains(body, `data-testid="link-changes"`) || !strings.Contains(body, "burner 1: --cpus 0.25") {
		t.Errorf("the page does not say what the link changed")
	}
	spec := regexp.MustCompile(`<script type="application/json" id="lab-spec">(.*?)</script>`).FindStringSubmatch(body)
	if spec == nil {
		t.Fatal("no spec for the Run button")
	}
	if status, b := postJSON(t, srv.URL+"/api/runs", spec[1]); status != http.StatusCreated {
		t.Fatalf("the link's spec: %d %s", status, b)
	}
	runs := m.Archive().List("", 10)
	if len(runs) != 1 || runs[0].Spec.Lanes[1].Limits.CPUs != "0.25" || runs[0].Lab != "" {
		t.Fatalf("the run the link started: %+v", runs)
	}
	// Its page offers it as one HTML page and as an embed.
	if _, page := get(t, srv.URL+"/runs/"+runs[0].ID); !strings.Contains(page, `href="/api/runs/`+runs[0].ID+`/export?format=html"`) ||
		!strings.Contains(page, `data-testid="embed-code"`) {
		t.Errorf("the run page has no HTML export or embed button")
	}

	for link, want := range map[string]string{
		"nobody:cpus=1":         `lanes: the lab has no lane &#34;nobody&#34;`,
		"burner 1:cpus=9":       "lane 1 (burner 1)",
		"burner 1:cpu_shares=2": "cpu_shares",
	} {
		res, body := get(t, srv.URL+"/labs/noisy-neighbour-cpu?lanes="+url.QueryEscape(link))
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `data-testid="link-errors"`) ||
			!strings.Contains(body, want) || strings.Contains(body, `id="lab-spec"`) {
			t.Errorf("%q: %d, want 400 naming %q: %s", link, res.StatusCode, want, html.UnescapeString(errorsOf(body)))
		}
	}
	if n := len(m.Archive().List("", 10)); n != 1 {
		t.Errorf("bad links started %d runs", n-1)
	}
}

// The embeds may be framed by the sites -embed-origins names, and by no
// other; every other page stays unframeable.
func TestEmbedsAreFramedOnlyWhereAllowed(t *testing.T) {
	const site = "https://blog.example.com"
	allowed, m, _ := newFakeServer(t, func(d *Deps) { d.EmbedOrigins = []string{site} })
	refused := serve(t, m, nil)
	for _, c := range []struct {
		base, path, csp, xfo string
	}{
		{allowed.URL, "/embed/labs/noisy-neighbour-cpu", strings.Replace(AppCSP, "frame-ancestors 'self'", "frame-ancestors 'self' "+site, 1), ""},
		{allowed.URL, "/labs/noisy-neighbour-cpu", AppCSP, "SAMEORIGIN"},
		{refused.URL, "/embed/labs/noisy-neighbour-cpu", AppCSP, "SAMEORIGIN"},
	} {
		res, body := get(t, c.base+c.path)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != c.csp || res.Header.Get("X-Frame-Options") != c.xfo {
			t.Errorf("%s: %d, CSP %q, X-Frame-Options %q; want %q, %q", c.path, res.StatusCode,
				res.Header.Get("Content-Security-Policy"), res.Header.Get("X-Frame-Options"), c.csp, c.xfo)
		}
		if strings.HasPrefix(c.path, "/embed/") && (strings.Contains(body, `<header class="top">`) || !strings.Contains(body, `id="run-lab"`)) {
			t.Errorf("the embedded lab has the site's header, or no Run button")
		}
	}
	for _, path := range []string{"/embed/runs/nosuchrun", "/api/runs/nosuchrun/export?format=html", "/embed/labs/nosuchlab"} {
		if res, _ := get(t, allowed.URL+path); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.StatusCode)
		}
	}
}

func TestEmbedOriginsAreOrigins(t *testing.T) {
	got, err := ParseEmbedOrigins(" https://Blog.example.com, http://127.0.0.1:8080 ,")
	if err != nil || strings.Join(got, " ") != "https://blog.example.com http://127.0.0.1:8080" {
		t.Errorf("%q %v", got, err)
	}
	for _, bad := range []string{"blog.example.com", "https://a.example/post", "javascript:alert(1)", "https://*.example.com", "https://a.example 'unsafe-inline'", "https://a.example?x"} {
		if _, err := ParseEmbedOrigins(bad); err == nil {
			t.Errorf("%q taken as an origin", bad)
		}
	}
}

func get(t testing.TB, u string) (*http.Response, string) {
	t.Helper()
	res, err := testClient.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res, b.String()
}

func errorsOf(body string) string {
	if i := strings.Index(body, `data-testid="link-errors"`); i >= 0 {
		return body[i:min(len(body), i+400)]
	}
	return body[:min(len(body), 300)]
}
