package groups

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 000 (a group with more than one consuming service): mapping a
// group to the workloads that consume it starts from the address the
// coordinator saw each live member connect from, which a pod's IP is. On
// Apache Kafka the answer is Java's InetAddress.toString(), "/127.0.0.2"
// (GroupMetadataManager: context.clientAddress().toString()), for a
// classic member (DescribeGroups) and a KIP-848 one (ConsumerGroupDescribe);
// the observation keeps it as the broker wrote it and as an IP.
func TestMemberClientHostIsTheConnectionsAddress(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic = "hosts-orders"
		e.createTopic(t, topic, 1)
		e.Produce(t, topic, 3)
		// The classic member dials from 127.0.0.2, as a pod dials from
		// its own IP: the host the broker reports is this address, not
		// the broker's nor a name.
		from := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}
		e.JoinGroupWith(t, "hosts-classic", kafkatest.Classic, []kgo.Opt{kgo.Dialer(from.DialContext), kgo.ClientID("orders-consumer")}, topic)

		o := newObserver(t)
		obs := observeOne(t, o, e.conn(reader), kafka.Target{Group: "hosts-classic", Topics: []string{topic}})
		requireMember(t, obs, "orders-consumer", netip.MustParseAddr("127.0.0.2"))

		if !e.V.KIP848 {
			return
		}
		joinConsumerGroup(t, e, "hosts-consumer", topic)
		obs = observeOne(t, o, e.conn(reader), kafka.Target{Group: "hosts-consumer", Topics: []string{topic}})
		if obs.Group.Protocol != proof.ProtocolConsumer {
			t.Fatalf("group hosts-consumer is %q, want a KIP-848 group", obs.Group.Protocol)
		}
		requireMember(t, obs, "", netip.MustParseAddr("127.0.0.1"))
	})
}

// requireMember: obs's group has exactly one member, connected from host,
// with clientID (when not empty), its host written as Kafka writes it.
func requireMember(t *testing.T, obs proof.Observation, clientID string, host netip.Addr) {
	t.Helper()
	ms := obs.Group.Members
	if len(ms) != 1 {
		t.Fatalf("group %s (%s, %s) has members %+v, want one", obs.Group.ID, obs.Group.Protocol, obs.Group.State, ms)
	}
	m := ms[0]
	if m.Host != host {
		t.Errorf("member host %v (client host %q), want %v", m.Host, m.ClientHost, host)
	}
	if !strings.HasPrefix(m.ClientHost, "/") || !strings.HasSuffix(m.ClientHost, host.String()) {
		t.Errorf("client host %q: Apache Kafka writes InetAddress.toString(), \"/%v\"", m.ClientHost, host)
	}
	if clientID != "" && m.ClientID != clientID {
		t.Errorf("member client ID %q, want %q", m.ClientID, clientID)
	}
}

// A connection's discovery counts a group as guarded by any policy whose
// proof was on the same cluster (a policy printed by scan --emit-policies
// names the bootstrap servers, not the connection), and a restarted
// manager dates an Empty clock only from a proof on the same cluster: both
// compare the cluster ID of Metadata responses. On Apache Kafka it is the
// ID the storage was formatted with (SharedServer.clusterId:
// meta.properties cluster.id, sent by KafkaApis.handleTopicMetadataRequest),
// the same whichever address a client bootstraps from.
func TestClusterIDIsTheStoragesWhateverTheAddress(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic = "clusterid-orders"
		e.createTopic(t, topic, 1)
		e.CommitOffsets(t, "clusterid-batch", topic, map[int32]int64{0: 0})
		o := newObserver(t)
		byIP := e.conn(reader)
		byName := byIP
		byName.BootstrapServers = nil
		for _, a := range byIP.BootstrapServers {
			_, port, err := net.SplitHostPort(a)
			if err != nil {
				t.Fatal(err)
			}
			byName.BootstrapServers = append(byName.BootstrapServers, net.JoinHostPort("localhost", port))
		}
		for _, conn := range []kafka.Connection{byIP, byName} {
			co := o.ObserveCluster(t.Context(), conn, kafka.ClusterRequest{
				Targets:  []kafka.Target{{Group: "clusterid-batch", Topics: []string{topic}}},
				Discover: &kafka.Discovery{},
			})
			if len(co.Failures) > 0 {
				t.Fatalf("bootstrapping from %v: %+v", conn.BootstrapServers, co.Failures)
			}
			if co.ClusterID != e.B.ClusterID() {
				t.Errorf("bootstrapping from %v: the cluster observation's ID %q, want the storage's %q", conn.BootstrapServers, co.ClusterID, e.B.ClusterID())
			}
			if got := co.Observations[0].ClusterID; got != e.B.ClusterID() {
				t.Errorf("bootstrapping from %v: the policy target's observation has cluster ID %q, want %q", conn.BootstrapServers, got, e.B.ClusterID())
			}
		}
	})
}
