package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/retentionguard/retention-guard/internal/kafka"
)

// connectionFlags are the flags that say how to reach and authenticate to a
// cluster, with every mechanism the manager speaks: PLAIN and SCRAM
// (username, password file), OAUTHBEARER (a token endpoint with a client
// secret file, or a token file), AWS_MSK_IAM (the AWS SDK's default
// credential chain), TLS and mutual TLS. Secrets are read from files,
// never from the command line.
type connectionFlags struct {
	bootstrapServers       []string
	tls                    bool
	tlsCA, tlsCert, tlsKey string
	tlsServerName          string
	saslMechanism          string
	saslUsername           string
	saslPasswordFile       string
	oauthTokenEndpoint     string
	oauthClientID          string
	oauthClientSecretFile  string
	oauthScopes            []string
	oauthTokenFile         string
	oauthExtensions        map[string]string
}

var mechanisms = []string{kafka.MechanismPlain, kafka.MechanismScramSHA256, kafka.MechanismScramSHA512,
	kafka.MechanismOAuthBearer, kafka.MechanismAWSMSKIAM}

func (c *connectionFlags) bind(f *pflag.FlagSet) {
	f.StringSliceVar(&c.bootstrapServers, "bootstrap-server", nil, "Kafka brokers as HOST:PORT, comma-separated or repeated (required)")
	f.BoolVar(&c.tls, "tls", false, "use TLS with the system's CAs (implied by --tls-ca/--tls-cert/--tls-key)")
	f.StringVar(&c.tlsCA, "tls-ca", "", "PEM file of the CA that signed the brokers' certificates")
	f.StringVar(&c.tlsCert, "tls-cert", "", "PEM client certificate for mutual TLS (with --tls-key)")
	f.StringVar(&c.tlsKey, "tls-key", "", "PEM client key for mutual TLS (with --tls-cert)")
	f.StringVar(&c.tlsServerName, "tls-server-name", "", "name to verify in the brokers' certificates (default: each broker's host)")
	f.StringVar(&c.saslMechanism, "sasl-mechanism", "", "SASL mechanism: "+strings.Join(mechanisms, ", "))
	f.StringVar(&c.saslUsername, "sasl-username", "", "SASL username (PLAIN, SCRAM)")
	f.StringVar(&c.saslPasswordFile, "sasl-password-file", "", "file holding the SASL password (PLAIN, SCRAM; never passed on the command line)")
	f.StringVar(&c.oauthTokenEndpoint, "sasl-oauth-token-endpoint", "", "OAUTHBEARER: the identity provider's token URL (client credentials grant)")
	f.StringVar(&c.oauthClientID, "sasl-oauth-client-id", "", "OAUTHBEARER: the OAuth client id, with --sasl-oauth-token-endpoint")
	f.StringVar(&c.oauthClientSecretFile, "sasl-oauth-client-secret-file", "", "OAUTHBEARER: file holding the OAuth client secret")
	f.StringSliceVar(&c.oauthScopes, "sasl-oauth-scope", nil, "OAUTHBEARER: scope to request; repeatable")
	f.StringVar(&c.oauthTokenFile, "sasl-oauth-token-file", "", "OAUTHBEARER: file holding the token (instead of a token endpoint); read for every authentication")
	f.StringToStringVar(&c.oauthExtensions, "sasl-oauth-extension", nil, "OAUTHBEARER: SASL extension KEY=VALUE, e.g. logicalCluster=lkc-abc123 (Confluent Cloud); repeatable")
}

