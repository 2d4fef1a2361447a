package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(ctx(t), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// loadSample reads config/samples' policy as an unstructured object.
func loadSample(t *testing.T) *unstructured.Unstructured {
	return loadSampleFile(t, "retentionguard_v1alpha1_consumerretentionpolicy.yaml")
}

func loadSampleFile(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "config", "samples", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&u.Object); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return u
}

// The seed 003 settlement consumer's policy from config/samples is valid as
// written; defaults fill what it leaves out.
func TestSampleIsAcceptedAndDefaulted(t *testing.T) {
	u := loadSample(t)
	namespace(t, u.GetNamespace())
	if err := env.Client.Create(ctx(t), u); err != nil {
		t.Fatalf("the sample policy was refused: %v", err)
	}

	// A minimal policy gets enforcement Deny and checkInterval 1m.
	ns := namespace(t, "defaults")
	minimal := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        "fanout",
			Topics:         []string{"outbox"},
			RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "fanout"}},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{"kafka:9092"}},
		},
	}
	if err := env.Client.Create(ctx(t), minimal); err != nil {
		t.Fatalf("minimal policy refused: %v", err)
	}
	got := &rgv1.ConsumerRetentionPolicy{}
	if err := env.Client.Get(ctx(t), client.ObjectKeyFromObject(minimal), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Enforcement != rgv1.DefaultEnforcement {
		t.Errorf("enforcement defaulted to %q, want Deny", got.Spec.Enforcement)
	}
	if got.Spec.CheckInterval == nil || got.Spec.CheckInterval.Duration != rgv1.DefaultCheckInterval {
		t.Errorf("checkInterval defaulted to %v, want 1m", got.Spec.CheckInterval)
	}
}

// cursorSpec is a spec.cursor as unstructured data.
func cursorSpec(driver, query string) map[string]any {
	sql := map[string]any{"driver": driver, "secretRef": map[string]any{"name": "settle-db", "key": "dsn"}}
	if query != "" {
		sql["query"] = query
	}
	return map[string]any{"sql": sql}
}

// The sample with seed 003's business cursor is valid as written.
func TestCursorSampleIsAccepted(t *testing.T) {
	u := loadSampleFile(t, "retentionguard_v1alpha1_consumerretentionpolicy_cursor.yaml")
	u.SetNamespace(namespace(t, "cursor-sample"))
	if err := env.Client.Create(ctx(t), u); err != nil {
		t.Fatalf("the cursor sample was refused: %v", err)
	}
}

// A business cursor with the default query is valid and resumes from the
// group's offsets by default; a query with a topic column covers several
// topics.
func TestCursorSpecAcceptedAndDefaulted(t *testing.T) {
	ns := namespace(t, "cursor")
	for name, edit := range map[string]func(map[string]any){
		"default-query": func(s map[string]any) { s["cursor"] = cursorSpec("postgres", "") },
		"two-topics": func(s map[string]any) {
			s["topics"] = []any{"settle-task", "refund-task"}
			s["cursor"] = cursorSpec("mysql", "SELECT topic, partition_id AS `partition`, last_offset + 1 AS next_offset FROM cursors WHERE group_id = ?")
		},
	} {
		spec := validSpec()
		edit(spec)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": rgv1.GroupVersion.String(), "kind": "ConsumerRetentionPolicy",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
		}}
		if err := env.Client.Create(ctx(t), u); err != nil {
			t.Fatalf("%s: refused: %v", name, err)
		}
		got := &rgv1.ConsumerRetentionPolicy{}
		if err := env.Client.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Cursor == nil || got.Spec.Cursor.ResumeFrom != rgv1.ResumeFromGroupOffsets {
			t.Errorf("%s: cursor %+v, want resumeFrom defaulted to GroupOffsets", name, got.Spec.Cursor)
		}
	}
}

// validSpec is a policy spec as unstructured data, to be broken one field at
// a time (typed structs cannot omit required fields).
func validSpec() map[string]any {
	return map[string]any{
		"groupID":        "ledger-settle-consumer",
		"topics":         []any{"settle-task"},
		"recoveryWindow": "240h",
		"selector":       map[string]any{"matchLabels": map[string]any{"app": "settle"}},
		"kafka": map[string]any{
			"bootstrapServers": []any{"kafka-0.kafka:9092"},
		},
	}
}

