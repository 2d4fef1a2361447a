package resolve

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// settlePolicy is seed 003's batch consumer (ledger-settle-consumer on
// settle-task), which resumes from its business cursor in the database
// after its committed offsets expired: the policy names the brokers inline
// and the cursor's connection string by a Secret key.
func settlePolicy(servers ...string) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "settle", Name: "ledger-settle"},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"},
			Kafka: rgv1.PolicyKafka{BootstrapServers: servers},
			Cursor: &rgv1.CursorSpec{SQL: rgv1.CursorSQL{Driver: rgv1.CursorDriverPostgres,
				SecretRef: rgv1.SecretKeyReference{Name: "cursor-db", Key: "dsn"}}},
		},
	}
}

func cursorSecret(dsn string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "settle", Name: "cursor-db", ResourceVersion: "1"},
		Data: map[string][]byte{"dsn": []byte(dsn)}}
}

// testResolver resolves against a fake API server holding objs; gets
// records the name of every object read, and secretErr (when set) fails
// every Secret read.
func testResolver(t *testing.T, secretErr error, gets *[]string, objs ...client.Object) *ConnectionResolver {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			*gets = append(*gets, key.Name)
			if secretErr != nil {
				return secretErr
			}
			return cl.Get(ctx, key, o, opts...)
		}}).Build()
	allow, err := NewBootstrapAllowlist([]string{"*.kafka.svc:9092"})
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := NewCursorHostAllowlist([]string{"db.settle.svc:5432"})
	if err != nil {
		t.Fatal(err)
	}
	reader := cursor.NewReader()
	t.Cleanup(reader.Close)
	return &ConnectionResolver{Metadata: c, Secrets: c, Allowlist: allow, Cursors: reader, CursorHosts: hosts}
}

// TestResolvePolicy pins the one entry point the reconciler and the live
// check walk a policy through (seed 003): the connection first, then the
// business cursor; a cursor a person must fix is a problem beside a
// usable connection, with a cursor that reports it; a connection a person
// must fix stops before the cursor's Secret is read.
func TestResolvePolicy(t *testing.T) {
	const servers = "b-0.kafka.svc:9092"
	allowedDSN := "postgres://guard:s3cret@db.settle.svc:5432/settlement"

	t.Run("connection and cursor", func(t *testing.T) {
		g := NewWithT(t)
		var gets []string
		r := testResolver(t, nil, &gets, cursorSecret(allowedDSN))
		res, err := r.Resolve(context.Background(), settlePolicy(servers))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Connection.BootstrapServers).To(Equal([]string{servers}))
		g.Expect(res.CursorProblem).To(BeNil())
		q, ok := res.Cursor.(cursor.Query)
		g.Expect(ok).To(BeTrue(), "the cursor reads the database, got %T", res.Cursor)
		g.Expect(q.Group).To(Equal("ledger-settle-consumer"))
		g.Expect(q.Source.Hosts()).To(Equal([]string{"db.settle.svc:5432"}))
	})

	t.Run("no spec.cursor: no cursor, no problem", func(t *testing.T) {
		g := NewWithT(t)
		var gets []string
		p := settlePolicy(servers)
		p.Spec.Cursor = nil
		res, err := testResolver(t, nil, &gets).Resolve(context.Background(), p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Connection.BootstrapServers).To(Equal([]string{servers}))
		g.Expect(res.Cursor).To(BeNil())
		g.Expect(res.CursorProblem).To(BeNil())
		g.Expect(gets).To(BeEmpty(), "a plaintext connection without a cursor reads no Secret")
	})

	for _, tc := range []struct {
		name    string
		secrets []client.Object
		reason  string
		says    string
	}{
		{name: "cursor Secret missing", reason: ReasonSecretNotFound, says: `Secret "cursor-db" named by spec.cursor.sql.secretRef does not exist`},
		{name: "cursor key empty", secrets: []client.Object{cursorSecret(" ")}, reason: ReasonSecretKeyMissing, says: `key "dsn"`},
		{name: "cursor host not allowed", secrets: []client.Object{cursorSecret("postgres://guard:s3cret@10.0.0.7:5432/settlement")},
			reason: ReasonDatabaseHostNotAllowed, says: "10.0.0.7:5432"},
	} {
		t.Run(tc.name+": a cursor problem beside the connection", func(t *testing.T) {
			g := NewWithT(t)
			var gets []string
			res, err := testResolver(t, nil, &gets, tc.secrets...).Resolve(context.Background(), settlePolicy(servers))
			g.Expect(err).NotTo(HaveOccurred(), "a cursor problem is not the connection's")
			g.Expect(res.Connection.BootstrapServers).To(Equal([]string{servers}), "Kafka is observed all the same")
			g.Expect(res.CursorProblem).NotTo(BeNil())
			g.Expect(res.CursorProblem.Reason).To(Equal(tc.reason))
			g.Expect(res.CursorProblem.Message).To(ContainSubstring(tc.says))
			g.Expect(res.CursorProblem.Message).NotTo(ContainSubstring("s3cret"))
			g.Expect(res.Cursor).NotTo(BeNil())
			g.Expect(res.Cursor.ReadCursor(context.Background()).Problem).To(Equal(res.CursorProblem.Message),
				"the cursor reports the problem, so the proof shows it")
		})
	}

	t.Run("connection not allowed: no Secret is read, the cursor is not resolved", func(t *testing.T) {
		g := NewWithT(t)
		var gets []string
		res, err := testResolver(t, nil, &gets, cursorSecret(allowedDSN)).Resolve(context.Background(), settlePolicy("evil:9092"))
		var problem *SpecProblem
		g.Expect(errors.As(err, &problem)).To(BeTrue(), "want a SpecProblem, got %v", err)
		g.Expect(problem.Reason).To(Equal(proof.ReasonBootstrapServerNotAllowed))
		g.Expect(res).To(Equal(Resolved{}))
		g.Expect(gets).To(BeEmpty())
	})

	t.Run("reading the cursor Secret fails: transient, not a problem", func(t *testing.T) {
		g := NewWithT(t)
		var gets []string
		boom := errors.New("etcd is having a day")
		res, err := testResolver(t, boom, &gets, cursorSecret(allowedDSN)).Resolve(context.Background(), settlePolicy(servers))
		g.Expect(err).To(MatchError(boom))
		var problem *SpecProblem
		g.Expect(errors.As(err, &problem)).To(BeFalse())
		g.Expect(res).To(Equal(Resolved{}))
		g.Expect(gets).To(Equal([]string{"cursor-db"}))
	})
}
