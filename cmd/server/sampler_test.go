package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/sampler"
)

// TestSamplerServesTLS: `limitlab sampler -tls-cert -tls-key` serves
// https; a dashboard given the CA reaches it with its token, one asking in
// clear does not; a sampler given half of the pair does not start.
func TestSamplerServesTLS(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _ := enginetest.SelfSigned(t, t.TempDir())
	addr, tokenFile, _ := startSampler(t, bin, "-tls-cert", cert, "-tls-key", key)
	token, err := sampler.ReadToken(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := sampler.NewClient("https://"+addr, token, cert)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("over https with the CA: %v", err)
	}
	clear, err := sampler.NewClient("http://"+addr, token, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := clear.Ping(ctx); err == nil {
		t.Error("a ping in clear to an https sampler was answered")
	}
	out, err := exec.Command(bin, "sampler", "-listen", freeAddr(t), "-token-file", tokenFile, "-tls-cert", cert).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "go together") {
		t.Errorf("a sampler with a certificate and no key: %v\n%s", err, out)
	}
}