func TestInvalidSpecsAreRejectedNamingTheField(t *testing.T) {
	ns := namespace(t, "invalid")
	cases := []struct {
		name  string
		edit  func(spec map[string]any)
		field string // the field path the API server's message must name
		also  string // and a phrase saying what to do
	}{
		{"zero recovery window", func(s map[string]any) { s["recoveryWindow"] = "0s" }, "spec.recoveryWindow", "positive duration"},
		{"negative recovery window", func(s map[string]any) { s["recoveryWindow"] = "-240h" }, "spec.recoveryWindow", ""},
		{"recovery window in days", func(s map[string]any) { s["recoveryWindow"] = "10d" }, "spec.recoveryWindow", ""},
		{"missing recovery window", func(s map[string]any) { delete(s, "recoveryWindow") }, "spec.recoveryWindow", "Required"},
		{"5s check interval", func(s map[string]any) { s["checkInterval"] = "5s" }, "spec.checkInterval", "at least 10s"},
		{"empty bootstrap list", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrapServers": []any{}}
		}, "spec.kafka.bootstrapServers", ""},
		{"bootstrap server without port", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrapServers": []any{"kafka-0.kafka"}}
		}, "spec.kafka.bootstrapServers", "host:port"},
		{"empty bootstrap server", func(s map[string]any) {
			s["kafka"] = map[string]any{"bootstrapServers": []any{""}}
		}, "spec.kafka.bootstrapServers", "host:port"},
		{"bad SASL mechanism", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "GSSAPI", "secretRef": map[string]any{"name": "u"}}
		}, "spec.kafka.sasl.mechanism", "SCRAM-SHA-512"},
		{"SASL without secretRef", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "SCRAM-SHA-512"}
		}, "spec.kafka.sasl", "need a secretRef"},
		{"both connectionRef and bootstrapServers", func(s map[string]any) {
			s["kafka"].(map[string]any)["connectionRef"] = map[string]any{"kind": "ClusterKafkaConnection", "name": "prod"}
		}, "spec.kafka", "exactly one of connectionRef"},
		{"neither connectionRef nor bootstrapServers", func(s map[string]any) {
			s["kafka"] = map[string]any{"readOffsetsTopic": true}
		}, "spec.kafka", "exactly one of connectionRef"},
		{"connectionRef with its own sasl", func(s map[string]any) {
			s["kafka"] = map[string]any{"connectionRef": map[string]any{"kind": "KafkaConnection", "name": "prod"},
				"sasl": map[string]any{"mechanism": "PLAIN", "secretRef": map[string]any{"name": "u"}}}
		}, "spec.kafka", "belong to the connection"},
		{"connectionRef of an unknown kind", func(s map[string]any) {
			s["kafka"] = map[string]any{"connectionRef": map[string]any{"kind": "Secret", "name": "prod"}}
		}, "spec.kafka.connectionRef.kind", "ClusterKafkaConnection"},
		{"a policy using the manager's token file", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "OAUTHBEARER",
				"oauthBearer": map[string]any{"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}}
		}, "spec.kafka", "only a ClusterKafkaConnection"},
		{"a policy using the manager's AWS identity", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "AWS_MSK_IAM"}
		}, "spec.kafka", "only a ClusterKafkaConnection"},
		{"OAUTHBEARER without oauthBearer", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "OAUTHBEARER", "secretRef": map[string]any{"name": "u"}}
		}, "spec.kafka.sasl", "oauthBearer is required"},
		{"token endpoint without a Secret", func(s map[string]any) {
			s["kafka"].(map[string]any)["sasl"] = map[string]any{"mechanism": "OAUTHBEARER",
				"oauthBearer": map[string]any{"tokenEndpoint": "https://idp.example.com/token"}}
		}, "spec.kafka.sasl", "clientID and clientSecret"},
		{"duplicate topic", func(s map[string]any) { s["topics"] = []any{"settle-task", "settle-task"} }, "spec.topics[1]", "Duplicate"},
		{"no topics", func(s map[string]any) { s["topics"] = []any{} }, "spec.topics", ""},
		{"invalid topic name", func(s map[string]any) { s["topics"] = []any{"settle task"} }, "spec.topics[0]", ""},
		{"missing selector", func(s map[string]any) { delete(s, "selector") }, "spec.selector", "Required"},
		{"empty selector", func(s map[string]any) { s["selector"] = map[string]any{} }, "spec.selector", "matchLabels"},
		// A selector that does not parse matches no workload: the policy
		// would read Ready while the webhook guards nothing.
		{"selector operator in lower case", func(s map[string]any) {
			s["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "in", "values": []any{"settle"}}}}
		}, "spec.selector", "operator must be In, NotIn, Exists or DoesNotExist"},
		{"selector In without values", func(s map[string]any) {
			s["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In"}}}
		}, "spec.selector", "In and NotIn need at least one value"},
		{"selector Exists with values", func(s map[string]any) {
			s["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "Exists", "values": []any{"settle"}}}}
		}, "spec.selector", "Exists and DoesNotExist take none"},
		{"missing group", func(s map[string]any) { delete(s, "groupID") }, "spec.groupID", "Required"},
		{"unknown enforcement", func(s map[string]any) { s["enforcement"] = "Block" }, "spec.enforcement", "Deny"},
		{"consumer without offsetResetEnv", func(s map[string]any) { s["consumer"] = map[string]any{"container": "app"} }, "spec.consumer.offsetResetEnv", "Required"},
		{"cursor with an unknown driver", func(s map[string]any) { s["cursor"] = cursorSpec("oracle", "") }, "spec.cursor.sql.driver", "postgres"},
		{"cursor with an unknown resumeFrom", func(s map[string]any) {
			c := cursorSpec("postgres", "")
			c["resumeFrom"] = "Earliest"
			s["cursor"] = c
		}, "spec.cursor.resumeFrom", "GroupOffsets"},
		{"cursor without secretRef key", func(s map[string]any) {
			s["cursor"] = map[string]any{"sql": map[string]any{"driver": "postgres", "secretRef": map[string]any{"name": "settle-db"}}}
		}, "spec.cursor.sql.secretRef.key", "Required"},
		{"postgres cursor query without $1", func(s map[string]any) {
			s["cursor"] = cursorSpec("postgres", "SELECT partition_id AS partition, last_offset + 1 AS next_offset FROM consumer_cursor WHERE group_id = ?")
		}, "spec.cursor.sql", "$1 for postgres, ? for mysql"},
		{"mysql cursor query without ?", func(s map[string]any) {
			s["cursor"] = cursorSpec("mysql", "SELECT partition_id AS `partition`, last_offset + 1 AS next_offset FROM consumer_cursor WHERE group_id = $1")
		}, "spec.cursor.sql", "$1 for postgres, ? for mysql"},
		{"cursor query that is not a SELECT", func(s map[string]any) {
			s["cursor"] = cursorSpec("postgres", "DELETE FROM consumer_cursor WHERE group_id = $1")
		}, "spec.cursor.sql", "must be a SELECT"},
		{"cursor on several topics without a query", func(s map[string]any) {
			s["topics"] = []any{"settle-task", "refund-task"}
			s["cursor"] = cursorSpec("postgres", "")
		}, "spec", "required with several topics"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec()
			tc.edit(spec)
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": rgv1.GroupVersion.String(),
				"kind":       "ConsumerRetentionPolicy",
				"metadata":   map[string]any{"name": fmt.Sprintf("invalid-%d", i), "namespace": ns},
				"spec":       spec,
			}}
			err := env.Client.Create(ctx(t), u)
			if err == nil {
				t.Fatalf("the API server accepted an invalid policy (%s)", tc.name)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message does not name %s:\n%v", tc.field, err)
			}
			if tc.also != "" && !strings.Contains(err.Error(), tc.also) {
				t.Errorf("message does not say %q:\n%v", tc.also, err)
			}
		})
	}
	// The valid spec itself passes: the cases above fail for their edit alone.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rgv1.GroupVersion.String(), "kind": "ConsumerRetentionPolicy",
		"metadata": map[string]any{"name": "valid", "namespace": ns}, "spec": validSpec(),
	}}
	if err := env.Client.Create(ctx(t), u); err != nil {
		t.Fatalf("the unedited spec was refused: %v", err)
	}
}

