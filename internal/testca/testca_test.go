package testca

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A serving certificate written for the webhook (tls.crt, tls.key, as the
// e2e stack's manager reads them) verifies for its hosts against its own
// CA, the caBundle every tier hands the API server, and against no other.
// No seed: the tiers that replay seeds 000-003 stand on it.
func TestServingCertificateVerifiesOnlyAgainstItsCA(t *testing.T) {
	ca, err := New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New("other CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.WriteServing(dir, "127.0.0.1", "localhost"); err != nil {
		t.Fatal(err)
	}
	crt, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(crt)
	if block == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(roots *x509.CertPool, host string) error {
		_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if err := verify(ca.Pool(), host); err != nil {
			t.Errorf("%s against its CA: %v", host, err)
		}
	}
	if err := verify(ca.Pool(), "example.com"); err == nil {
		t.Error("verified for a host it was not issued for")
	}
	if err := verify(other.Pool(), "127.0.0.1"); err == nil {
		t.Error("verified against another CA")
	}
	// A client certificate, as the node's components present them.
	pair, err := ca.KeyPair(Cert{Subject: pkix.Name{CommonName: "system:kube-scheduler"}, Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate against its CA: %v", err)
	}
	if leaf.Subject.CommonName != "system:kube-scheduler" {
		t.Errorf("subject %v", leaf.Subject)
	}
}
