package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

func tlsCluster(t *testing.T, ca *kafkatest.CA, server, client *tls.Config) *kafkatest.Cluster {
	t.Helper()
	c := kafkatest.NewCluster(t, kafkatest.WithTLS(server, client))
	c.CreateTopic(t, "secure", 1, nil)
	c.ProduceTo(t, "secure", 0, 5)
	c.Commit(t, "vault", "secure", 0, 2)
	return c
}

var vault = Target{Group: "vault", Topics: []string{"secure"}}

func TestObserveTLS(t *testing.T) {
	t.Parallel()
	ca := kafkatest.NewCA(t, "retention-guard test CA")
	c := tlsCluster(t, ca, ca.ServerTLS(t), ca.ClientTLS())

	t.Run("the CA verifies the brokers", func(t *testing.T) {
		o, _ := newTestObserver(t)
		obs := observe(t, o, Connection{BootstrapServers: c.Addrs, TLS: &TLS{CA: ca.PEM}}, vault)[0]
		requireNoFailures(t, obs)
		if p := partition(t, obs, "secure", 0); p.Committed != 2 || p.LogEnd != 5 {
			t.Errorf("secure/0 = %+v", p)
		}
	})

	t.Run("a CA that did not sign the brokers' certificates", func(t *testing.T) {
		other := kafkatest.NewCA(t, "some other CA")
		o, _ := newTestObserver(t)
		obs := observe(t, o, Connection{BootstrapServers: c.Addrs, TLS: &TLS{CA: other.PEM}}, vault)[0]
		f := requireFailure(t, obs, proof.ReasonBrokerUnreachable, "Metadata", "")
		if !strings.Contains(f.Message, "TLS") || !strings.Contains(f.Message, "authority") {
			t.Errorf("message %q should say the TLS certificate authority is not trusted", f.Message)
		}
	})

	t.Run("the wrong server name", func(t *testing.T) {
		o, _ := newTestObserver(t)
		obs := observe(t, o, Connection{BootstrapServers: c.Addrs, TLS: &TLS{CA: ca.PEM, ServerName: "kafka.example.com"}}, vault)[0]
		f := requireFailure(t, obs, proof.ReasonBrokerUnreachable, "Metadata", "")
		if !strings.Contains(f.Message, "TLS") {
			t.Errorf("message %q should name TLS", f.Message)
		}
	})

	t.Run("plaintext against a TLS listener", func(t *testing.T) {
		o, _ := newTestObserver(t)
		obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, vault)[0]
		requireFailure(t, obs, proof.ReasonBrokerUnreachable, "Metadata", "")
	})
}

// Mutual TLS with PEM files read by LoadTLSFiles.
func TestObserveMutualTLSFromFiles(t *testing.T) {
	t.Parallel()
	ca := kafkatest.NewCA(t, "retention-guard mTLS CA")
	server := ca.ServerTLS(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	server.ClientCAs = pool
	server.ClientAuth = tls.RequireAndVerifyClientCert

	helperCert, helperKey := ca.Issue(t, "kafkatest-helper")
	helperPair, err := tls.X509KeyPair(helperCert, helperKey)
	if err != nil {
		t.Fatal(err)
	}
	helper := ca.ClientTLS()
	helper.Certificates = []tls.Certificate{helperPair}
	c := tlsCluster(t, ca, server, helper)

	dir := t.TempDir()
	certPEM, keyPEM := ca.Issue(t, "retention-guard")
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	caFile, certFile, keyFile := write("ca.crt", ca.PEM), write("tls.crt", certPEM), write("tls.key", keyPEM)

	tlsFiles, err := LoadTLSFiles(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs, TLS: tlsFiles}, vault)[0]
	requireNoFailures(t, obs)

	// Without the client certificate the broker refuses the handshake.
	noCert, err := LoadTLSFiles(caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	obs = observe(t, o, Connection{BootstrapServers: c.Addrs, TLS: noCert}, vault)[0]
	requireFailure(t, obs, proof.ReasonBrokerUnreachable, "Metadata", "")
}
