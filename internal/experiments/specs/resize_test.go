package specs

import (
	"strings"
	"testing"
)

func TestResolveResize(t *testing.T) {
	host := Host{NCPU: 2, MemTotal: 8 << 30}
	pod := func(pr PodResources) Pod {
		t.Helper()
		p, errs := ResolvePod(pr, host)
		if errs != nil {
			t.Fatal(errs)
		}
		return p
	}
	burstable := pod(PodResources{Requests: PodResourceList{CPU: "250m"}, Limits: PodResourceList{CPU: "500m", Memory: "64Mi"}})
	guaranteed := pod(PodResources{Limits: PodResourceList{CPU: "1", Memory: "64Mi"}})
	for _, c := range []struct {
		name   string
		cur    Pod
		change Limits
		want   PodResources // its requests and limits, if accepted
		field  string       // the error's field, if refused
		says   string
	}{
		{name: "limits.cpu", cur: burstable, change: Limits{Resources: &PodResources{Limits: PodResourceList{CPU: "1500m"}}},
			want: PodResources{Requests: PodResourceList{CPU: "250m", Memory: "64Mi"}, Limits: PodResourceList{CPU: "1500m", Memory: "64Mi"}}},
		{name: "--cpus translates", cur: burstable, change: Limits{CPUs: "1.5"},
			want: PodResources{Requests: PodResourceList{CPU: "250m", Memory: "64Mi"}, Limits: PodResourceList{CPU: "1500m", Memory: "64Mi"}}},
		{name: "--memory translates", cur: burstable, change: Limits{Memory: "128m"},
			want: PodResources{Requests: PodResourceList{CPU: "250m", Memory: "64Mi"}, Limits: PodResourceList{CPU: "500m", Memory: "128Mi"}}},
		{name: "a limit under its request", cur: burstable, change: Limits{Memory: "32m"}, field: "resources.requests.memory", says: "less than or equal"},
		{name: "guaranteed both", cur: guaranteed, change: Limits{Resources: &PodResources{Requests: PodResourceList{CPU: "1500m"}, Limits: PodResourceList{CPU: "1500m"}}},
			want: PodResources{Requests: PodResourceList{CPU: "1500m", Memory: "64Mi"}, Limits: PodResourceList{CPU: "1500m", Memory: "64Mi"}}},
		{name: "QoS change", cur: guaranteed, change: Limits{CPUs: "1.5"}, field: "resources", says: "would make the Guaranteed pod Burstable"},
		{name: "exclusive CPUs", cur: Pod{RequestMilliCPU: 1000, LimitMilliCPU: 1000, RequestMemory: 64 << 20, LimitMemory: 64 << 20, QoS: QoSGuaranteed, ExclusiveCPUs: 1},
			change: Limits{Resources: &PodResources{Requests: PodResourceList{CPU: "2"}, Limits: PodResourceList{CPU: "2"}}}, field: "resources", says: "static CPU manager"},
		{name: "best effort", cur: Pod{QoS: QoSBestEffort}, change: Limits{CPUs: "1"}, field: "resources", says: "BestEffort"},
		{name: "a Docker-only flag", cur: burstable, change: Limits{PidsLimit: "10"}, field: "pids-limit", says: "podPidsLimit"},
		{name: "cpuset", cur: burstable, change: Limits{CpusetCpus: "0"}, field: "cpuset-cpus", says: "static CPU manager"},
		{name: "both words", cur: burstable, change: Limits{CPUs: "1", Resources: &PodResources{Limits: PodResourceList{CPU: "1"}}}, field: "resources", says: "not both"},
		{name: "empty", cur: burstable, change: Limits{}, field: "limits", says: "no change"},
		{name: "same", cur: burstable, change: Limits{Resources: &PodResources{Limits: PodResourceList{CPU: "500m"}}}, field: "resources", says: "no change"},
		{name: "request over limit", cur: burstable, change: Limits{Resources: &PodResources{Requests: PodResourceList{CPU: "1"}}}, field: "resources.requests.cpu", says: "less than or equal"},
		{name: "bad quantity", cur: burstable, change: Limits{Resources: &PodResources{Limits: PodResourceList{CPU: "lots"}}}, field: "resources.limits.cpu", says: "not a Kubernetes quantity"},
		{name: "more than the node", cur: burstable, change: Limits{Resources: &PodResources{Limits: PodResourceList{CPU: "3"}}}, field: "resources.limits.cpu", says: "the node has 2 CPUs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, errs := ResolveResize(c.cur, c.change, host)
			if c.field == "" {
				if errs != nil {
					t.Fatalf("refused: %v", errs)
				}
				if r := got.Requested(); r != c.want {
					t.Fatalf("got %+v, want %+v", r, c.want)
				}
				if got.QoS != c.cur.QoS {
					t.Fatalf("QoS %s, was %s", got.QoS, c.cur.QoS)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("accepted as %+v, want an error on %s", got.Requested(), c.field)
			}
			if errs[0].Field != c.field || !strings.Contains(errs[0].Message, c.says) {
				t.Fatalf("got %v, want %s: …%s…", errs, c.field, c.says)
			}
		})
	}
}

func TestAContainersChangeRefusesResources(t *testing.T) {
	_, errs := ResolveChange(Resources{}, Limits{Resources: &PodResources{Limits: PodResourceList{CPU: "1"}}}, Host{NCPU: 2})
	if len(errs) == 0 || errs[0].Field != "resources" {
		t.Fatalf("got %v, want an error on resources", errs)
	}
}
