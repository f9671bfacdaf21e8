package helm_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The chart with its default values: each object once, the dashboard as
// one hardened replica that alone holds the server's token, probed on
// /healthz and /readyz, its store on a claim; the sampler probed; the
// lanes' namespace restricted; the join code and the presenter token in
// a Secret; images from the values.
func TestTheChartRendersTheDashboardOnTheCluster(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.GetKind())
	}
	slices.Sort(keys)
	want := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Deployment", "Namespace", "Namespace", "NetworkPolicy", "NetworkPolicy",
		"PersistentVolumeClaim", "Role", "Role", "RoleBinding", "RoleBinding", "Secret", "Secret", "Service", "ServiceAccount",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	if !slices.Equal(keys, want) {
		t.Errorf("rendered %v\nwant %v", keys, want)
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if seen[key(o)] {
			t.Errorf("%s rendered twice", key(o))
		}
		seen[key(o)] = true
		if o.GetLabels()["app.kubernetes.io/instance"] != "lab" {
			t.Errorf("%s has not the release's labels: %v", key(o), o.GetLabels())
		}
	}

	lanes := find(t, objs, "Namespace", "limitlab-lanes")
	if l := lanes.GetLabels(); l["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("the lanes' namespace enforces %q, want restricted", l["pod-security.kubernetes.io/enforce"])
	}
	if sa := find(t, objs, "ServiceAccount", "lab-limitlab"); sa.Object["automountServiceAccountToken"] != false {
		t.Errorf("the service account mounts its token by default")
	}

	dep := find(t, objs, "Deployment", "lab-limitlab")
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 1 {
		t.Errorf("%d replicas, want 1", r)
	}
	if s, _, _ := unstructured.NestedString(dep.Object, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %q: two pods would open the one store", s)
	}
	pod := podSpec(t, dep)
	if pod["automountServiceAccountToken"] != true || pod["serviceAccountName"] != "lab-limitlab" {
		t.Errorf("the dashboard's pod does not hold the server's token: %v", pod)
	}
	c := container(t, pod)
	if c["image"] != "ghcr.io/limitlab/limitlab:v0.1.0" {
		t.Errorf("the dashboard's image %v", c["image"])
	}
	args := strings.Join(strs(c["args"]), " ")
	for _, a := range []string{"-kubernetes", "-namespace=limitlab-lanes", "-kube-image=ghcr.io/limitlab/limitlab-workload:v0.1.0", "-data=/data", "-presenter-token-file=",
		"-allow-host=localhost,127.0.0.1,::1,lab-limitlab,lab-limitlab.limitlab,lab-limitlab.limitlab.svc "} {
		if !strings.Contains(args, a) {
			t.Errorf("the server's args %q lack %s", args, a)
		}
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if p, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); p != path {
			t.Errorf("the dashboard's %s asks %q, want %s", probe, p, path)
		}
	}
	if _, ok, _ := unstructured.NestedMap(c, "resources", "limits"); !ok {
		t.Error("the dashboard has no limits")
	}
	restricted(t, "the dashboard", pod, c)
	if claim, _, _ := unstructured.NestedString(volume(t, pod, "data"), "persistentVolumeClaim", "claimName"); claim != "lab-limitlab-data" {
		t.Errorf("the store's volume claims %q", claim)
	}
	find(t, objs, "PersistentVolumeClaim", "lab-limitlab-data")

	checkSamplerAndSecrets(t, objs)
	if t.Failed() {
		t.Log(dump(objs))
	}
}