// The status subresource is separate from spec: a status write does not
// change spec, and the proof is stored as written.
func TestStatusSubresourceStoresProof(t *testing.T) {
	ns := namespace(t, "status")
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID: "g", Topics: []string{"t"}, RecoveryWindow: metav1.Duration{Duration: time.Hour},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			Kafka:    rgv1.PolicyKafka{BootstrapServers: []string{"[::1]:9092"}},
		},
	}
	if err := env.Client.Create(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	part := int32(3)
	p.Status.ObservedGeneration = p.Generation
	p.Status.Proof = &rgv1.ProofStatus{
		Verdict: rgv1.VerdictViolated, ProofID: "7f3a9c21", CheckedAt: metav1.Now(),
		ExpiredRecords:   4200,
		PartitionSummary: rgv1.PartitionSummary{Total: 24, InRange: 23, Expired: 1},
		Violations:       []rgv1.ViolationStatus{{Reason: "CommittedOffsetExpired", Topic: "t", Partition: &part, Message: "m"}},
	}
	if err := env.Client.Status().Update(ctx(t), p); err != nil {
		t.Fatalf("status update refused: %v", err)
	}
	got := &rgv1.ConsumerRetentionPolicy{}
	if err := env.Client.Get(ctx(t), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Proof == nil || got.Status.Proof.ExpiredRecords != 4200 || *got.Status.Proof.Violations[0].Partition != 3 {
		t.Fatalf("proof not stored as written: %+v", got.Status.Proof)
	}
}

// kubectl explain, against the real API server, prints the field docs
// written for its readers.
func TestKubectlExplainShowsFieldDocs(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	// The API server publishes new CRDs' OpenAPI asynchronously.
	var out []byte
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err = exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", "consumerretentionpolicy.spec.recoveryWindow").CombinedOutput()
		if err == nil && strings.Contains(string(out), "longest downtime") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	for _, want := range []string{"recoveryWindow", "longest downtime", "retention.ms", "offsets.retention.minutes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("kubectl explain consumerretentionpolicy.spec.recoveryWindow:\n%s", out)
}

var _ runtime.Object = &rgv1.ConsumerRetentionPolicy{}

// A ClusterKafkaConnection and a KafkaConnection are validated by the API
// server as the contract says, and the platform team's two-line Strimzi
// connection is accepted.
func TestConnectionValidation(t *testing.T) {
	ns := namespace(t, "connections")
	create := func(kind, name string, spec map[string]any) error {
		meta := map[string]any{"name": name}
		if kind == "KafkaConnection" {
			meta["namespace"] = ns
		}
		return env.Client.Create(ctx(t), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": rgv1.GroupVersion.String(), "kind": kind, "metadata": meta, "spec": spec,
		}})
	}
	valid := []struct {
		kind, name string
		spec       map[string]any
	}{
		{"ClusterKafkaConnection", "strimzi", map[string]any{
			"strimzi": map[string]any{"kafkaRef": map[string]any{"namespace": "kafka", "name": "prod"}, "listener": "tls"}}},
		{"ClusterKafkaConnection", "msk", map[string]any{
			"bootstrapServers": []any{"b-1.prod.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"},
			"tls":              map[string]any{"secretRef": map[string]any{"name": "msk-ca"}},
			"sasl":             map[string]any{"mechanism": "AWS_MSK_IAM"},
			"allowedNamespaces": map[string]any{"from": "Selector",
				"selector": map[string]any{"matchLabels": map[string]any{"kafka": "prod"}}},
			"discovery": map[string]any{"enabled": true, "recoveryWindow": "168h"}}},
		{"ClusterKafkaConnection", "confluent", map[string]any{
			"bootstrapServers": []any{"pkc-12345.eu-west-1.aws.confluent.cloud:9092"},
			"sasl": map[string]any{"mechanism": "OAUTHBEARER", "secretRef": map[string]any{"name": "confluent-client"},
				"oauthBearer": map[string]any{"tokenEndpoint": "https://idp.example.com/oauth2/token",
					"extensions": map[string]any{"logicalCluster": "lkc-abc123", "identityPoolId": "pool-x1"}}},
			"allowedNamespaces": map[string]any{"from": "All"}}},
		{"KafkaConnection", "team", map[string]any{"bootstrapServers": []any{"kafka:9092"}}},
	}
	for _, v := range valid {
		if err := create(v.kind, v.name, v.spec); err != nil {
			t.Errorf("%s %s was refused: %v", v.kind, v.name, err)
		}
	}
	// The sample in config/samples is valid as written.
	path := filepath.Join(testenv.RepoRoot(), "config", "samples", "retentionguard_v1alpha1_clusterkafkaconnection.yaml")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sample := &unstructured.Unstructured{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&sample.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx(t), sample); err != nil {
		t.Errorf("the ClusterKafkaConnection sample was refused: %v", err)
	}

	ckc := &rgv1.ClusterKafkaConnection{}
	if err := env.Client.Get(ctx(t), client.ObjectKey{Name: "strimzi"}, ckc); err != nil {
		t.Fatal(err)
	}
	if ckc.Spec.AllowedNamespaces.From != rgv1.NamespacesFromSame || ckc.Spec.CheckInterval == nil || ckc.Spec.CheckInterval.Duration != time.Minute {
		t.Errorf("defaults: allowedNamespaces %+v, checkInterval %v; want Same and 1m", ckc.Spec.AllowedNamespaces, ckc.Spec.CheckInterval)
	}

	invalid := []struct {
		kind, name string
		spec       map[string]any
		want       string
	}{
		{"ClusterKafkaConnection", "both", map[string]any{"bootstrapServers": []any{"k:9092"},
			"strimzi": map[string]any{"kafkaRef": map[string]any{"namespace": "kafka", "name": "prod"}, "listener": "tls"}},
			"exactly one of bootstrapServers and strimzi"},
		{"ClusterKafkaConnection", "neither", map[string]any{}, "exactly one of bootstrapServers and strimzi"},
		{"ClusterKafkaConnection", "strimzi-no-ns", map[string]any{
			"strimzi": map[string]any{"kafkaRef": map[string]any{"name": "prod"}, "listener": "tls"}}, "kafkaRef.namespace is required"},
		{"ClusterKafkaConnection", "selector-missing", map[string]any{"bootstrapServers": []any{"k:9092"},
			"allowedNamespaces": map[string]any{"from": "Selector"}}, "selector is required"},
		{"ClusterKafkaConnection", "discovery-no-window", map[string]any{"bootstrapServers": []any{"k:9092"},
			"discovery": map[string]any{"enabled": true}}, "recoveryWindow is required"},
		{"ClusterKafkaConnection", "token-both", map[string]any{"bootstrapServers": []any{"k:9092"},
			"sasl": map[string]any{"mechanism": "OAUTHBEARER", "secretRef": map[string]any{"name": "c"},
				"oauthBearer": map[string]any{"tokenEndpoint": "https://idp/t", "tokenFile": "/t"}}},
			"exactly one of tokenEndpoint and tokenFile"},
		{"KafkaConnection", "team-token-file", map[string]any{"bootstrapServers": []any{"k:9092"},
			"sasl": map[string]any{"mechanism": "OAUTHBEARER", "oauthBearer": map[string]any{"tokenFile": "/t"}}},
			"only a ClusterKafkaConnection"},
		{"KafkaConnection", "team-aws-chain", map[string]any{"bootstrapServers": []any{"k:9092"},
			"sasl": map[string]any{"mechanism": "AWS_MSK_IAM"}}, "only a ClusterKafkaConnection"},
	}
	for _, tc := range invalid {
		err := create(tc.kind, tc.name, tc.spec)
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: want Invalid saying %q, got %v", tc.kind, tc.name, tc.want, err)
		}
	}
}

