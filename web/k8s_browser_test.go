//go:build k8s

// The Kubernetes part of the page tests (make test-k8s): a run of three
// pods, one of each QoS class, on the test cluster, drawn in Chromium
// with each lane's QoS class, pod YAML and kernel view in Kubernetes'
// words, read back from the pods' cgroups under kubepods.
package web

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/store"
	"github.com/limitlab/limitlab/internal/workshop"
)

const qosRun = `{"name": "QoS classes", "mode": "parallel", "duration": "60s", "lanes": [
  {"name": "guaranteed", "workload": {"kind": "spin", "seconds": 3}, "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}},
  {"name": "burstable", "workload": {"kind": "spin", "seconds": 3}, "resources": {"requests": {"cpu": "250m", "memory": "32Mi"}}},
  {"name": "besteffort", "workload": {"kind": "spin", "seconds": 3}, "resources": {}}]}`

func TestKubernetesRunPage(t *testing.T) {
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _ := kubetest.Manager(t, func(o *workshop.Options) { o.Store = st })
	srv := serve(t, m, nil)
	id := startRun(t, srv.URL, qosRun)
	if v := waitEndedWithin(t, srv.URL, id, 3*time.Minute); v.State != runner.StateDone {
		t.Fatalf("run %s: %s", v.State, v.Error)
	}
	ctx := browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"][data-state="done"]`)),
	); err != nil {
		t.Fatal(err)
	}
	qos := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="qos"]')].map(e => e.dataset.qos)`))
	if strings.Join(qos, " ") != "Guaranteed Burstable BestEffort" {
		t.Errorf("QoS classes shown: %v", qos)
	}
	yaml := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="pod-yaml"]')].map(e => e.textContent)`))
	if len(yaml) != 3 || !strings.Contains(yaml[0], "kind: Pod") || !strings.Contains(yaml[0], "cpu: 500m") || !strings.Contains(yaml[1], "cpu: 250m") {
		t.Errorf("pod YAML shown: %q", yaml)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="copy-pod-yaml"]').length`)); n != 3 {
		t.Errorf("%d copy buttons for pod YAML, want 3", n)
	}
	paths := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="cgroup-path"]')].map(e => e.textContent)`))
	if len(paths) != 3 {
		t.Errorf("cgroup paths shown: %q", paths)
	}
	for i, class := range []string{"", "burstable", "besteffort"} {
		if i < len(paths) && (!strings.Contains(paths[i], "kubepods") || !strings.Contains(paths[i], class)) {
			t.Errorf("lane %d's cgroup %q, want one under kubepods/%s", i, paths[i], class)
		}
	}
	rows := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="kernel-row"]')].map(e => e.dataset.flag + " " + e.dataset.file + " " + e.dataset.holds)`))
	want := map[string]bool{}
	for _, r := range rows {
		want[r] = true
		if !strings.HasSuffix(r, " yes") {
			t.Errorf("kernel row %q does not hold", r)
		}
	}
	for _, r := range []string{"requests.cpu cpu.shares yes", "limits.cpu cpu.cfs_quota_us yes", "limits.memory memory.limit_in_bytes yes"} {
		if !want[r] {
			t.Errorf("no kernel row %q in %q", r, rows)
		}
	}
	shot := run(t, ctx, chromedp.FullScreenshot(90))
	path := screenshotPath(t, "k8s-qos.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// A pod lane's live change from the page: the lane's form asks in
// Kubernetes' words, the pod is resized in place, and the change row
// shows the resources kubelet applied and the kubectl command.
func TestKubernetesResizeFromThePage(t *testing.T) {
	m, _ := kubetest.Manager(t)
	srv := serve(t, m, nil)
	ctx := browser(t)
	id := browserStart(t, ctx, srv.URL, `{"name": "resize", "duration": "60s", "lanes": [
	  {"name": "spinner", "workload": {"kind": "spin", "threads": 2, "seconds": 15}, "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}}]}`)
	field := `[data-testid="control-0"] input[data-field="resources.limits.cpu"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/runs/"+id),
		chromedp.WaitVisible(chromedp.CSS(field)),
		chromedp.SetValue(chromedp.CSS(field), "1"),
		chromedp.Click(chromedp.CSS(`[data-testid="apply-0"]`)),
	); err != nil {
		t.Fatal(err)
	}
	row := liveText(t, ctx, `[data-testid="change-row"]`)
	if !strings.Contains(row, "limits {cpu: 1, memory: 64Mi} (Burstable)") || !strings.Contains(row, "--subresource resize") {
		t.Errorf("change row %q", row)
	}
	if s := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="resize"]').dataset.state`)); s != "Done" {
		t.Errorf("the resize's state on the page: %q", s)
	}
	waitEndedWithin(t, srv.URL, id, 2*time.Minute)
}
