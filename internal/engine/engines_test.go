package engine

import (
	"strings"
	"testing"
)

func TestParseEngines(t *testing.T) {
	good := `{"engines": [{"name": "bench-1", "host": "unix:///run/docker.sock"},
	  {"name": "bench-2", "host": "tcp://10.0.0.12:2376", "tls": {"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem"},
	   "sampler": {"url": "https://10.0.0.12:7071", "token_file": "bench-2.token", "ca": "ca.pem"}}]}`
	good = strings.Replace(good, `]}`, `, {"name": "bench-3", "host": "ssh://lab@10.0.0.13:2222", "ssh": {"identity_file": "id", "known_hosts_file": "kh"}}]}`, 1)
	es, err := ParseEngines([]byte(good))
	if err != nil || len(es) != 3 || es[2].SSH == nil || es[2].SSH.IdentityFile != "id" || es[1].TLS == nil || es[1].TLS.Key != "key.pem" || es[0].Sampler != nil || es[1].Sampler == nil || es[1].Sampler.TokenFile != "bench-2.token" {
		t.Fatalf("%+v %v", es, err)
	}
	es, err = ParseEngines([]byte(`{"engines": [{"name": "k8s", "kubernetes": {"kubeconfig": "admin.kubeconfig"}}]}`))
	if err != nil || len(es) != 1 || es[0].Kubernetes == nil || es[0].Kubernetes.Kubeconfig != "admin.kubeconfig" || es[0].Kubernetes.Namespace != DefaultNamespace {
		t.Fatalf("a cluster entry: %+v %v", es, err)
	}
	for _, tt := range []struct{ file, want string }{
		{`{"engines": []}`, "engines: list at least one engine"},
		{`{"engines": [{"name": "k", "kubernetes": {"kubeconfig": "c", "namespace": "Bad_NS"}}]}`, `engine 1 ("k"): kubernetes.namespace: want a namespace name`},
		{`{"engines": [{"name": "k", "kubernetes": {}}]}`, `engine 1 ("k"): kubernetes.kubeconfig: name the cluster's kubeconfig file`},
		{`{"engines": [{"name": "k", "host": "unix:///s", "kubernetes": {"kubeconfig": "c"}}]}`, `engine 1 ("k"): kubernetes: a cluster takes its address`},
		{`{"engines": [{"name": "a", "host": "unix:///s"}], "extra": 1}`, `unknown field "extra"`},
		{`{"engines": [{"name": "A b", "host": "unix:///s"}]}`, `engine 1 ("A b"): name:`},
		{`{"engines": [{"name": "a", "host": "unix:///s"}, {"name": "a", "host": "unix:///t"}]}`, `engine 2 ("a"): name: named twice`},
		{`{"engines": [{"name": "a", "host": "tcp://h:2375"}]}`, `engine 1 ("a"): tls: an engine on tcp:// needs ca, cert and key`},
		{`{"engines": [{"name": "a", "host": "ssh://me:secret@h"}]}`, `engine 1 ("a"): host: no password in the address`},
		{`{"engines": [{"name": "a", "host": "ssh://-oProxyCommand=x"}]}`, `engine 1 ("a"): host: want ssh://`},
		{`{"engines": [{"name": "a", "host": "ssh://me@h", "tls": {"ca": "x", "cert": "y", "key": "z"}}]}`, `tls: an ssh:// engine takes no TLS`},
		{`{"engines": [{"name": "a", "host": "unix:///s", "ssh": {"identity_file": "k"}}]}`, `ssh: ssh options are for an ssh:// engine`},
		{`{"engines": [{"name": "a", "host": "http://h"}]}`, `engine 1 ("a"): host: want unix://, tcp:// or ssh://`},
		{`{"engines": [{"name": "a", "host": "unix:///s", "tls": {"ca": "x", "cert": "y", "key": "z"}}]}`, `tls: a unix socket takes no TLS`},
		{`{"engines": [{"name": "a", "host": "unix:///s"}]} {}`, "more after the object"},
		{`{"engines": [{"name": "a", "host": "unix:///s", "sampler": {"url": "ws://h:1", "token_file": "t"}}]}`, `engine 1 ("a"): sampler.url: want http://host:port or https://host:port`},
		{`{"engines": [{"name": "a", "host": "unix:///s", "sampler": {"url": "http://h:1"}}]}`, `engine 1 ("a"): sampler.token_file: name the file`},
		{`{"engines": [{"name": "a", "host": "unix:///s", "sampler": {"url": "http://h:1", "token_file": "t", "ca": "c"}}]}`, `sampler.ca: a CA file is for an https:// sampler`},
		{`{"engines": [{"name": "a", "host": "unix:///s", "sampler": {"url": "http://h:1", "token_file": "t", "token": "x"}}]}`, `unknown field "token"`},
		{strings.Repeat(" ", MaxEnginesFile+1), "at most"},
	} {
		if _, err := ParseEngines([]byte(tt.file)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.60s: got %v, want %q", tt.file, err, tt.want)
		}
	}
}
