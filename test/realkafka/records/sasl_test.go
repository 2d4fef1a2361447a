package records

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Distinctive passwords: a leak into a message is a plain substring.
const (
	saslAdminPassword = "Adm1n-real-kafka-never-logged"
	saslUserPassword  = "Us3r-real-kafka-never-logged"
)

// Principals, each lacking one permission of what the observer needs.
var saslUsers = []string{"reader", "no-topic-configs", "no-broker-configs", "no-group", "some-groups"}

// saslBroker is one node with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-512 and
// OAUTHBEARER with Kafka's unsecured validator) and the StandardAuthorizer,
// topics public and secret (2 partitions, 10 records each), groups billing
// (offsets on both) and visible-billing, and ACLs per principal.
func saslBroker(t *testing.T, d apachekafka.Dist) (*apachekafka.Broker, *kafkatest.Cluster) {
	users := map[string]string{}
	for _, u := range saslUsers {
		users[u] = saslUserPassword
	}
	b, c := sharedCluster(t, d, "sasl", apachekafka.WithSASL(apachekafka.SASL{
		AdminUser: "admin", AdminPassword: saslAdminPassword, Users: users, OAuthBearer: true,
	}))
	saslSetupMu.Lock()
	defer saslSetupMu.Unlock()
	switch saslSetUp[d.Version] {
	case setupFailed:
		t.Fatalf("setting the SASL broker of Apache Kafka %s up failed in another test", d.Version)
	case setupNotDone:
		saslSetUp[d.Version] = setupFailed // until it is done
		b.CreateSCRAMUsers(t)
		for _, topic := range []string{"public", "secret"} {
			createTopic(t, c, topic, 2, nil)
			c.Produce(t, topic, 20)
			c.Commit(t, "billing", topic, 0, 3)
			c.Commit(t, "billing", topic, 1, 4)
		}
		c.Commit(t, "visible-billing", "public", 0, 5)
		createACLs(t, c)
		saslSetUp[d.Version] = setupDone
	}
	return b, c
}

var (
	saslSetupMu sync.Mutex
	saslSetUp   = map[string]setupState{}
)

type setupState int

const (
	setupNotDone setupState = iota
	setupFailed
	setupDone
)

// createACLs grants each principal what the observer needs (Describe,
// DescribeConfigs and Read on topics, Describe on groups, DescribeConfigs
// on the cluster) but for the one permission its name says it lacks.
func createACLs(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	u := func(name string) string { return "User:" + name }
	all := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, u(n))
		}
		return out
	}
	builders := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(all(saslUsers...)...).Topics("*").Operations(kadm.OpDescribe, kadm.OpRead),
		kadm.NewACLs().Allow(all("reader", "no-broker-configs", "no-group", "some-groups")...).Topics("*").Operations(kadm.OpDescribeConfigs),
		kadm.NewACLs().Allow(u("no-topic-configs")).Topics("public").Operations(kadm.OpDescribeConfigs),
		kadm.NewACLs().Allow(all("reader", "no-topic-configs", "no-broker-configs")...).Groups("*").Operations(kadm.OpDescribe),
		kadm.NewACLs().Allow(u("some-groups")).Groups("visible-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpDescribe),
		kadm.NewACLs().Allow(all("reader", "no-topic-configs", "no-group", "some-groups")...).Clusters().Operations(kadm.OpDescribeConfigs),
	}
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	for _, b := range builders {
		res, err := c.Admin(t).CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs %s %v: %v", r.Principal, r.Operation, r.Err)
			}
		}
	}
	// ACLs reach the broker's authorizer through the metadata log: wait
	// until the reader is let in.
	waitFor(t, 60*time.Second, "the ACLs apply", func() bool {
		o := kafka.NewObserver()
		defer o.Close()
		ctx, cancel := contextFor(30 * time.Second)
		defer cancel()
		obs := o.Observe(ctx, saslConnTo(c, "SCRAM-SHA-512", "reader"), []kafka.Target{billing})
		return len(obs[0].Failures) == 0
	})
}

func saslConnTo(c *kafkatest.Cluster, mechanism, user string) kafka.Connection {
	return kafka.Connection{BootstrapServers: c.Addrs, SASL: &kafka.SASL{Mechanism: mechanism, Username: user, Password: saslUserPassword}}
}

var billing = kafka.Target{Group: "billing", Topics: []string{"public", "secret"}}

func requireNoPassword(t *testing.T, obs proof.Observation) {
	t.Helper()
	for _, f := range obs.Failures {
		if strings.Contains(f.Message, saslUserPassword) || strings.Contains(f.Message, saslAdminPassword) {
			t.Errorf("a failure message leaks a password: %q", f.Message)
		}
	}
}

