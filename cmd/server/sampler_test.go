package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitlab/limitlab/internal/enginetest"
	"github.com/limitlab/limitlab/internal/sampler"
)

// selfSigned writes a certificate for 127.0.0.1, its own CA, and its key
// into dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "limitlab sampler test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, b := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// TestSamplerServesTLS: `limitlab sampler -tls-cert -tls-key` serves
// https; a dashboard given the CA reaches it with its token, one asking in
// clear does not; a sampler given half of the pair does not start.
func TestSamplerServesTLS(t *testing.T) {
	bin, err := enginetest.BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t, t.TempDir())
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
