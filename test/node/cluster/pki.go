package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/retentionguard/retention-guard/internal/testca"
)

// pki is the node's certificate authority and the files issued from it,
// under <run>/pki. Every component authenticates the way a kubeadm cluster
// does: x509 client certificates with the identities the API server's
// bootstrap RBAC policy and the Node authorizer know.
type pki struct {
	dir    string
	ca     *testca.CA
	CAFile string
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := testca.New("retention-guard node CA", 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, CAFile: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(p.CAFile, ca.PEM, 0o644); err != nil {
		return nil, err
	}
	// ca.key: the controller-manager's --cluster-signing-key-file.
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// issued is a certificate and key on disk.
type issued struct {
	Cert, Key string
}

// client issues a client certificate for user cn in groups orgs.
func (p *pki) client(name, cn string, orgs ...string) (issued, error) {
	return p.issue(name, testca.Cert{
		Subject: pkix.Name{CommonName: cn, Organization: orgs},
		Usage:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// serving issues a serving certificate for the given names and addresses.
func (p *pki) serving(name, cn string, dns []string, ips []net.IP) (issued, error) {
	hosts := slices.Clone(dns)
	for _, ip := range ips {
		hosts = append(hosts, ip.String())
	}
	return p.issue(name, testca.Cert{
		Subject: pkix.Name{CommonName: cn},
		Hosts:   hosts,
		Usage:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

func (p *pki) issue(name string, c testca.Cert) (issued, error) {
	certPEM, keyPEM, err := p.ca.Issue(c)
	if err != nil {
		return issued{}, fmt.Errorf("issuing %s: %w", name, err)
	}
	out := issued{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if err := os.WriteFile(out.Cert, certPEM, 0o644); err != nil {
		return issued{}, err
	}
	return out, os.WriteFile(out.Key, keyPEM, 0o600)
}

// serviceAccountKey writes the key pair the API server signs and verifies
// service account tokens with (and the controller-manager signs with).
func (p *pki) serviceAccountKey() (private, public string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	private, public = filepath.Join(p.dir, "sa.key"), filepath.Join(p.dir, "sa.pub")
	if err := writeKey(private, key); err != nil {
		return "", "", err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	return private, public, writePEM(public, "PUBLIC KEY", der, 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
