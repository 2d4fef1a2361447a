package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Every password here is distinctive, so a leak into any message or log
// line is found by a plain substring search.
const (
	adminPassword  = "Adm1n-pa55-never-logged"
	readerPassword = "R3ader-pa55-never-logged"
)

func allow(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
	return kfake.ACL{Resource: rt, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
}

// readerACLs is everything an observer needs: Describe and DescribeConfigs
// on topics, Read on topics (record timestamps), Describe on groups,
// DescribeConfigs on the cluster (broker configs).
func readerACLs() []kfake.ACL {
	return []kfake.ACL{
		allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationDescribe),
		allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationDescribeConfigs),
		allow(kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationRead),
		allow(kmsg.ACLResourceTypeGroup, "*", kmsg.ACLOperationDescribe),
		allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationDescribeConfigs),
	}
}

// without drops the ACLs matching (resource, operation).
func without(acls []kfake.ACL, rt kmsg.ACLResourceType, op kmsg.ACLOperation) []kfake.ACL {
	var out []kfake.ACL
	for _, a := range acls {
		if a.Resource == rt && a.Operation == op {
			continue
		}
		out = append(out, a)
	}
	return out
}

// aclCluster is a SASL cluster with users that each lack one permission,
// topics "public" and "secret" (2 partitions, 10 records each), and group
// "billing" with offsets on both.
func aclCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	noTopicConfigs := append(without(readerACLs(), kmsg.ACLResourceTypeTopic, kmsg.ACLOperationDescribeConfigs),
		allow(kmsg.ACLResourceTypeTopic, "public", kmsg.ACLOperationDescribeConfigs))
	c := kafkatest.NewCluster(t,
		kafkatest.WithSASL("SCRAM-SHA-256", "admin", adminPassword),
		kafkatest.WithKfake(
			kfake.User("SCRAM-SHA-512", "reader", readerPassword, readerACLs()...),
			kfake.User("PLAIN", "plain-reader", readerPassword, readerACLs()...),
			// DescribeConfigs on topic "public" only.
			kfake.User("SCRAM-SHA-512", "no-topic-configs", readerPassword, noTopicConfigs...),
			// DescribeConfigs on topics but not on the cluster (brokers).
			kfake.User("SCRAM-SHA-512", "no-broker-configs", readerPassword,
				without(readerACLs(), kmsg.ACLResourceTypeCluster, kmsg.ACLOperationDescribeConfigs)...),
			// No Describe on groups: OffsetFetch and DescribeGroups both
			// need it (and FindCoordinator before them).
			kfake.User("SCRAM-SHA-512", "no-group", readerPassword,
				without(readerACLs(), kmsg.ACLResourceTypeGroup, kmsg.ACLOperationDescribe)...),
			// No Read on topics: no record timestamps, still a proof.
			kfake.User("SCRAM-SHA-512", "no-read", readerPassword,
				without(readerACLs(), kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead)...),
		),
	)
	for _, topic := range []string{"public", "secret"} {
		c.CreateTopic(t, topic, 2, nil)
		c.Produce(t, topic, 20)
		c.Commit(t, "billing", topic, 0, 3)
		c.Commit(t, "billing", topic, 1, 4)
	}
	return c
}

func saslConn(c *kafkatest.Cluster, mechanism, user, password string) Connection {
	return Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: mechanism, Username: user, Password: password}}
}

var billing = Target{Group: "billing", Topics: []string{"public", "secret"}}

// requireNoSecret fails if the password appears in any failure message or
// log line.
func requireNoSecret(t *testing.T, obs []proof.Observation, sink *logSink, secret string) {
	t.Helper()
	for _, ob := range obs {
		for _, f := range ob.Failures {
			if strings.Contains(f.Message, secret) {
				t.Errorf("failure message leaks the password: %q", f.Message)
			}
		}
	}
	if strings.Contains(sink.String(), secret) {
		t.Errorf("log output leaks the password")
	}
}

