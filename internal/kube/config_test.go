package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// kubeconfig writes a kubeconfig of two clusters, each with a context of
// its name, current the first.
func kubeconfig(t *testing.T, path, first, second string) {
	t.Helper()
	text := `apiVersion: v1
kind: Config
clusters:
- name: ` + first + `
  cluster: {server: "https://` + first + `.example:6443"}
- name: ` + second + `
  cluster: {server: "https://` + second + `.example:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: ` + first + `
  context: {cluster: ` + first + `, user: u}
- name: ` + second + `
  context: {cluster: ` + second + `, user: u}
current-context: ` + first + `
`
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The cluster is found by kubectl's rules: -kubeconfig, else $KUBECONFIG,
// else ~/.kube/config; -context picks another of the file's contexts.
func TestTheClusterIsFoundAsKubectlFindsIt(t *testing.T) {
	dir := t.TempDir()
	home, explicit, fromEnv := filepath.Join(dir, "home"), filepath.Join(dir, "explicit.yaml"), filepath.Join(dir, "env.yaml")
	kubeconfig(t, filepath.Join(home, ".kube", "config"), "home", "home-other")
	kubeconfig(t, explicit, "explicit", "explicit-other")
	kubeconfig(t, fromEnv, "env", "env-other")
	// client-go reads the home directory once, when it starts.
	was := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = filepath.Join(home, ".kube", "config")
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = was })
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		name                    string
		kubeconfigEnv, file, cx string
		want                    string
	}{
		{"~/.kube/config", "", "", "", "https://home.example:6443"},
		{"$KUBECONFIG", fromEnv, "", "", "https://env.example:6443"},
		{"-kubeconfig over $KUBECONFIG", fromEnv, explicit, "", "https://explicit.example:6443"},
		{"-context", fromEnv, "", "env-other", "https://env-other.example:6443"},
		{"-kubeconfig and -context", "", explicit, "explicit-other", "https://explicit-other.example:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfigEnv)
			rc, err := restConfig(Config{Kubeconfig: tc.file, Context: tc.cx})
			if err != nil || rc.Host != tc.want {
				t.Errorf("server %v, %v; want %s", rc, err, tc.want)
			}
		})
	}
	t.Setenv("KUBECONFIG", "")
	clientcmd.RecommendedHomeFile = filepath.Join(dir, "nowhere", "config")
	if _, err := restConfig(Config{}); err == nil || !strings.Contains(err.Error(), "no cluster found") {
		t.Errorf("with no kubeconfig anywhere and not in a pod: %v", err)
	}
	if _, err := restConfig(Config{Kubeconfig: explicit, Context: "nosuch"}); err == nil {
		t.Error("a context the file lacks was accepted")
	}
}
