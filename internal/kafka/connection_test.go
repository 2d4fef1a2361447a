package kafka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

func TestConnectionKey(t *testing.T) {
	base := Connection{
		BootstrapServers: []string{"kafka-1:9092", "kafka-0:9092"},
		TLS:              &TLS{CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("key")},
		SASL:             &SASL{Mechanism: "SCRAM-SHA-512", Username: "guard", Password: "hunter2-hunter2"},
	}
	same := base
	same.BootstrapServers = []string{"kafka-0:9092", "kafka-1:9092", "kafka-0:9092"}
	same.SASL = &SASL{Mechanism: "scram-sha-512", Username: "guard", Password: "hunter2-hunter2"}
	if base.Key() != same.Key() {
		t.Errorf("equal connections (server order, duplicates, mechanism case) have different keys")
	}
	for name, change := range map[string]func(*Connection){
		"server": func(c *Connection) { c.BootstrapServers = []string{"kafka-0:9092"} },
		"password": func(c *Connection) {
			c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "guard", Password: "rotated"}
		},
		"username": func(c *Connection) {
			c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "other", Password: "hunter2-hunter2"}
		},
		"mechanism": func(c *Connection) {
			c.SASL = &SASL{Mechanism: "PLAIN", Username: "guard", Password: "hunter2-hunter2"}
		},
		"no sasl":    func(c *Connection) { c.SASL = nil },
		"ca":         func(c *Connection) { c.TLS = &TLS{CA: []byte("other"), Cert: []byte("cert"), Key: []byte("key")} },
		"client key": func(c *Connection) { c.TLS = &TLS{CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("other")} },
		"server name": func(c *Connection) {
			c.TLS = &TLS{CA: []byte("ca"), Cert: []byte("cert"), Key: []byte("key"), ServerName: "x"}
		},
		"no tls": func(c *Connection) { c.TLS = nil },
	} {
		changed := base
		change(&changed)
		if changed.Key() == base.Key() {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	for _, secret := range []string{"hunter2-hunter2", "guard", "cert", "key"} {
		if strings.Contains(strings.SplitN(base.Key(), "#", 2)[1], secret) {
			t.Errorf("key %q contains %q in clear", base.Key(), secret)
		}
	}
	if !strings.HasPrefix(base.Key(), "kafka-0:9092,kafka-1:9092#") {
		t.Errorf("key %q should start with the sorted servers", base.Key())
	}
}

func TestConnectionString(t *testing.T) {
	c := Connection{
		BootstrapServers: []string{"kafka-0:9092", "kafka-1:9092"},
		TLS:              &TLS{CA: []byte("-----BEGIN CERTIFICATE-----"), Cert: []byte("c"), Key: []byte("-----BEGIN EC PRIVATE KEY-----")},
		SASL:             &SASL{Mechanism: "scram-sha-256", Username: "guard", Password: "hunter2-hunter2"},
	}
	got := c.String()
	want := "kafka[kafka-0:9092,kafka-1:9092 tls=on clientcert=yes sasl=SCRAM-SHA-256 user=guard]"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, secret := range []string{"hunter2", "BEGIN"} {
		if strings.Contains(got, secret) {
			t.Errorf("String() leaks %q", secret)
		}
	}
	if got := (Connection{BootstrapServers: []string{"k:9092"}}).String(); got != "kafka[k:9092 tls=off sasl=off]" {
		t.Errorf("plaintext String() = %q", got)
	}
}

func TestConnectionValidate(t *testing.T) {
	ca := kafkatest.NewCA(t, "validate")
	cert, key := ca.Issue(t, "client")
	for name, tc := range map[string]struct {
		conn    Connection
		wantErr string
	}{
		"ok":             {Connection{BootstrapServers: []string{"k:9092"}, TLS: &TLS{CA: ca.PEM, Cert: cert, Key: key}, SASL: &SASL{Mechanism: "PLAIN"}}, ""},
		"no servers":     {Connection{}, "no bootstrap servers"},
		"empty server":   {Connection{BootstrapServers: []string{" "}}, "empty bootstrap server"},
		"bad CA":         {Connection{BootstrapServers: []string{"k:9092"}, TLS: &TLS{CA: []byte("not pem")}}, "no PEM certificate"},
		"cert, no key":   {Connection{BootstrapServers: []string{"k:9092"}, TLS: &TLS{Cert: cert}}, "both a certificate and a key"},
		"mismatched key": {Connection{BootstrapServers: []string{"k:9092"}, TLS: &TLS{Cert: cert, Key: cert}}, "do not form a pair"},
		"mechanism":      {Connection{BootstrapServers: []string{"k:9092"}, SASL: &SASL{Mechanism: "GSSAPI", Password: "hunter2"}}, "unsupported SASL mechanism"},
	} {
		err := tc.conn.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want %q", name, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%s: error leaks the password", name)
		}
	}
}