func TestObserveSASL(t *testing.T) {
	t.Parallel()
	c := aclCluster(t)

	t.Run("authorized users of each mechanism see everything", func(t *testing.T) {
		for _, tc := range []struct{ mechanism, user string }{
			{"SCRAM-SHA-512", "reader"},
			{"plain", "plain-reader"}, // mechanism names are case-insensitive
		} {
			o, sink := newTestObserver(t)
			obs := observe(t, o, saslConn(c, tc.mechanism, tc.user, readerPassword), billing)
			requireNoFailures(t, obs[0])
			if p := partition(t, obs[0], "secret", 1); p.Committed != 4 || p.LogEnd != 10 || p.CommittedTimestamp.IsZero() {
				t.Errorf("%s: secret/1 = %+v", tc.user, p)
			}
			requireNoSecret(t, obs, sink, readerPassword)
		}
	})

	t.Run("wrong password is AuthenticationFailed", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "reader", "wrong-"+readerPassword), billing)
		f := requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, "Metadata", "")
		if !strings.Contains(f.Message, "SASL") {
			t.Errorf("message %q does not say SASL failed", f.Message)
		}
		requireNoSecret(t, obs, sink, "wrong-"+readerPassword)
		// The admin's password is known to the cluster, not to us; the
		// wrong one must not leak either (checked above).
	})

	t.Run("unsupported mechanism is AuthenticationFailed without contacting Kafka", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "GSSAPI", "reader", readerPassword), billing)
		requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, "", "")
		requireNoSecret(t, obs, sink, readerPassword)
	})

	t.Run("DescribeConfigs denied on one topic of two", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "no-topic-configs", readerPassword), billing)[0]
		f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeConfigs", "secret")
		if len(obs.Failures) != 1 || f.Partition != -1 || !strings.Contains(f.Message, "secret") {
			t.Errorf("want exactly one failure naming topic secret, got %s", describeFailures(obs.Failures))
		}
		if got := topicObs(t, obs, "public"); !is(got.RetentionMs, "604800000") || !is(got.CleanupPolicy, "delete") {
			t.Errorf("public configs lost: %+v", got)
		}
		if got := topicObs(t, obs, "secret"); got.RetentionMs.Present {
			t.Errorf("secret configs reported although denied: %+v", got.RetentionMs)
		}
		// Everything else is still observed.
		if p := partition(t, obs, "secret", 0); p.Committed != 3 || p.LogEnd != 10 {
			t.Errorf("secret/0 = %+v", p)
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})

	t.Run("DescribeConfigs denied on the brokers", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "no-broker-configs", readerPassword), billing)[0]
		requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeConfigs", "")
		if obs.OffsetsRetentionMinutes.Present {
			t.Errorf("offsets.retention.minutes reported although denied: %+v", obs.OffsetsRetentionMinutes)
		}
		if got := topicObs(t, obs, "secret"); got.RetentionMs != value("604800000") {
			t.Errorf("topic configs lost: %+v", got)
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})

	t.Run("no Describe on the group: OffsetFetch and DescribeGroups denied", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "no-group", readerPassword), billing)[0]
		requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "")
		requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeGroups", "")
		if obs.Group.State != "" {
			t.Errorf("group state %q reported although denied", obs.Group.State)
		}
		if p := partition(t, obs, "public", 0); p.LogEnd != 10 || !p.CommittedTimestamp.IsZero() {
			t.Errorf("public/0 = %+v: watermarks should be read, no timestamp without an offset", p)
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})

	t.Run("Fetch denied: no timestamps, no failure", func(t *testing.T) {
		o, sink := newTestObserver(t)
		obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "no-read", readerPassword), billing)[0]
		requireNoFailures(t, obs)
		p := partition(t, obs, "public", 0)
		if p.Committed != 3 || !p.CommittedTimestamp.IsZero() {
			t.Errorf("public/0 = %+v: want committed 3 and an unknown timestamp", p)
		}
		if !strings.Contains(sink.String(), "Fetch denied") {
			t.Errorf("the Fetch denial was not logged")
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})
}

