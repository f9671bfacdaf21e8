package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/docker/cli/cli/connhelper"

	"github.com/moby/moby/client"
)

// EngineAddress is one engine of a pool, as an engines file names it: by
// Docker's own addressing, with the TLS files a tcp:// engine needs.
type EngineAddress struct {
	Name string `json:"name"`
	Host string `json:"host"` // unix:///path/docker.sock or tcp://host:port
	TLS  *struct {
		CA   string `json:"ca"`
		Cert string `json:"cert"`
		Key  string `json:"key"`
	} `json:"tls,omitempty"`
	// SSH is how to reach an ssh:// engine: the key to log in with and
	// the host keys to trust (none: ssh's own configuration).
	SSH *struct {
		IdentityFile   string `json:"identity_file,omitempty"`
		KnownHostsFile string `json:"known_hosts_file,omitempty"`
	} `json:"ssh,omitempty"`
	// Sampler, where the server cannot see the engine host's cgroup
	// files, is the limitlab sampler that reads them there.
	Sampler *SamplerAddress `json:"sampler,omitempty"`
	// Kubernetes makes the entry a cluster rather than a Docker engine:
	// {"name": "k8s", "kubernetes": {"kubeconfig": "admin.kubeconfig",
	// "namespace": "limitlab"}}.
	Kubernetes *KubernetesAddress `json:"kubernetes,omitempty"`
}

// KubernetesAddress is a cluster: its kubeconfig file (none: as kubectl
// finds one, $KUBECONFIG, ~/.kube/config, or the pod's own in a cluster),
// the context to use in it (none: its current one), and the namespace the
// server's pods go in (DefaultNamespace when left out).
type KubernetesAddress struct {
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
}

// DefaultNamespace is where lane pods go unless told: the namespace that
// deploy/kubernetes makes, labelled for the restricted Pod Security
// Standard.
const DefaultNamespace = "limitlab"

// namespaceName is a Kubernetes namespace's name (a DNS label).
var namespaceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidNamespace says whether s can name a Kubernetes namespace.
func ValidNamespace(s string) bool { return namespaceName.MatchString(s) }

// SamplerAddress is where a sampler serves an engine host's cgroup files:
// its URL, the file holding its token, and for https the CA file that
// signed its certificate (none: the system's).
type SamplerAddress struct {
	URL       string `json:"url"`
	TokenFile string `json:"token_file"`
	CA        string `json:"ca,omitempty"`
}

// MaxEngines bounds an engines file; MaxEnginesFile its size.
const (
	MaxEngines     = 64
	MaxEnginesFile = 64 << 10
)

var engineName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidEngineName says whether s can name an engine of a pool.
func ValidEngineName(s string) bool { return engineName.MatchString(s) }