// PLAIN and SCRAM-SHA-512 against the StandardAuthorizer: a principal with
// every ACL the observer needs reads everything; one lacking an ACL gets
// the failure that names the ACL it lacks, and the rest is still read.
func TestSASLAndMissingACLsNamed(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := saslBroker(t, d)
		o := observer(t)
		for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
			obs := observe(t, o, saslConnTo(c, mech, "reader"), billing)
			requireNoFailures(t, obs)
			if p := partitionObs(t, obs, "secret", 1); p.Committed != 4 || p.LogEnd != 10 || p.CommittedTimestamp.IsZero() {
				t.Errorf("%s: secret/1 = %+v", mech, p)
			}
			if !is(obs.OffsetsRetentionMinutes, "10080") {
				t.Errorf("%s: offsets.retention.minutes %+v", mech, obs.OffsetsRetentionMinutes)
			}
		}

		bad := kafka.Connection{BootstrapServers: c.Addrs, SASL: &kafka.SASL{Mechanism: "SCRAM-SHA-512", Username: "reader", Password: "wrong-" + saslUserPassword}}
		obs := observe(t, o, bad, billing)
		requireFailure(t, obs, proof.ReasonAuthenticationFailed, "Metadata", "")
		requireNoPassword(t, obs)

		obs = observe(t, o, saslConnTo(c, "SCRAM-SHA-512", "no-topic-configs"), billing)
		f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeConfigs", "secret")
		if len(obs.Failures) != 1 || !strings.Contains(f.Message, "needs DescribeConfigs on the topic") {
			t.Errorf("no DescribeConfigs on topic secret: %s", describeFailures(obs.Failures))
		}
		if got := topicObs(t, obs, "public"); !is(got.RetentionMs, "604800000") {
			t.Errorf("public's configs lost: %+v", got.RetentionMs)
		}
		if res := proof.Evaluate(obs, proof.Policy{GroupID: "billing", Topics: billing.Topics, RecoveryWindow: time.Hour}, time.Now()); res.Verdict != proof.Unknown {
			t.Errorf("verdict %s with a topic's configs denied, want Unknown", res.Verdict)
		}

		obs = observe(t, o, saslConnTo(c, "SCRAM-SHA-512", "no-broker-configs"), billing)
		f = requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeConfigs", "")
		if !strings.Contains(f.Message, "needs DescribeConfigs on the cluster") || obs.OffsetsRetentionMinutes.Present {
			t.Errorf("no DescribeConfigs on the cluster: %s, offsets.retention.minutes %+v", describeFailures(obs.Failures), obs.OffsetsRetentionMinutes)
		}

		obs = observe(t, o, saslConnTo(c, "PLAIN", "no-group"), billing)
		f = requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "")
		if !strings.Contains(f.Message, "needs Describe on the group") || obs.Group.State != "" {
			t.Errorf("no Describe on the group: %s, state %q", describeFailures(obs.Failures), obs.Group.State)
		}
		requireNoPassword(t, obs)
	})
}

// ListGroups answers only the groups the principal may Describe: discovery
// as some-groups (Describe on groups prefixed visible-) finds only those;
// as reader, every group.
func TestDiscoveryFilteredByDescribeACL(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := saslBroker(t, d)
		o := observer(t)
		found := func(user string) []string {
			co := observeCluster(t, o, saslConnTo(c, "SCRAM-SHA-512", user), kafka.ClusterRequest{Discover: &kafka.Discovery{}})
			if len(co.DiscoveryFailures) > 0 {
				t.Fatalf("%s: discovery failures %s", user, describeFailures(co.DiscoveryFailures))
			}
			var out []string
			for _, dg := range co.Discovered {
				out = append(out, dg.Group)
			}
			return out
		}
		if got := found("some-groups"); len(got) != 1 || got[0] != "visible-billing" {
			t.Errorf("some-groups discovered %v, want only visible-billing", got)
		}
		if got := found("reader"); len(got) != 2 || got[0] != "billing" || got[1] != "visible-billing" {
			t.Errorf("reader discovered %v, want billing and visible-billing", got)
		}
	})
}

// unsecuredJWT is a token Kafka's unsecured OAUTHBEARER validator accepts:
// alg none, the principal in sub.
func unsecuredJWT(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none"}) + "." + enc(map[string]any{"sub": sub, "iat": time.Now().Unix() - 5, "exp": exp.Unix()}) + "."
}

// OAUTHBEARER against Apache Kafka's own server side (its unsecured
// validator: the token's sub is the principal): the product sends the
// token file's token, the broker authorizes the principal by its ACLs; an
// expired token is refused and reported as an authentication failure.
func TestOAuthBearerTokenFile(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := saslBroker(t, d)
		dir := t.TempDir()
		file := func(name, token string) kafka.Connection {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(token), 0o600); err != nil {
				t.Fatal(err)
			}
			return kafka.Connection{BootstrapServers: c.Addrs, SASL: &kafka.SASL{Mechanism: "OAUTHBEARER", OAuth: &kafka.OAuthBearer{TokenFile: p}}}
		}
		o := observer(t)
		obs := observe(t, o, file("reader", unsecuredJWT(t, "reader", time.Now().Add(time.Hour))), billing)
		requireNoFailures(t, obs)
		if p := partitionObs(t, obs, "public", 0); p.Committed != 3 {
			t.Errorf("public/0 committed %d, want 3", p.Committed)
		}
		obs = observe(t, o, file("no-group", unsecuredJWT(t, "no-group", time.Now().Add(time.Hour))), billing)
		requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "")
		obs = observe(t, o, file("expired", unsecuredJWT(t, "reader", time.Now().Add(-time.Hour))), billing)
		if len(obs.Failures) == 0 || obs.Failures[0].Reason != proof.ReasonAuthenticationFailed {
			t.Errorf("an expired token: %s; want AuthenticationFailed", describeFailures(obs.Failures))
		}
	})
}
