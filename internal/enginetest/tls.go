package enginetest

import (
	"crypto/x509"
	"testing"

	"github.com/limitlab/limitlab/internal/testbed"
)

// SelfSigned writes into dir a certificate for localhost and 127.0.0.1
// that is its own CA, and its key; pool trusts it.
func SelfSigned(t testing.TB, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	cert, key, pool, err := testbed.WriteSelfSigned(dir)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pool
}
