package kafka

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms the observer speaks.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Connection says how to reach and authenticate to one Kafka cluster.
//
// Two Connections with the same Key share one pooled client in an Observer.
type Connection struct {
	// BootstrapServers are host:port seeds; at least one.
	BootstrapServers []string
	// TLS enables TLS; nil means plaintext.
	TLS *TLS
	// SASL enables SASL authentication; nil means none.
	SASL *SASL
}

// TLS is the TLS material of a Connection, as PEM bytes.
type TLS struct {
	// CA verifies the brokers' certificates; empty means the system pool.
	CA []byte
	// Cert and Key are the client certificate and private key for mutual
	// TLS; both or neither.
	Cert, Key []byte
	// ServerName overrides the name verified in the brokers' certificates;
	// empty means the host of each broker dialed.
	ServerName string
}

// SASL is the SASL identity of a Connection.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or
	// AWS_MSK_IAM (case-insensitive).
	Mechanism string
	// Username and Password: PLAIN and SCRAM.
	Username string
	Password string
	// OAuth: OAUTHBEARER.
	OAuth *OAuthBearer
	// AWS: AWS_MSK_IAM with static keys; nil uses the AWS SDK's default
	// credential chain.
	AWS *AWSCredentials
}

// identity describes who authenticates, for messages: the username, the
// OAuth client or token file, the AWS access key id or "the default AWS
// credential chain". Never a secret.
func (s *SASL) identity() string {
	switch strings.ToUpper(s.Mechanism) {
	case MechanismOAuthBearer:
		switch {
		case s.OAuth == nil:
			return "no OAuth configuration"
		case s.OAuth.TokenFile != "":
			return "the token in " + s.OAuth.TokenFile
		default:
			return fmt.Sprintf("client %q of %s", s.OAuth.ClientID, s.OAuth.TokenURL)
		}
	case MechanismAWSMSKIAM:
		if s.AWS == nil {
			return "the default AWS credential chain"
		}
		return fmt.Sprintf("AWS access key %q", s.AWS.AccessKeyID)
	}
	return fmt.Sprintf("%q", s.Username)
}

// secrets are the values redact removes from messages and logs.
func (s *SASL) secrets() []string {
	out := []string{s.Password}
	if s.OAuth != nil {
		out = append(out, s.OAuth.ClientSecret)
	}
	if s.AWS != nil {
		out = append(out, s.AWS.SecretAccessKey, s.AWS.SessionToken)
	}
	return out
}

// LoadTLSFiles reads PEM files into a TLS. Any path may be empty: caFile
// empty means the system pool, certFile and keyFile empty means no client
// certificate (but one without the other is an error). Errors name the file,
// never its contents.
func LoadTLSFiles(caFile, certFile, keyFile string) (*TLS, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs both a certificate file and a key file")
	}
	t := &TLS{}
	read := func(kind, path string) ([]byte, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			// The *PathError names the file and the OS reason only.
			return nil, fmt.Errorf("reading TLS %s: %w", kind, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("reading TLS %s %s: file is empty", kind, path)
		}
		return b, nil
	}
	var err error
	if t.CA, err = read("CA file", caFile); err != nil {
		return nil, err
	}
	if t.Cert, err = read("certificate file", certFile); err != nil {
		return nil, err
	}
	if t.Key, err = read("key file", keyFile); err != nil {
		return nil, err
	}
	if _, err := t.config(); err != nil {
		return nil, fmt.Errorf("TLS files %s: %w", strings.Join(nonEmpty(caFile, certFile, keyFile), ", "), err)
	}
	return t, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate reports a Connection that can never work (no servers, a PEM that
// does not parse, an unknown SASL mechanism) without contacting Kafka.
// Observe reports the same problems as failures.
func (c Connection) Validate() error {
	if len(c.BootstrapServers) == 0 {
		return errors.New("no bootstrap servers")
	}
	for _, s := range c.BootstrapServers {
		if strings.TrimSpace(s) == "" {
			return errors.New("empty bootstrap server")
		}
	}
	if c.TLS != nil {
		if _, err := c.TLS.config(); err != nil {
			return err
		}
	}
	if c.SASL != nil {
		if _, err := c.SASL.mechanism(); err != nil {
			return err
		}
	}
	return nil
}

// config builds the client TLS configuration: TLS 1.2 at least, the CA when
// given (else the system pool), the client certificate when given.
func (t *TLS) config() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: t.ServerName,
	}
	if len(t.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(t.CA) {
			return nil, errors.New("the CA holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	switch {
	case len(t.Cert) > 0 && len(t.Key) > 0:
		pair, err := tls.X509KeyPair(t.Cert, t.Key)
		if err != nil {
			// crypto/tls errors describe the PEM structure, not the key.
			return nil, fmt.Errorf("client certificate and key do not form a pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(t.Cert) > 0 || len(t.Key) > 0:
		return nil, errors.New("a client certificate needs both a certificate and a key")
	}
	return cfg, nil
}

// mechanism returns the franz-go SASL mechanism.
func (s *SASL) mechanism() (sasl.Mechanism, error) {
	switch strings.ToUpper(s.Mechanism) {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	case MechanismOAuthBearer:
		return oauthMechanism(s.OAuth)
	case MechanismAWSMSKIAM:
		if s.AWS != nil && (s.AWS.AccessKeyID == "" || s.AWS.SecretAccessKey == "") {
			return nil, errors.New("AWS_MSK_IAM with static keys needs an access key id and a secret access key")
		}
		return awsMechanism(s.AWS), nil
	default:
		return nil, fmt.Errorf("unsupported SASL mechanism %q (want %s, %s, %s, %s or %s)",
			s.Mechanism, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer, MechanismAWSMSKIAM)
	}
}

// keySecret keys the HMAC that hides credentials in Connection.Key. It is
// random per process: keys are stable for the life of the process (which is
// all a pool needs) and cannot be reversed by guessing weak passwords.
var keySecret = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("kafka: reading random key secret: %v", err))
	}
	return b
}()