// Selectors Kubernetes parses are accepted: every operator, prefixed keys,
// empty values, several expressions.
func TestValidSelectorsAreAccepted(t *testing.T) {
	ns := namespace(t, "selectors")
	for i, sel := range []map[string]any{
		{"matchLabels": map[string]any{"app.kubernetes.io/name": "settle", "tier": ""}},
		{"matchExpressions": []any{
			map[string]any{"key": "app", "operator": "In", "values": []any{"settle", "settle-v2"}},
			map[string]any{"key": "example.com/track", "operator": "NotIn", "values": []any{"canary"}},
			map[string]any{"key": "consumer", "operator": "Exists"},
			map[string]any{"key": "paused", "operator": "DoesNotExist", "values": []any{}},
		}},
		{"matchLabels": map[string]any{"app": strings.Repeat("s", 63)}},
	} {
		spec := validSpec()
		spec["selector"] = sel
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": rgv1.GroupVersion.String(), "kind": "ConsumerRetentionPolicy",
			"metadata": map[string]any{"name": fmt.Sprintf("selector-%d", i), "namespace": ns}, "spec": spec,
		}}
		if err := env.Client.Create(ctx(t), u); err != nil {
			t.Errorf("selector %v refused: %v", sel, err)
		}
		parsed := metav1.LabelSelector{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &parsed); err != nil {
			t.Fatal(err)
		}
		if _, err := metav1.LabelSelectorAsSelector(&parsed); err != nil {
			t.Errorf("selector %v: accepted by the CRD, but Kubernetes cannot parse it: %v", sel, err)
		}
	}
}
