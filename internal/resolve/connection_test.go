package resolve

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

func TestBootstrapAllowlist(t *testing.T) {
	g := NewWithT(t)
	a, err := NewBootstrapAllowlist([]string{"*.kafka.svc:9093, kafka-?.prod:9092", "KAFKA.example.com:9092"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Patterns()).To(Equal([]string{"*.kafka.svc:9093", "kafka-?.prod:9092", "kafka.example.com:9092"}))

	for server, allowed := range map[string]bool{
		"b-0.kafka.svc:9093":     true,
		"B-0.Kafka.SVC:9093":     true,  // host names are case-insensitive
		"b-0.kafka.svc:9092":     false, // the port is part of the match
		"kafka.svc:9093":         false, // "*." needs a label before the domain
		"kafka-1.prod:9092":      true,
		"kafka-12.prod:9092":     false, // ? is one character
		"kafka.example.com:9092": true,
		"evil.example.com:9092":  false,
	} {
		g.Expect(a.Allows(server)).To(Equal(allowed), server)
	}

	// Secure by default: with nothing allowed (the chart's default), a
	// policy cannot make the manager dial any host and port.
	empty, err := NewBootstrapAllowlist(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty.Allows("anything:1")).To(BeFalse(), "an empty allowlist allows no server")
	g.Expect(empty.Allows("kafka-0.kafka.svc:9092")).To(BeFalse(), "an empty allowlist allows no server")
	prob := empty.check([]string{"10.0.0.7:22"})
	g.Expect(prob).NotTo(BeNil())
	g.Expect(prob.Reason).To(Equal(proof.ReasonBootstrapServerNotAllowed))
	g.Expect(prob.Message).To(And(ContainSubstring("10.0.0.7:22"), ContainSubstring("--allowed-bootstrap-servers is empty"),
		ContainSubstring("allowedBootstrapServers"), ContainSubstring("ClusterKafkaConnection")), "the message says how to allow more")
	g.Expect(a.check([]string{"evil.example.com:9092"}).Message).To(ContainSubstring("allows only --allowed-bootstrap-servers *.kafka.svc:9093,kafka-?.prod:9092,kafka.example.com:9092"))

	all, err := NewBootstrapAllowlist([]string{"*"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(all.Allows("anything:1")).To(BeTrue(), `"*" allows every host:port`)

	hosts, err := NewCursorHostAllowlist(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hosts.Allows("db:5432")).To(BeFalse(), "an empty cursor host allowlist allows no host")
	g.Expect(hosts.notAllowed("the cursor database host", []string{"db:5432"})).To(And(
		ContainSubstring("--allowed-cursor-hosts is empty"), ContainSubstring("allowedCursorHosts")))

	_, err = NewBootstrapAllowlist([]string{"kafka-[.prod:9092"})
	g.Expect(err).To(MatchError(ContainSubstring("kafka-[.prod:9092")))
}

func policyWith(k rgv1.PolicyKafka) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       rgv1.ConsumerRetentionPolicySpec{GroupID: "g", Topics: []string{"t"}, Kafka: k},
	}
}

func secrets(m map[string]map[string][]byte) secretGetter {
	return func(name string) (map[string][]byte, error) {
		if d, ok := m[name]; ok {
			return d, nil
		}
		return nil, errSecretNotFound
	}
}

func TestResolveConnection(t *testing.T) {
	ca := kafkatest.NewCA(t, "test-ca")
	cert, key := ca.Issue(t, "client")
	allowAll, _ := NewBootstrapAllowlist([]string{"*"})
	onlySvc, _ := NewBootstrapAllowlist([]string{"*.kafka.svc:9093"})
	servers := []string{"b-0.kafka.svc:9093"}
	sasl := &rgv1.KafkaSASL{Mechanism: rgv1.SASLScramSHA512, SecretRef: &rgv1.SecretReference{Name: "user"}}
	tlsRef := &rgv1.KafkaTLS{SecretRef: rgv1.SecretReference{Name: "tls"}, ServerName: "kafka"}

	cases := []struct {
		name    string
		kafka   rgv1.PolicyKafka
		allow   BootstrapAllowlist
		secrets map[string]map[string][]byte
		reason  string // the SpecProblem's reason, "" for success
		check   func(g Gomega, c rgv1.PolicyKafka, err error)
	}{
		{name: "plaintext", kafka: rgv1.PolicyKafka{BootstrapServers: servers}, allow: allowAll},
		{
			name: "SASL and mutual TLS", allow: onlySvc,
			kafka: rgv1.PolicyKafka{BootstrapServers: servers, SASL: sasl, TLS: tlsRef},
			secrets: map[string]map[string][]byte{
				"user": {"username": []byte("svc"), "password": []byte("s3cret")},
				"tls":  {"ca.crt": ca.PEM, "tls.crt": cert, "tls.key": key},
			},
		},
		{
			name: "TLS with only a CA", allow: allowAll,
			kafka:   rgv1.PolicyKafka{BootstrapServers: servers, TLS: tlsRef},
			secrets: map[string]map[string][]byte{"tls": {"ca.crt": ca.PEM}},
		},
		{
			name: "server outside the allowlist: refused before any Secret is read", allow: onlySvc,
			kafka:  rgv1.PolicyKafka{BootstrapServers: []string{"b-0.kafka.svc:9093", "evil:9092"}, SASL: sasl},
			reason: proof.ReasonBootstrapServerNotAllowed,
		},
		{
			name: "SASL Secret missing", allow: allowAll,
			kafka:  rgv1.PolicyKafka{BootstrapServers: servers, SASL: sasl},
			reason: ReasonSecretNotFound,
		},
		{
			name: "SASL Secret without password", allow: allowAll,
			kafka:   rgv1.PolicyKafka{BootstrapServers: servers, SASL: sasl},
			secrets: map[string]map[string][]byte{"user": {"username": []byte("svc")}},
			reason:  ReasonSecretKeyMissing,
		},
		{
			name: "client certificate without its key", allow: allowAll,
			kafka:   rgv1.PolicyKafka{BootstrapServers: servers, TLS: tlsRef},
			secrets: map[string]map[string][]byte{"tls": {"tls.crt": cert}},
			reason:  ReasonSecretKeyMissing,
		},
		{
			name: "CA that is not PEM", allow: allowAll,
			kafka:   rgv1.PolicyKafka{BootstrapServers: servers, TLS: tlsRef},
			secrets: map[string]map[string][]byte{"tls": {"ca.crt": []byte("not a certificate")}},
			reason:  ReasonInvalidConnection,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			conn, err := resolveConnection(policyWith(tc.kafka), tc.allow, secrets(tc.secrets))
			if tc.reason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(conn.BootstrapServers).To(Equal(tc.kafka.BootstrapServers))
				g.Expect(conn.SASL != nil).To(Equal(tc.kafka.SASL != nil))
				g.Expect(conn.TLS != nil).To(Equal(tc.kafka.TLS != nil))
				if conn.SASL != nil {
					g.Expect(conn.SASL.Mechanism).To(Equal("SCRAM-SHA-512"))
					g.Expect(conn.SASL.Password).To(Equal("s3cret"))
				}
				if conn.TLS != nil {
					g.Expect(conn.TLS.ServerName).To(Equal("kafka"))
				}
				return
			}
			var problem *SpecProblem
			g.Expect(errors.As(err, &problem)).To(BeTrue(), "want a SpecProblem, got %v", err)
			g.Expect(problem.Reason).To(Equal(tc.reason))
			g.Expect(problem.Message).NotTo(BeEmpty())
			g.Expect(problem.Message).NotTo(ContainSubstring("s3cret"))
		})
	}

	t.Run("a transient read error is not a spec problem", func(t *testing.T) {
		g := NewWithT(t)
		boom := errors.New("etcd is having a day")
		_, err := resolveConnection(policyWith(rgv1.PolicyKafka{BootstrapServers: servers, SASL: sasl}), allowAll,
			func(string) (map[string][]byte, error) { return nil, boom })
		g.Expect(err).To(MatchError(boom))
		var problem *SpecProblem
		g.Expect(errors.As(err, &problem)).To(BeFalse())
	})
}
