// Package testca is the one certificate authority of the tests and the
// local tools (the end-to-end stack, the real node, the Kafka test
// clusters, the webhook load test): a self-signed CA made for one run and
// the serving and client certificates it signs, in PEM. Nothing here is
// for production: the manager's own certificates come from cert-manager or
// internal/certs.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	// PEM is the CA certificate: what a client trusts (a ca.crt, a
	// webhook configuration's caBundle).
	PEM []byte

	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	notAfter time.Time
}

// New makes a CA named commonName, valid from an hour ago (clocks of the
// processes that check it may lag) for validFor; the certificates it
// issues expire with it.
func New(commonName string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{PEM: encode("CERTIFICATE", der), cert: cert, key: key, notAfter: tmpl.NotAfter}, nil
}

// KeyPEM is the CA's private key, for a signer that issues on its own (a
// kube-controller-manager's --cluster-signing-key-file).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return encode("EC PRIVATE KEY", der), nil
}

// Pool is a certificate pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Cert describes a certificate to issue.
type Cert struct {
	Subject pkix.Name
	// Hosts are the DNS names and IP addresses it is valid for.
	Hosts []string
	// Usage defaults to server and client authentication.
	Usage []x509.ExtKeyUsage
}

// Issue signs a certificate for c with a new key and returns both in PEM.
func (ca *CA) Issue(c Cert) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      c.Subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     ca.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  c.Usage,
	}
	if len(tmpl.ExtKeyUsage) == 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	for _, h := range c.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing %s: %w", c.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encode("CERTIFICATE", der), encode("EC PRIVATE KEY", keyDER), nil
}

// KeyPair is Issue as a tls.Certificate, for a server or client in this
// process.
func (ca *CA) KeyPair(c Cert) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.Issue(c)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// WriteServing issues a serving certificate for hosts (its common name the
// first) and writes it and its key into dir as tls.crt and tls.key, the
// names controller-runtime's webhook server reads.
func (ca *CA) WriteServing(dir string, hosts ...string) error {
	cn := ""
	if len(hosts) > 0 {
		cn = hosts[0]
	}
	certPEM, keyPEM, err := ca.Issue(Cert{Subject: pkix.Name{CommonName: cn}, Hosts: hosts,
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)
}

func encode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
}
