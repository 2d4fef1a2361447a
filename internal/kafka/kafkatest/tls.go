package kafkatest

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/testca"
)

// CA is a self-signed certificate authority made for one test (testca),
// issuing broker (server) and client certificates.
type CA struct {
	// PEM is the CA certificate, as a client's ca.crt.
	PEM []byte

	ca *testca.CA
}

// NewCA generates a CA valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := testca.New(name, 24*time.Hour)
	if err != nil {
		t.Fatalf("kafkatest: creating CA: %v", err)
	}
	return &CA{PEM: ca.PEM, ca: ca}
}

// Issue returns a certificate and key (PEM) signed by the CA for the given
// DNS names and IP addresses, usable by servers and clients.
func (ca *CA) Issue(t testing.TB, commonName string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.ca.Issue(testca.Cert{Subject: pkix.Name{CommonName: commonName}, Hosts: hosts})
	if err != nil {
		t.Fatalf("kafkatest: issuing certificate: %v", err)
	}
	return certPEM, keyPEM
}

// ServerTLS is a broker TLS config with a certificate for 127.0.0.1 and
// localhost (kfake listens on 127.0.0.1).
func (ca *CA) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	pair, err := ca.ca.KeyPair(testca.Cert{Subject: pkix.Name{CommonName: "kafkatest-broker"}, Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatalf("kafkatest: server key pair: %v", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// ClientTLS is a client TLS config trusting only this CA.
func (ca *CA) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: ca.ca.Pool(), MinVersion: tls.VersionTLS12}
}
