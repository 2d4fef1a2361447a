package controllers

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
	// SecretKeyUsername and SecretKeyPassword are the SASL identity.
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
)

// Reasons the reconciler sets on its own, besides the proof's (see
// internal/proof). Like those, they are an API: CamelCase and stable.
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
	// ReasonProofPending: the brokers are being observed for the first
	// proof of the current spec (condition Reconciling, and Ready Unknown).
	ReasonProofPending = "ProofPending"
)

// Condition types kstatus reads, besides the clauses and Ready.
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
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
// the whole entry, port included. An empty allowlist allows every server.
type BootstrapAllowlist struct {
	patterns []string
}

// NewBootstrapAllowlist checks and compiles patterns. Entries may hold
// several comma-separated patterns; blanks are ignored.
func NewBootstrapAllowlist(patterns []string) (BootstrapAllowlist, error) {
	var a BootstrapAllowlist
	for _, entry := range patterns {
		for p := range strings.SplitSeq(entry, ",") {
			p = strings.ToLower(strings.TrimSpace(p))
			if p == "" {
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				return BootstrapAllowlist{}, fmt.Errorf("allowed bootstrap server pattern %q: %w", p, err)
			}
			if !slices.Contains(a.patterns, p) {
				a.patterns = append(a.patterns, p)
			}
		}
	}
	return a, nil
}

// Patterns returns the compiled patterns (empty: every server is allowed).
func (a BootstrapAllowlist) Patterns() []string { return slices.Clone(a.patterns) }

// Allows reports whether server matches a pattern.
func (a BootstrapAllowlist) Allows(server string) bool {
	if len(a.patterns) == 0 {
		return true
	}
	s := strings.ToLower(strings.TrimSpace(server))
	for _, p := range a.patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
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
		Message: fmt.Sprintf("bootstrap server %s is not allowed by this controller (--allowed-bootstrap-servers %s): no connection was opened",
			strings.Join(denied, ", "), strings.Join(a.patterns, ",")),
	}
}

// errSecretNotFound is returned by a secretGetter for a Secret that does not
// exist.
var errSecretNotFound = errors.New("secret not found")

// secretGetter returns the data of a Secret in the policy's namespace,
// errSecretNotFound when there is none, or another (transient) error.
type secretGetter func(name string) (map[string][]byte, error)

// secretRefs lists the Secrets a policy references, for the field index.
func secretRefs(p *rgv1.ConsumerRetentionPolicy) []string {
	var names []string
	if t := p.Spec.Kafka.TLS; t != nil && t.SecretRef.Name != "" {
		names = append(names, t.SecretRef.Name)
	}
	if s := p.Spec.Kafka.SASL; s != nil && s.SecretRef.Name != "" && !slices.Contains(names, s.SecretRef.Name) {
		names = append(names, s.SecretRef.Name)
	}
	if c := p.Spec.Cursor; c != nil && c.SQL.SecretRef.Name != "" && !slices.Contains(names, c.SQL.SecretRef.Name) {
		names = append(names, c.SQL.SecretRef.Name)
	}
	return names
}

// resolveConnection builds the Kafka connection of a policy: the allowlist
// first (a denied server is never contacted, and no Secret is read), then
// the TLS and SASL Secrets. A *SpecProblem is returned for what a person
// must fix; any other error is transient (reading a Secret failed).
func resolveConnection(p *rgv1.ConsumerRetentionPolicy, allow BootstrapAllowlist, get secretGetter) (kafka.Connection, error) {
	spec := p.Spec.Kafka
	if prob := allow.check(spec.BootstrapServers); prob != nil {
		return kafka.Connection{}, prob
	}
	conn := kafka.Connection{BootstrapServers: slices.Clone(spec.BootstrapServers)}

	if spec.TLS != nil {
		name := spec.TLS.SecretRef.Name
		data, err := readSecret(get, name, "spec.kafka.tls.secretRef")
		if err != nil {
			return kafka.Connection{}, err
		}
		t := &kafka.TLS{
			CA:         data[SecretKeyCA],
			Cert:       data[SecretKeyCert],
			Key:        data[SecretKeyKey],
			ServerName: spec.TLS.ServerName,
		}
		switch {
		case len(t.Cert) > 0 && len(t.Key) == 0:
			return kafka.Connection{}, missingKey(name, SecretKeyKey, "a client certificate ("+SecretKeyCert+") needs its private key")
		case len(t.Key) > 0 && len(t.Cert) == 0:
			return kafka.Connection{}, missingKey(name, SecretKeyCert, "a private key ("+SecretKeyKey+") needs its client certificate")
		}
		conn.TLS = t
	}

	if spec.SASL != nil {
		name := spec.SASL.SecretRef.Name
		data, err := readSecret(get, name, "spec.kafka.sasl.secretRef")
		if err != nil {
			return kafka.Connection{}, err
		}
		for _, key := range []string{SecretKeyUsername, SecretKeyPassword} {
			if len(data[key]) == 0 {
				return kafka.Connection{}, missingKey(name, key, "SASL "+string(spec.SASL.Mechanism)+" needs "+SecretKeyUsername+" and "+SecretKeyPassword)
			}
		}
		conn.SASL = &kafka.SASL{
			Mechanism: string(spec.SASL.Mechanism),
			Username:  string(data[SecretKeyUsername]),
			Password:  string(data[SecretKeyPassword]),
		}
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

func readSecret(get secretGetter, name, field string) (map[string][]byte, error) {
	data, err := get(name)
	switch {
	case errors.Is(err, errSecretNotFound):
		return nil, &SpecProblem{
			Reason:  ReasonSecretNotFound,
			Message: fmt.Sprintf("Secret %q named by %s does not exist in the policy's namespace", name, field),
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