func TestLoadTLSFiles(t *testing.T) {
	ca := kafkatest.NewCA(t, "files")
	cert, key := ca.Issue(t, "client")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile, certFile, keyFile := write("ca.crt", ca.PEM), write("tls.crt", cert), write("tls.key", key)
	garbage := write("garbage.pem", []byte("SECRET-KEY-MATERIAL"))
	empty := write("empty.pem", nil)

	got, err := LoadTLSFiles(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.CA) != string(ca.PEM) || string(got.Cert) != string(cert) || string(got.Key) != string(key) {
		t.Errorf("files not read as given")
	}
	if got, err := LoadTLSFiles("", "", ""); err != nil || got.CA != nil {
		t.Errorf("no files: %+v, %v; want the system pool", got, err)
	}

	for name, tc := range map[string]struct {
		ca, cert, key string
		want          string
	}{
		"missing CA":       {filepath.Join(dir, "nope.crt"), "", "", "nope.crt"},
		"empty CA":         {empty, "", "", "empty.pem"},
		"garbage CA":       {garbage, "", "", "garbage.pem"},
		"cert without key": {"", certFile, "", "both"},
		"garbage key":      {caFile, certFile, garbage, "garbage.pem"},
	} {
		_, err := LoadTLSFiles(tc.ca, tc.cert, tc.key)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "SECRET-KEY-MATERIAL") || strings.Contains(err.Error(), "PRIVATE KEY-----") {
			t.Errorf("%s: error %q shows file contents", name, err)
		}
	}
}

// OAuth and AWS credentials change the key (a rotated client secret or
// access key gets a new pooled client) and never appear in it, nor in
// String.
func TestConnectionKeyOAuthAndAWS(t *testing.T) {
	oauthConn := func(mod func(*OAuthBearer)) Connection {
		o := &OAuthBearer{TokenURL: "https://idp/token", ClientID: "guard", ClientSecret: "oauth-secret-1", Scopes: []string{"kafka"},
			Extensions: map[string]string{"logicalCluster": "lkc-1"}}
		if mod != nil {
			mod(o)
		}
		return Connection{BootstrapServers: []string{"k:9092"}, SASL: &SASL{Mechanism: "OAUTHBEARER", OAuth: o}}
	}
	base := oauthConn(nil)
	for name, mod := range map[string]func(*OAuthBearer){
		"client secret": func(o *OAuthBearer) { o.ClientSecret = "oauth-secret-2" },
		"client id":     func(o *OAuthBearer) { o.ClientID = "other" },
		"scopes":        func(o *OAuthBearer) { o.Scopes = nil },
		"extension":     func(o *OAuthBearer) { o.Extensions = map[string]string{"logicalCluster": "lkc-2"} },
		"token url":     func(o *OAuthBearer) { o.TokenURL = "https://idp/other" },
	} {
		if oauthConn(mod).Key() == base.Key() {
			t.Errorf("changing the OAuth %s keeps the key", name)
		}
	}
	awsConn := func(secret string) Connection {
		return Connection{BootstrapServers: []string{"k:9092"}, SASL: &SASL{Mechanism: "AWS_MSK_IAM",
			AWS: &AWSCredentials{AccessKeyID: "AKIA1", SecretAccessKey: secret}}}
	}
	if awsConn("aws-secret-1").Key() == awsConn("aws-secret-2").Key() {
		t.Error("changing the AWS secret key keeps the key")
	}
	chain := Connection{BootstrapServers: []string{"k:9092"}, SASL: &SASL{Mechanism: "AWS_MSK_IAM"}}
	if chain.Key() == awsConn("aws-secret-1").Key() {
		t.Error("the default chain and static keys share a key")
	}
	for _, c := range []Connection{base, awsConn("aws-secret-1")} {
		for _, secret := range []string{"oauth-secret-1", "aws-secret-1"} {
			if strings.Contains(c.Key(), secret) || strings.Contains(c.String(), secret) {
				t.Errorf("key or string of %s holds %q", c.String(), secret)
			}
		}
	}
	for c, secret := range map[*Connection]string{&base: "oauth-secret-1", ptr(awsConn("aws-secret-1")): "aws-secret-1"} {
		if got := c.redact("x " + secret + " y"); got != "x [redacted] y" {
			t.Errorf("redact(%q) = %q", secret, got)
		}
	}
	if s := chain.String(); !strings.Contains(s, "identity=the default AWS credential chain") {
		t.Errorf("String() = %q", s)
	}
}

func ptr[T any](v T) *T { return &v }
