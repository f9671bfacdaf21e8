//go:build k8s

package kube_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/engine"
	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/experiments"
	"github.com/limitlab/limitlab/internal/kube"
	"github.com/limitlab/limitlab/internal/kubetest"
	"github.com/limitlab/limitlab/internal/runner"
	"github.com/limitlab/limitlab/internal/sampler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A run whose pods' cgroup files are read through the node's sampler
// (deploy/kubernetes/sampler.yaml, which k8s/run.sh deploys for this
// test): the samples and the kernel view come from it, and show the
// limit; the sampler's own CPU time over the run is logged, read from
// its pod's cgroup here.
func TestLabThroughTheSampler(t *testing.T) {
	m, cs := kubetest.ThroughSampler(t)
	if e := m.Pool().Engines(); len(e) != 1 || e[0].Host == nil || e[0].Host.StatsSource != engine.StatsSampler {
		t.Fatalf("engines %+v: want the cluster read through its sampler", e)
	}
	before, smpPod := samplerCPU(t, cs)
	spec, errs := experiments.Parse([]byte(`{"mode": "parallel", "duration": "30s", "lanes": [
		{"name": "half", "workload": {"kind": "spin", "threads": 2, "seconds": 8}, "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}}},
		{"name": "free", "workload": {"kind": "spin", "threads": 1, "seconds": 8}, "resources": {"requests": {"cpu": "100m"}}}]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	enginetest.Measure(t, "a run read through the sampler", func(t testing.TB) {
		p, errs := m.Pool().Validate(spec)
		if errs != nil {
			t.Fatal(errs)
		}
		r, err := m.SubmitFrom(spec, p, "", "")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		v := enginetest.WaitDone(t, r, 2*time.Minute)
		wall := time.Since(start)
		if v.State != runner.StateDone {
			t.Fatalf("run %s: %s", v.State, v.Error)
		}
		for _, l := range v.Lanes {
			t.Logf("lane %s: %.3f cores, stats from %s", l.Name, l.MeasuredCores, l.StatsSource)
			checkKernel(t, l)
			if l.StatsSource != engine.StatsSampler {
				t.Errorf("lane %s: stats from %q, want the sampler", l.Name, l.StatsSource)
			}
		}
		if got := v.Lanes[0].MeasuredCores; got < 0.4 || got > 0.6 {
			t.Errorf("two threads under limits.cpu 500m used %.2f CPUs, by the sampler", got)
		}
		if half, free := v.Lanes[0].MeasuredCores, v.Lanes[1].MeasuredCores; free < half+0.15 {
			t.Errorf("one thread without a limit used %.2f CPUs, by the sampler, hardly more than two under limits.cpu 500m (%.2f)", free, half)
		}
		after, _ := samplerCPU(t, cs)
		t.Logf("figure: the sampler pod's CPU over a run of 2 pods read every %s | %.4f of a CPU (%.3f s over %.1f s), pod %s",
			runner.DefaultInterval, (after-before)/wall.Seconds(), after-before, wall.Seconds(), smpPod)
		before = after
	})
}

// samplerCPU is the CPU time the node's sampler pod has used, in seconds,
// read from its cgroup here.
func samplerCPU(t testing.TB, cs kubernetes.Interface) (float64, string) {
	t.Helper()
	list, err := cs.CoreV1().Pods(kube.SamplerNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + kube.SamplerApp})
	if err != nil || len(list.Items) != 1 || len(list.Items[0].Status.ContainerStatuses) != 1 {
		t.Fatalf("the sampler pod: %v, %v", list, err)
	}
	p := list.Items[0]
	cid := p.Status.ContainerStatuses[0].ContainerID
	cid = cid[strings.Index(cid, "://")+3:]
	cg, err := engine.FindPodCgroup("/sys/fs/cgroup", string(p.UID), cid)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	c, err := cg.Read()
	if err != nil {
		t.Fatal(err)
	}
	return float64(c.CPUNs) / 1e9, p.Name
}

// TestTheSamplerAnswersOnlyOverTLS: on Kubernetes the sampler serves TLS
// for its fixed name, with the certificate in its Secret. Plain http gets
// no sampler; a client that does not know its CA is refused; the server's
// client, with the CA from the Secret, is answered.
func TestTheSamplerAnswersOnlyOverTLS(t *testing.T) {
	_, cs := kubetest.Manager(t)
	ctx := context.Background()
	list, err := cs.CoreV1().Pods(kube.SamplerNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + kube.SamplerApp})
	if err != nil || len(list.Items) != 1 || list.Items[0].Status.PodIP == "" {
		t.Fatalf("the sampler pod: %v, %v", list, err)
	}
	addr := net.JoinHostPort(list.Items[0].Status.PodIP, strconv.Itoa(kube.SamplerPort))
	sec, err := cs.CoreV1().Secrets(kube.SamplerNamespace).Get(ctx, kube.SamplerSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(sec.Data["token"]))
	hc := &http.Client{Timeout: 10 * time.Second}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/ping", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := hc.Do(req); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Errorf("plain http to the sampler: %d %s", res.StatusCode, b)
		}
	}
	if _, err := hc.Get("https://" + addr + "/v1/ping"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("https without the sampler's CA: %v, want a certificate error", err)
	}
	smp, err := sampler.NewClientTLS("https://"+addr, token, sec.Data["ca.crt"], kube.SamplerServerName)
	if err != nil {
		t.Fatal(err)
	}
	if err := smp.Ping(ctx); err != nil {
		t.Errorf("the server's client, with the CA and the name: %v", err)
	}
}
