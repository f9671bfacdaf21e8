package helm_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The values people change reach the objects they name.
func TestTheValuesPeopleChange(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs, err := render(t, map[string]any{
		"image":            map[string]any{"repository": "registry.example:5000/lab/limitlab", "digest": digest, "pullPolicy": "Always"},
		"workloadImage":    map[string]any{"repository": "registry.example:5000/lab/workload", "tag": "v0.2.0"},
		"imagePullSecrets": []any{map[string]any{"name": "pull"}},
		"lanes":            map[string]any{"namespace": "workshop-lanes", "tolerate": []any{"node-role.kubernetes.io/control-plane", "gpu"}},
		"joinCode":         map[string]any{"existingSecret": "room"},
		"presenterToken":   map[string]any{"existingSecret": "room"},
		"persistence":      map[string]any{"storageClass": "fast", "size": "5Gi", "onUninstall": "keep"},
		"server":           map[string]any{"extraArgs": []any{"-participant-runs=2"}, "allowHosts": []any{"192.0.2.10"}},
		"ingress":          map[string]any{"enabled": true, "className": "nginx", "host": "lab.example.org", "tlsSecret": "lab-tls"},
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := podSpec(t, find(t, objs, "Deployment", "lab-limitlab"))
	c := container(t, pod)
	if c["image"] != "registry.example:5000/lab/limitlab@"+digest || c["imagePullPolicy"] != "Always" {
		t.Errorf("the dashboard's image %v, %v: want it by digest, always pulled", c["image"], c["imagePullPolicy"])
	}
	args := strings.Join(strs(c["args"]), " ")
	for _, a := range []string{"-kube-image=registry.example:5000/lab/workload:v0.2.0", "-namespace=workshop-lanes",
		"-kube-tolerate=node-role.kubernetes.io/control-plane,gpu", "-participant-runs=2",
		"-allow-host=localhost,127.0.0.1,::1,lab-limitlab,lab-limitlab.limitlab,lab-limitlab.limitlab.svc,lab.example.org,192.0.2.10 "} {
		if !strings.Contains(args, a) {
			t.Errorf("the server's args %q lack %s", args, a)
		}
	}
	if s, _ := pod["imagePullSecrets"].([]any); len(s) != 1 {
		t.Errorf("the dashboard's pull secrets %v", pod["imagePullSecrets"])
	}
	if sc := container(t, podSpec(t, find(t, objs, "DaemonSet", "limitlab-sampler"))); sc["image"] != "registry.example:5000/lab/workload:v0.2.0" {
		t.Errorf("the sampler's image %v", sc["image"])
	}
	find(t, objs, "Namespace", "workshop-lanes")
	for _, o := range objs {
		if o.GetKind() == "Secret" && o.GetName() == "lab-limitlab-workshop" {
			t.Error("the chart made a workshop secret though both are named")
		}
		if o.GetKind() == "Namespace" && o.GetName() == "limitlab-lanes" {
			t.Error("the default lanes' namespace is made too")
		}
	}
	env := c["env"].([]any)[0].(map[string]any)
	if n, _, _ := unstructured.NestedString(env, "valueFrom", "secretKeyRef", "name"); n != "room" {
		t.Errorf("the join code is read from %q", n)
	}
	if n, _, _ := unstructured.NestedString(volume(t, pod, "presenter"), "secret", "secretName"); n != "room" {
		t.Errorf("the presenter's token is read from %q", n)
	}

	pvc := find(t, objs, "PersistentVolumeClaim", "lab-limitlab-data")
	if pvc.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Error("onUninstall keep does not keep the claim")
	}
	sc, _, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName")
	size, _, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage")
	if sc != "fast" || size != "5Gi" {
		t.Errorf("the claim asks %s of class %q", size, sc)
	}

	ing := find(t, objs, "Ingress", "lab-limitlab")
	var host string
	tls, _, _ := unstructured.NestedSlice(ing.Object, "spec", "tls")
	class, _, _ := unstructured.NestedString(ing.Object, "spec", "ingressClassName")
	if rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules"); len(rules) == 1 {
		host, _ = rules[0].(map[string]any)["host"].(string)
	}
	if host != "lab.example.org" || len(tls) != 1 || class != "nginx" {
		t.Errorf("the ingress: host %q, tls %v, class %q", host, tls, class)
	}
	if t.Failed() {
		t.Log(dump(objs))
	}
}

// Values that would break the install, or are not the chart's, are
// refused when it renders, naming the value.
func TestTheChartRefusesValuesItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"a misspelt key", map[string]any{"imag": map[string]any{"tag": "v1"}}, "imag"},
		{"a pull policy Kubernetes has not", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		{"a digest that is not one", map[string]any{"workloadImage": map[string]any{"digest": "latest"}}, "digest"},
		{"a repository with a tag in it", map[string]any{"image": map[string]any{"repository": "ghcr.io/limitlab/limitlab:v1"}}, "repository"},
		{"the lanes in the release's namespace", map[string]any{"lanes": map[string]any{"namespace": "limitlab"}}, "lanes.namespace"},
		{"the lanes in the sampler's namespace", map[string]any{"lanes": map[string]any{"namespace": "limitlab-sampler"}}, "lanes.namespace"},
		{"a volume policy of neither kind", map[string]any{"persistence": map[string]any{"onUninstall": "maybe"}}, "onUninstall"},
		{"an extra argument that is not a flag", map[string]any{"server": map[string]any{"extraArgs": []any{"; rm -rf /"}}}, "extraArgs"},
		{"a host name with a slash", map[string]any{"server": map[string]any{"allowHosts": []any{"evil.example/x"}}}, "allowHosts"},
		{"a taint key with a space", map[string]any{"lanes": map[string]any{"tolerate": []any{"a b"}}}, "tolerate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rendered with %v: %v, want an error naming %s", tc.vals, err, tc.want)
			}
			if err != nil {
				t.Log(err)
			}
		})
	}
}
