package resolve

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Keys read from the Secrets a policy references.
const (
	// SecretKeyCA is the CA certificate (PEM) that signed the brokers'
	// certificates; the system pool is used when absent.
	SecretKeyCA = "ca.crt"
	// SecretKeyCert and SecretKeyKey are the client certificate and key
	// (PEM) for mutual TLS; both or neither.
	SecretKeyCert = corev1.TLSCertKey
	SecretKeyKey  = corev1.TLSPrivateKeyKey
	// SecretKeyUsername and SecretKeyPassword are the SASL identity
	// (PLAIN, SCRAM).
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	// SecretKeyClientID and SecretKeyClientSecret are the OAuth client of
	// OAUTHBEARER with a token endpoint.
	SecretKeyClientID     = "clientID"
	SecretKeyClientSecret = "clientSecret"
	// SecretKeyAccessKeyID, SecretKeySecretAccessKey and
	// SecretKeySessionToken (optional) are static AWS keys for AWS_MSK_IAM.
	SecretKeyAccessKeyID     = "accessKeyID"
	SecretKeySecretAccessKey = "secretAccessKey"
	SecretKeySessionToken    = "sessionToken"
	// SecretKeyStrimziCert and SecretKeyStrimziKey are where a Strimzi
	// KafkaUser's Secret keeps its client certificate: read when tls.crt
	// and tls.key are absent.
	SecretKeyStrimziCert = "user.crt"
	SecretKeyStrimziKey  = "user.key"
)

// Reasons of a connection's Secrets, set by the reconcilers besides the
// proof's (see internal/proof). Like those, they are an API: CamelCase and
// stable.
const (
	// ReasonSecretNotFound: a Secret named by spec.kafka.tls.secretRef or
	// spec.kafka.sasl.secretRef does not exist in the policy's namespace.
	// The policy is Stalled until the Secret appears (Secrets are watched).
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyMissing: the Secret exists but lacks a key the
	// connection needs (username, password, or one half of tls.crt and
	// tls.key). The policy is Stalled until the Secret is fixed.
	ReasonSecretKeyMissing = "SecretKeyMissing"
	// ReasonInvalidConnection: the connection cannot work as configured,
	// e.g. the CA or client certificate in the Secret is not valid PEM.
	ReasonInvalidConnection = "InvalidConnection"
)

// SpecProblem is a problem with the policy or what it references that only
// a person (or another controller) can fix: no Kafka request is made and the
// policy is Stalled. Its message never holds credentials.
type SpecProblem struct {
	Reason  string
	Message string
}

func (p *SpecProblem) Error() string { return p.Reason + ": " + p.Message }

// BootstrapAllowlist restricts the bootstrap servers policies may name, with
// path.Match patterns over "host:port" such as "*.kafka.svc:9093" or
// "kafka-?.prod:9092". Matching is case-insensitive; a pattern must match
// the whole entry, port included. An empty allowlist allows no server:
// secure by default, nobody who may create a policy makes the manager dial
// a host the platform team did not allow (a port scanner inside the
// cluster, its answers in status). "*" allows every host:port.
type BootstrapAllowlist struct {
	patterns []string
	// flag and value name the setting in messages, e.g.
	// "--allowed-bootstrap-servers" and the chart's
	// "allowedBootstrapServers".
	flag, value string
}

// NewBootstrapAllowlist checks and compiles patterns. Entries may hold
// several comma-separated patterns; blanks are ignored.
func NewBootstrapAllowlist(patterns []string) (BootstrapAllowlist, error) {
	return newAllowlist(patterns, "--allowed-bootstrap-servers", "allowedBootstrapServers", "allowed bootstrap server")
}

// NewCursorHostAllowlist is NewBootstrapAllowlist for the database hosts of
// business cursors (--allowed-cursor-hosts).
func NewCursorHostAllowlist(patterns []string) (BootstrapAllowlist, error) {
	return newAllowlist(patterns, "--allowed-cursor-hosts", "allowedCursorHosts", "allowed cursor host")
}