// ParseEngines reads an engines file:
//
//	{"engines": [{"name": "bench-1", "host": "unix:///run/docker.sock"},
//	             {"name": "bench-3", "host": "ssh://lab@10.0.0.13",
//	              "ssh": {"identity_file": "id_ed25519", "known_hosts_file": "known_hosts"}},
//	             {"name": "bench-2", "host": "tcp://10.0.0.12:2376",
//	              "tls": {"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem"},
//	              "sampler": {"url": "https://10.0.0.12:7071", "token_file": "bench-2.token", "ca": "ca.pem"}},
//	             {"name": "k8s", "kubernetes": {"kubeconfig": "admin.kubeconfig", "namespace": "limitlab"}}]}
//
// Its errors name the engine and the field. An engine on tcp:// must have
// TLS: whoever reaches its port is root on its host. An ssh:// engine is
// reached as the docker CLI reaches it: ssh runs `docker system
// dial-stdio` on its host.
func ParseEngines(b []byte) ([]EngineAddress, error) {
	if len(b) > MaxEnginesFile {
		return nil, fmt.Errorf("engines file: %d bytes, at most %d", len(b), MaxEnginesFile)
	}
	var f struct {
		Engines []EngineAddress `json:"engines"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("engines file: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("engines file: more after the object")
	}
	switch {
	case len(f.Engines) == 0:
		return nil, errors.New("engines file: engines: list at least one engine")
	case len(f.Engines) > MaxEngines:
		return nil, fmt.Errorf("engines file: engines: %d engines, at most %d", len(f.Engines), MaxEngines)
	}
	seen := map[string]bool{}
	for i, e := range f.Engines {
		fail := func(field, format string, args ...any) error {
			return fmt.Errorf("engines file: engine %d (%q): %s: %s", i+1, e.Name, field, fmt.Sprintf(format, args...))
		}
		if !engineName.MatchString(e.Name) {
			return nil, fail("name", "want 1 to 32 lowercase letters, digits and dashes")
		}
		if seen[e.Name] {
			return nil, fail("name", "named twice")
		}
		seen[e.Name] = true
		if k := e.Kubernetes; k != nil {
			switch {
			case e.Host != "" || e.TLS != nil || e.SSH != nil || e.Sampler != nil:
				return nil, fail("kubernetes", "a cluster takes its address and credentials from its kubeconfig: no host, tls, ssh or sampler")
			case k.Kubeconfig == "":
				return nil, fail("kubernetes.kubeconfig", "name the cluster's kubeconfig file")
			case k.Namespace != "" && !namespaceName.MatchString(k.Namespace):
				return nil, fail("kubernetes.namespace", "want a namespace name (lowercase letters, digits and dashes, at most 63), got %q", k.Namespace)
			}
			if k.Namespace == "" {
				f.Engines[i].Kubernetes.Namespace = DefaultNamespace
			}
			continue
		}
		u, err := url.Parse(e.Host)
		if err != nil {
			return nil, fail("host", "%v", err)
		}
		switch u.Scheme {
		case "unix":
			if u.Path == "" {
				return nil, fail("host", "want unix:///path/to/docker.sock")
			}
			if e.TLS != nil {
				return nil, fail("tls", "a unix socket takes no TLS")
			}
		case "tcp":
			if u.Host == "" {
				return nil, fail("host", "want tcp://host:port")
			}
			if e.TLS == nil || e.TLS.CA == "" || e.TLS.Cert == "" || e.TLS.Key == "" {
				return nil, fail("tls", "an engine on tcp:// needs ca, cert and key: whoever reaches its port is root on its host")
			}
		case "ssh":
			if u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-") {
				return nil, fail("host", "want ssh://[user@]host[:port][/path/to/docker.sock]")
			}
			if _, hasPassword := u.User.Password(); hasPassword {
				return nil, fail("host", "no password in the address: log in with a key (ssh.identity_file)")
			}
			if e.TLS != nil {
				return nil, fail("tls", "an ssh:// engine takes no TLS: ssh encrypts the connection")
			}
		default:
			return nil, fail("host", "want unix://, tcp:// or ssh://, got %q", e.Host)
		}
		if e.SSH != nil && u.Scheme != "ssh" {
			return nil, fail("ssh", "ssh options are for an ssh:// engine")
		}
		if s := e.Sampler; s != nil {
			u, err := url.Parse(s.URL)
			switch {
			case err != nil:
				return nil, fail("sampler.url", "%v", err)
			case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
				return nil, fail("sampler.url", "want http://host:port or https://host:port, got %q", s.URL)
			case s.TokenFile == "":
				return nil, fail("sampler.token_file", "name the file holding the token the sampler was started with")
			case s.CA != "" && u.Scheme != "https":
				return nil, fail("sampler.ca", "a CA file is for an https:// sampler")
			}
		}
	}
	return f.Engines, nil
}

// Dial makes the client of an engine of a pool. An ssh:// engine's
// connections are ssh processes (the docker CLI's connection helper):
// never a password prompt (BatchMode), and an unknown host key refused
// rather than trusted.
func Dial(a EngineAddress) (Client, error) {
	opts := []client.Opt{client.WithHost(a.Host)}
	if a.TLS != nil {
		opts = append(opts, client.WithTLSClientConfig(a.TLS.CA, a.TLS.Cert, a.TLS.Key))
	}
	if strings.HasPrefix(a.Host, "ssh://") {
		flags := []string{"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"}
		if s := a.SSH; s != nil && s.IdentityFile != "" {
			flags = append(flags, "-o", "IdentitiesOnly=yes", "-i", s.IdentityFile)
		}
		if s := a.SSH; s != nil && s.KnownHostsFile != "" {
			flags = append(flags, "-o", "UserKnownHostsFile="+s.KnownHostsFile)
		}
		h, err := connhelper.GetConnectionHelperWithSSHOpts(a.Host, flags)
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", a.Name, err)
		}
		opts = []client.Opt{client.WithHost(h.Host), client.WithDialContext(h.Dialer)}
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", a.Name, err)
	}
	if strings.HasPrefix(a.Host, "ssh://") {
		// The client's own host is a placeholder: pages and notes name the
		// engine by its address.
		return addressed{c, a.Host}, nil
	}
	return c, nil
}

// Client is an engine's client, to be closed when the server stops.
type Client interface {
	Engine
	Close() error
}

// addressed is a client whose connections go through a helper: its
// address is the engine's, not the client's placeholder.
type addressed struct {
	*client.Client
	host string
}

func (a addressed) DaemonHost() string { return a.host }