// Key is a stable identifier of the Connection within this process, used to
// pool clients: equal Connections (servers in any order) have equal keys,
// and any change of server, TLS material or credential changes the key. The
// servers appear in clear; everything else only as an HMAC-SHA256 digest.
func (c Connection) Key() string {
	servers := c.sortedServers()
	h := hmac.New(sha256.New, keySecret)
	field := func(name string, b []byte) {
		fmt.Fprintf(h, "%s:%d:", name, len(b))
		h.Write(b)
	}
	field("servers", []byte(strings.Join(servers, ",")))
	if c.TLS != nil {
		field("tls", []byte("on"))
		field("ca", c.TLS.CA)
		field("cert", c.TLS.Cert)
		field("key", c.TLS.Key)
		field("servername", []byte(c.TLS.ServerName))
	}
	if c.SASL != nil {
		field("sasl", []byte(strings.ToUpper(c.SASL.Mechanism)))
		field("user", []byte(c.SASL.Username))
		field("pass", []byte(c.SASL.Password))
		if o := c.SASL.OAuth; o != nil {
			field("oauth", []byte("on"))
			field("tokenurl", []byte(o.TokenURL))
			field("clientid", []byte(o.ClientID))
			field("clientsecret", []byte(o.ClientSecret))
			field("scopes", []byte(strings.Join(o.Scopes, " ")))
			field("audience", []byte(o.Audience))
			field("tokenfile", []byte(o.TokenFile))
			keys := make([]string, 0, len(o.Extensions))
			for k := range o.Extensions {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				field("ext", []byte(k+"="+o.Extensions[k]))
			}
		}
		if a := c.SASL.AWS; a != nil {
			field("aws", []byte("static"))
			field("akid", []byte(a.AccessKeyID))
			field("secret", []byte(a.SecretAccessKey))
			field("session", []byte(a.SessionToken))
		}
	}
	return strings.Join(servers, ",") + "#" + hex.EncodeToString(h.Sum(nil))
}

// clusterKey identifies the cluster without credentials: the sorted
// bootstrap servers. Group memory is keyed by it, so rotating credentials
// does not forget since when a group is empty.
func (c Connection) clusterKey() string {
	return strings.Join(c.sortedServers(), ",")
}

func (c Connection) sortedServers() []string {
	servers := make([]string, 0, len(c.BootstrapServers))
	for _, s := range c.BootstrapServers {
		servers = append(servers, strings.TrimSpace(s))
	}
	slices.Sort(servers)
	return slices.Compact(servers)
}

// String describes the Connection for logs: servers, whether TLS is on, the
// SASL mechanism and username. It never contains a password or key material.
func (c Connection) String() string {
	var b strings.Builder
	b.WriteString("kafka[")
	b.WriteString(strings.Join(c.BootstrapServers, ","))
	if c.TLS != nil {
		b.WriteString(" tls=on")
		if c.TLS.ServerName != "" {
			b.WriteString(" servername=" + c.TLS.ServerName)
		}
		if len(c.TLS.Cert) > 0 {
			b.WriteString(" clientcert=yes")
		}
	} else {
		b.WriteString(" tls=off")
	}
	if c.SASL != nil {
		b.WriteString(" sasl=" + strings.ToUpper(c.SASL.Mechanism))
		switch strings.ToUpper(c.SASL.Mechanism) {
		case MechanismOAuthBearer, MechanismAWSMSKIAM:
			b.WriteString(" identity=" + c.SASL.identity())
		default:
			b.WriteString(" user=" + c.SASL.Username)
		}
	} else {
		b.WriteString(" sasl=off")
	}
	b.WriteString("]")
	return b.String()
}

// redact removes the connection's secrets (password, OAuth client secret,
// AWS secret key and session token) from s, should any text from a server
// or library ever echo them. Secrets shorter than three characters are
// left alone: they would cut ordinary words apart ("password" holds "p")
// and no text can hide them meaningfully anyway.
func (c Connection) redact(s string) string {
	if c.SASL == nil {
		return s
	}
	for _, secret := range c.SASL.secrets() {
		if len(secret) >= 3 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}