func newAllowlist(patterns []string, flag, value, what string) (BootstrapAllowlist, error) {
	a := BootstrapAllowlist{flag: flag, value: value}
	for _, entry := range patterns {
		for p := range strings.SplitSeq(entry, ",") {
			p = strings.ToLower(strings.TrimSpace(p))
			if p == "" {
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				return BootstrapAllowlist{}, fmt.Errorf("%s pattern %q: %w", what, p, err)
			}
			if !slices.Contains(a.patterns, p) {
				a.patterns = append(a.patterns, p)
			}
		}
	}
	return a, nil
}

// Patterns returns the compiled patterns (empty: no server is allowed).
func (a BootstrapAllowlist) Patterns() []string { return slices.Clone(a.patterns) }

// Allows reports whether server matches a pattern.
func (a BootstrapAllowlist) Allows(server string) bool {
	s := strings.ToLower(strings.TrimSpace(server))
	for _, p := range a.patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// notAllowed says which setting refused what, and how to allow more.
func (a BootstrapAllowlist) notAllowed(what string, denied []string) string {
	flag, value := a.flag, a.value
	if flag == "" {
		flag, value = "--allowed-bootstrap-servers", "allowedBootstrapServers"
	}
	var setting string
	if len(a.patterns) == 0 {
		setting = fmt.Sprintf("this controller allows none (%s is empty, the secure default)", flag)
	} else {
		setting = fmt.Sprintf("this controller allows only %s %s", flag, strings.Join(a.patterns, ","))
	}
	return fmt.Sprintf("%s %s is not allowed: %s, and no connection was opened; to allow it, the platform team adds a pattern that matches it to the chart's %s (the manager's %s)",
		what, strings.Join(denied, ", "), setting, value, flag)
}

// check returns a BootstrapServerNotAllowed problem naming the servers no
// pattern allows, or nil.
func (a BootstrapAllowlist) check(servers []string) *SpecProblem {
	var denied []string
	for _, s := range servers {
		if !a.Allows(s) {
			denied = append(denied, s)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return &SpecProblem{
		Reason: proof.ReasonBootstrapServerNotAllowed,
		Message: a.notAllowed("bootstrap server", denied) +
			", or declares a ClusterKafkaConnection for the cluster, which policies name with spec.kafka.connectionRef",
	}
}

// errSecretNotFound is returned by a secretGetter for a Secret that does not
// exist.
var errSecretNotFound = errors.New("secret not found")

// secretGetter returns the data of a Secret in the namespace the
// connection's Secrets live in, errSecretNotFound when there is none, or
// another (transient) error.
type secretGetter func(name string) (map[string][]byte, error)

// SecretRefs lists the Secrets a policy references, for the field index.
func SecretRefs(p *rgv1.ConsumerRetentionPolicy) []string {
	names := ConnectionSecretRefs(p.Spec.Kafka.TLS, p.Spec.Kafka.SASL)
	if c := p.Spec.Cursor; c != nil && c.SQL.SecretRef.Name != "" && !slices.Contains(names, c.SQL.SecretRef.Name) {
		names = append(names, c.SQL.SecretRef.Name)
	}
	return names
}

// ConnectionSecretRefs lists the Secrets a connection's TLS and SASL
// reference, for the field index.
func ConnectionSecretRefs(t *rgv1.KafkaTLS, s *rgv1.KafkaSASL) []string {
	var names []string
	if t != nil && t.SecretRef.Name != "" {
		names = append(names, t.SecretRef.Name)
	}
	if s != nil && s.SecretRef != nil && s.SecretRef.Name != "" && !slices.Contains(names, s.SecretRef.Name) {
		names = append(names, s.SecretRef.Name)
	}
	return names
}

// connectionSource is a connection spec, with what it names resolved: the
// servers (written, or read from Strimzi), TLS and SASL, where it is
// declared (for messages), and whether it may use the manager's own
// identity.
type connectionSource struct {
	// field prefixes the spec's fields in messages: "spec.kafka" for a
	// policy, "spec" for a connection.
	field string
	// secretsIn says where the Secrets live, for messages: "the policy's
	// namespace", "namespace kafka-ops".
	secretsIn string
	servers   []string
	tls       *rgv1.KafkaTLS
	sasl      *rgv1.KafkaSASL
	// strimziCA, when set, turns TLS on and verifies the brokers with it
	// (a Strimzi listener's certificates); a tls Secret may add a client
	// certificate.
	strimziCA []byte
	// ambient allows the manager's own identity: an OAUTHBEARER token
	// file, AWS_MSK_IAM without a Secret (ClusterKafkaConnection only).
	ambient bool
	// allow restricts the servers; nil allows every server.
	allow *BootstrapAllowlist
}

// resolveConnection builds the Kafka connection of a policy written inline:
// the allowlist first (a denied server is never contacted, and no Secret is
// read), then the TLS and SASL Secrets. A *SpecProblem is returned for what
// a person must fix; any other error is transient (reading a Secret
// failed).
func resolveConnection(p *rgv1.ConsumerRetentionPolicy, allow BootstrapAllowlist, get secretGetter) (kafka.Connection, error) {
	spec := p.Spec.Kafka
	return buildConnection(connectionSource{
		field: "spec.kafka", secretsIn: "the policy's namespace",
		servers: spec.BootstrapServers, tls: spec.TLS, sasl: spec.SASL, allow: &allow,
	}, get)
}

// buildConnection turns a connection source into a kafka.Connection,
// reading its Secrets through get.
func buildConnection(src connectionSource, get secretGetter) (kafka.Connection, error) {
	if src.allow != nil {
		if prob := src.allow.check(src.servers); prob != nil {
			return kafka.Connection{}, prob
		}
	}
	conn := kafka.Connection{BootstrapServers: slices.Clone(src.servers)}

	if src.tls != nil || len(src.strimziCA) > 0 {
		t := &kafka.TLS{CA: src.strimziCA}
		if src.tls != nil {
			name := src.tls.SecretRef.Name
			data, err := readSecret(get, name, src.field+".tls.secretRef", src.secretsIn)
			if err != nil {
				return kafka.Connection{}, err
			}
			if len(data[SecretKeyCA]) > 0 {
				t.CA = data[SecretKeyCA]
			}
			t.Cert, t.Key = data[SecretKeyCert], data[SecretKeyKey]
			if len(t.Cert) == 0 && len(t.Key) == 0 {
				t.Cert, t.Key = data[SecretKeyStrimziCert], data[SecretKeyStrimziKey]
			}
			t.ServerName = src.tls.ServerName
			switch {
			case len(t.Cert) > 0 && len(t.Key) == 0:
				return kafka.Connection{}, missingKey(name, SecretKeyKey, "a client certificate ("+SecretKeyCert+") needs its private key")
			case len(t.Key) > 0 && len(t.Cert) == 0:
				return kafka.Connection{}, missingKey(name, SecretKeyCert, "a private key ("+SecretKeyKey+") needs its client certificate")
			}
		}
		conn.TLS = t
	}

	if src.sasl != nil {
		sasl, err := buildSASL(src, get)
		if err != nil {
			return kafka.Connection{}, err
		}
		conn.SASL = sasl
	}

	if err := conn.Validate(); err != nil {
		// Validate's errors describe the structure (PEM, mechanism), never
		// the material itself.
		return kafka.Connection{}, &SpecProblem{
			Reason:  ReasonInvalidConnection,
			Message: fmt.Sprintf("the Kafka connection cannot work as configured: %v", err),
		}
	}
	return conn, nil
}

// buildSASL reads the SASL identity: a Secret's keys, or (only where the
// source allows it) the manager's own identity.
func buildSASL(src connectionSource, get secretGetter) (*kafka.SASL, error) {
	spec := src.sasl
	mech := string(spec.Mechanism)
	sasl := &kafka.SASL{Mechanism: mech}
	field := src.field + ".sasl"
	var (
		data map[string][]byte
		name string
	)
	if spec.SecretRef != nil {
		name = spec.SecretRef.Name
		var err error
		if data, err = readSecret(get, name, field+".secretRef", src.secretsIn); err != nil {
			return nil, err
		}
	}
	need := func(why string, keys ...string) error {
		if spec.SecretRef == nil {
			return &SpecProblem{Reason: ReasonInvalidConnection,
				Message: fmt.Sprintf("%s: %s needs a secretRef with %s", field, mech, strings.Join(keys, " and "))}
		}
		for _, key := range keys {
			if len(data[key]) == 0 {
				return missingKey(name, key, why)
			}
		}
		return nil
	}
	ambient := func(what string) error {
		if src.ambient {
			return nil
		}
		return &SpecProblem{Reason: ReasonInvalidConnection,
			Message: fmt.Sprintf("%s: %s would use the manager's own identity; only a ClusterKafkaConnection may", field, what)}
	}

	switch spec.Mechanism {
	case rgv1.SASLOAuthBearer:
		o := spec.OAuthBearer
		if o == nil {
			return nil, &SpecProblem{Reason: ReasonInvalidConnection, Message: field + ": OAUTHBEARER needs oauthBearer (a tokenEndpoint or a tokenFile)"}
		}
		ob := &kafka.OAuthBearer{TokenURL: o.TokenEndpoint, Scopes: slices.Clone(o.Scopes), Audience: o.Audience,
			TokenFile: o.TokenFile, Extensions: o.Extensions}
		if o.TokenFile != "" {
			if err := ambient("oauthBearer.tokenFile (a file of the manager's pod)"); err != nil {
				return nil, err
			}
		} else {
			if err := need("OAUTHBEARER with a token endpoint authenticates as an OAuth client", SecretKeyClientID, SecretKeyClientSecret); err != nil {
				return nil, err
			}
			ob.ClientID, ob.ClientSecret = string(data[SecretKeyClientID]), string(data[SecretKeyClientSecret])
		}
		sasl.OAuth = ob
	case rgv1.SASLAWSMSKIAM:
		if spec.SecretRef == nil {
			if err := ambient("AWS_MSK_IAM without a secretRef (the default AWS credential chain)"); err != nil {
				return nil, err
			}
			break
		}
		if err := need("AWS_MSK_IAM with a Secret signs with static AWS keys", SecretKeyAccessKeyID, SecretKeySecretAccessKey); err != nil {
			return nil, err
		}
		sasl.AWS = &kafka.AWSCredentials{AccessKeyID: string(data[SecretKeyAccessKeyID]),
			SecretAccessKey: string(data[SecretKeySecretAccessKey]), SessionToken: string(data[SecretKeySessionToken])}
	default:
		if err := need("SASL "+mech+" needs "+SecretKeyUsername+" and "+SecretKeyPassword, SecretKeyUsername, SecretKeyPassword); err != nil {
			return nil, err
		}
		sasl.Username, sasl.Password = string(data[SecretKeyUsername]), string(data[SecretKeyPassword])
	}
	return sasl, nil
}

func readSecret(get secretGetter, name, field, where string) (map[string][]byte, error) {
	data, err := get(name)
	switch {
	case errors.Is(err, errSecretNotFound):
		return nil, &SpecProblem{
			Reason:  ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %q named by %s does not exist in %s", name, field, where),
		}
	case err != nil:
		return nil, fmt.Errorf("reading Secret %q: %w", name, err)
	}
	return data, nil
}

func missingKey(secret, key, why string) *SpecProblem {
	return &SpecProblem{
		Reason:  ReasonSecretKeyMissing,
		Message: fmt.Sprintf("Secret %q has no (or an empty) key %q: %s", secret, key, why),
	}
}
