package helm_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const chartDir = "limitlab"

// kubeVersion is the test cluster's.
var kubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// The chart passes `helm lint --strict`, its values against their schema.
func TestTheChartLints(t *testing.T) {
	res := lint.RunAll(chartDir, nil, "limitlab", lint.WithKubeVersion(kubeVersion))
	for _, m := range res.Messages {
		t.Logf("lint: %s", m)
		if m.Severity >= support.WarningSev { // --strict: a warning fails
			t.Errorf("helm lint --strict: %s", m)
		}
	}
}

// render is `helm template` of the chart as release "lab" in namespace
// limitlab with vals: its objects, or the error Helm gives.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderAs(t, "lab", "limitlab", vals)
}

// renderAs is `helm template` of the chart as release name in namespace.
func renderAs(t *testing.T, name, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kubeVersion
	opts := common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true}
	values, err := util.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, values)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var manifest strings.Builder
	for _, name := range names {
		manifest.WriteString("\n---\n" + files[name])
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(manifest.String(), "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		if string(j) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil { // integers as int64, as the API server reads them
			t.Fatalf("a rendered document is not an object: %v\n%s", err, doc)
		}
		out = append(out, o)
	}
	return out, nil
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// find is the object of kind and name, or fails the test.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// dump is the rendered objects as YAML, for a failure's log.
func dump(objs []*unstructured.Unstructured) string {
	var b bytes.Buffer
	for _, o := range objs {
		y, _ := yaml.Marshal(o.Object)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}