// problems lists what is wrong with the flags alone, each with what to do.
func (c *connectionFlags) problems() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(c.bootstrapServers) == 0 {
		add("--bootstrap-server is required, e.g. --bootstrap-server kafka-0:9092")
	}
	for _, s := range c.bootstrapServers {
		if err := validHostPort(s); err != nil {
			add("--bootstrap-server %q: %v", s, err)
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		add("--tls-cert and --tls-key go together: give both for mutual TLS, or neither")
	}
	oauthSet := c.oauthTokenEndpoint != "" || c.oauthClientID != "" || c.oauthClientSecretFile != "" || c.oauthTokenFile != "" ||
		len(c.oauthScopes) > 0 || len(c.oauthExtensions) > 0
	userSet := c.saslUsername != "" || c.saslPasswordFile != ""
	mech := strings.ToUpper(c.saslMechanism)
	switch mech {
	case "":
		if userSet || oauthSet {
			add("--sasl-mechanism is required with the --sasl-* flags: %s", strings.Join(mechanisms, ", "))
		}
	case kafka.MechanismPlain, kafka.MechanismScramSHA256, kafka.MechanismScramSHA512:
		if c.saslUsername == "" {
			add("--sasl-username is required with --sasl-mechanism %s", mech)
		}
		if c.saslPasswordFile == "" {
			add("--sasl-password-file is required with --sasl-mechanism %s (the password is read from a file, never from the command line)", mech)
		}
		if oauthSet {
			add("--sasl-oauth-* flags go with --sasl-mechanism OAUTHBEARER only")
		}
	case kafka.MechanismOAuthBearer:
		if (c.oauthTokenEndpoint == "") == (c.oauthTokenFile == "") {
			add("--sasl-mechanism OAUTHBEARER needs exactly one of --sasl-oauth-token-endpoint and --sasl-oauth-token-file")
		}
		if c.oauthTokenEndpoint != "" && (c.oauthClientID == "" || c.oauthClientSecretFile == "") {
			add("--sasl-oauth-token-endpoint needs --sasl-oauth-client-id and --sasl-oauth-client-secret-file")
		}
		if userSet {
			add("--sasl-username and --sasl-password-file go with PLAIN and SCRAM, not OAUTHBEARER")
		}
	case kafka.MechanismAWSMSKIAM:
		if userSet || oauthSet {
			add("--sasl-mechanism AWS_MSK_IAM takes its credentials from the AWS SDK's default chain (environment, shared files, IRSA, Pod Identity); drop the other --sasl-* flags")
		}
	default:
		add("--sasl-mechanism %q: use %s", c.saslMechanism, strings.Join(mechanisms, ", "))
	}
	return out
}

// connection reads the files the flags point at. A file that cannot be
// read is a usage error: the command was pointed wrongly.
func (c *connectionFlags) connection() (kafka.Connection, error) {
	conn := kafka.Connection{BootstrapServers: c.bootstrapServers}
	if c.tls || c.tlsCA != "" || c.tlsCert != "" || c.tlsKey != "" {
		t, err := kafka.LoadTLSFiles(c.tlsCA, c.tlsCert, c.tlsKey)
		if err != nil {
			return conn, usageError{err}
		}
		t.ServerName = c.tlsServerName
		conn.TLS = t
	}
	readSecret := func(flag, path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", usageError{fmt.Errorf("%s: cannot read %s: %v", flag, path, pathError(err))}
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	switch mech := strings.ToUpper(c.saslMechanism); mech {
	case "":
	case kafka.MechanismOAuthBearer:
		o := &kafka.OAuthBearer{TokenURL: c.oauthTokenEndpoint, ClientID: c.oauthClientID, Scopes: c.oauthScopes,
			TokenFile: c.oauthTokenFile, Extensions: c.oauthExtensions}
		if c.oauthClientSecretFile != "" {
			secret, err := readSecret("--sasl-oauth-client-secret-file", c.oauthClientSecretFile)
			if err != nil {
				return conn, err
			}
			o.ClientSecret = secret
		}
		conn.SASL = &kafka.SASL{Mechanism: mech, OAuth: o}
	case kafka.MechanismAWSMSKIAM:
		conn.SASL = &kafka.SASL{Mechanism: mech}
	default:
		pw, err := readSecret("--sasl-password-file", c.saslPasswordFile)
		if err != nil {
			return conn, err
		}
		conn.SASL = &kafka.SASL{Mechanism: mech, Username: c.saslUsername, Password: pw}
	}
	if err := conn.Validate(); err != nil {
		return conn, usageError{err}
	}
	return conn, nil
}