// Kafka's ACL model ties some requests to the same permission (Metadata and
// ListOffsets both need Describe on the topic; OffsetFetch and
// DescribeGroups both need Describe on the group), so an ACL cannot deny one
// without the other. The broker's fault injection answers exactly one
// request type with the code an ACL denial answers, for the authorized
// reader.
func TestObserveDeniedRequestTypes(t *testing.T) {
	t.Parallel()
	c := aclCluster(t)
	conn := saslConn(c, "SCRAM-SHA-512", "reader", readerPassword)

	t.Run("ListOffsets", func(t *testing.T) {
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Topic: "secret", Err: kerr.TopicAuthorizationFailed, Count: -1})
		defer h.Remove()
		o, sink := newTestObserver(t)
		obs := observe(t, o, conn, billing)[0]
		for _, f := range obs.Failures {
			if f.Reason != proof.ReasonAuthorizationFailed || f.API != "ListOffsets" || f.Topic != "secret" || f.Partition < 0 {
				t.Errorf("unexpected failure %+v", f)
			}
		}
		if len(obs.Failures) != 4 { // log start and end, 2 partitions
			t.Errorf("want 4 ListOffsets failures on secret, got %s", describeFailures(obs.Failures))
		}
		if p := partition(t, obs, "public", 1); p.LogEnd != 10 || p.Committed != 4 {
			t.Errorf("public/1 = %+v", p)
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})

	t.Run("OffsetFetch for the group", func(t *testing.T) {
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "billing", Err: kerr.GroupAuthorizationFailed, Count: -1})
		defer h.Remove()
		o, sink := newTestObserver(t)
		obs := observe(t, o, conn, billing)[0]
		f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "")
		if len(obs.Failures) != 1 || !strings.Contains(f.Message, "billing") {
			t.Errorf("want one OffsetFetch failure naming the group, got %s", describeFailures(obs.Failures))
		}
		if obs.Group.State != proof.GroupStateEmpty {
			t.Errorf("group state = %q, want Empty (DescribeGroups still allowed)", obs.Group.State)
		}
		requireNoSecret(t, []proof.Observation{obs}, sink, readerPassword)
	})

	t.Run("OffsetFetch for one partition", func(t *testing.T) {
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetFetch}, Group: "billing", Topic: "secret", Partitions: []int32{1}, Err: kerr.TopicAuthorizationFailed, Count: -1})
		defer h.Remove()
		o, _ := newTestObserver(t)
		obs := observe(t, o, conn, billing)[0]
		f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "secret")
		if len(obs.Failures) != 1 || f.Partition != 1 {
			t.Errorf("want one failure on secret/1, got %s", describeFailures(obs.Failures))
		}
		if p := partition(t, obs, "secret", 0); p.Committed != 3 {
			t.Errorf("secret/0 committed = %d, want 3", p.Committed)
		}
	})

	t.Run("DescribeGroups", func(t *testing.T) {
		h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeGroups}, Group: "billing", Err: kerr.GroupAuthorizationFailed, Count: -1})
		defer h.Remove()
		o, _ := newTestObserver(t)
		obs := observe(t, o, conn, billing)[0]
		requireFailure(t, obs, proof.ReasonAuthorizationFailed, "DescribeGroups", "")
		if len(obs.Failures) != 1 || obs.Group.State != "" {
			t.Errorf("want one DescribeGroups failure and no state, got %q %s", obs.Group.State, describeFailures(obs.Failures))
		}
		if p := partition(t, obs, "secret", 1); p.Committed != 4 {
			t.Errorf("secret/1 committed = %d, want 4", p.Committed)
		}
	})
}

// A broker answers OffsetFetch only for partitions the principal may
// describe: a partition left out of the answer is an authorization failure,
// never "no committed offset". The broker here is made to answer as such a
// broker does, by leaving partition secret/1 out of the request it then
// handles normally.
func TestObserveOffsetFetchPartitionMissingFromAnswer(t *testing.T) {
	t.Parallel()
	c := aclCluster(t)
	secretID := topicID(t, c, "secret")
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.OffsetFetchRequest)
		for gi := range r.Groups {
			for ti := range r.Groups[gi].Topics {
				rt := &r.Groups[gi].Topics[ti]
				if rt.Topic == "secret" || rt.TopicID == secretID {
					rt.Partitions = []int32{0}
				}
			}
		}
		return nil, nil, false // let the broker answer the narrowed request
	})
	o, _ := newTestObserver(t)
	obs := observe(t, o, saslConn(c, "SCRAM-SHA-512", "reader", readerPassword), billing)[0]
	f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, "OffsetFetch", "secret")
	if f.Partition != 1 || len(obs.Failures) != 1 {
		t.Errorf("want one failure on secret/1, got %s", describeFailures(obs.Failures))
	}
	if !strings.Contains(f.Message, "unknown") {
		t.Errorf("message %q should say the offset is unknown, not absent", f.Message)
	}
	if p := partition(t, obs, "secret", 0); p.Committed != 3 {
		t.Errorf("secret/0 committed = %d, want 3", p.Committed)
	}
}

func topicID(t *testing.T, c *kafkatest.Cluster, topic string) [16]byte {
	t.Helper()
	tds, err := c.Admin(t).ListTopics(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return tds[topic].ID
}