// checkSamplerAndSecrets: the sampler probed and restricted but for its
// hostPath, the secrets made, the node policy bound to the release's
// account.
func checkSamplerAndSecrets(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ds := find(t, objs, "DaemonSet", "limitlab-sampler")
	spod := podSpec(t, ds)
	if spod["automountServiceAccountToken"] != false {
		t.Error("the sampler's pod mounts a service-account token")
	}
	sc := container(t, spod)
	if sc["image"] != "ghcr.io/limitlab/limitlab-workload:v0.1.0" {
		t.Errorf("the sampler's image %v", sc["image"])
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if p, _, _ := unstructured.NestedString(sc, probe, "httpGet", "path"); p != "/healthz" {
			t.Errorf("the sampler's %s asks %q", probe, p)
		}
	}
	restricted(t, "the sampler", spod, sc)

	ws := find(t, objs, "Secret", "lab-limitlab-workshop")
	data, _, _ := unstructured.NestedStringMap(ws.Object, "data")
	if len(data["join-code"]) < 16 || len(data["presenter-token"]) < 24 { // base64 of 12 and 32 characters
		t.Errorf("the workshop's secret %v", data)
	}
	smp := find(t, objs, "Secret", "limitlab-sampler")
	if d, _, _ := unstructured.NestedStringMap(smp.Object, "data"); d["ca.crt"] == "" || d["tls.crt"] == "" || d["tls.key"] == "" || len(d["token"]) < 40 {
		t.Errorf("the sampler's secret lacks a CA, certificate, key or token")
	}
	vap := find(t, objs, "ValidatingAdmissionPolicy", "lab-limitlab-node-marks")
	if b, _ := json.Marshal(vap.Object); !strings.Contains(string(b), "system:serviceaccount:limitlab:lab-limitlab") {
		t.Error("the node policy does not match the release's account")
	}
}

// The chart's RBAC and node policy are those of deploy/kubernetes, rule
// for rule: what the server needs, each once, and nothing more.
func TestTheChartsRulesAreTheServersNeeds(t *testing.T) {
	objs, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../kubernetes/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(string(b), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			o := &unstructured.Unstructured{Object: m}
			plain[o.GetKind()+" "+o.GetName()] = o
		}
	}
	for chart, kept := range map[string]string{
		"Role lab-limitlab-lanes":                           "Role limitlab-pods",
		"Role lab-limitlab-sampler-reader":                  "Role limitlab-sampler-reader",
		"ClusterRole lab-limitlab-nodes":                    "ClusterRole limitlab-nodes",
		"ValidatingAdmissionPolicy lab-limitlab-node-marks": "ValidatingAdmissionPolicy limitlab-node-marks",
	} {
		kind, name, _ := strings.Cut(chart, " ")
		got, want := find(t, objs, kind, name), plain[kept]
		if want == nil {
			t.Fatalf("deploy/kubernetes/rbac.yaml has no %s", kept)
		}
		field := "rules"
		if kind == "ValidatingAdmissionPolicy" {
			field = "spec"
			// The account's name is the release's.
			unstructured.RemoveNestedField(got.Object, "spec", "matchConditions")
			unstructured.RemoveNestedField(want.Object, "spec", "matchConditions")
		}
		if !reflect.DeepEqual(got.Object[field], want.Object[field]) {
			t.Errorf("%s's %s differ from %s's:\n%v\n%v", chart, field, kept, got.Object[field], want.Object[field])
		}
	}
}

func podSpec(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	p, ok, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
	if !ok {
		t.Fatalf("%s has no pod template", key(o))
	}
	return p
}

func container(t *testing.T, pod map[string]any) map[string]any {
	t.Helper()
	cs, _ := pod["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return cs[0].(map[string]any)
}

func volume(t *testing.T, pod map[string]any, name string) map[string]any {
	t.Helper()
	vs, _ := pod["volumes"].([]any)
	for _, v := range vs {
		if m := v.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no volume %s", name)
	return nil
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// restricted checks what the restricted Pod Security Standard asks of a
// pod and its container.
func restricted(t *testing.T, what string, pod, c map[string]any) {
	t.Helper()
	ps, _, _ := unstructured.NestedMap(pod, "securityContext")
	cs, _, _ := unstructured.NestedMap(c, "securityContext")
	seccomp, _, _ := unstructured.NestedString(ps, "seccompProfile", "type")
	drop, _, _ := unstructured.NestedStringSlice(cs, "capabilities", "drop")
	if ps["runAsNonRoot"] != true || seccomp != "RuntimeDefault" || cs["allowPrivilegeEscalation"] != false || !slices.Equal(drop, []string{"ALL"}) || cs["readOnlyRootFilesystem"] != true {
		t.Errorf("%s is not restricted: pod %v, container %v", what, ps, cs)
	}
	for _, k := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		if pod[k] == true {
			t.Errorf("%s shares the host's %s", what, k)
		}
	}
}
