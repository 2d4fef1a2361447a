package kafka

import (
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A running consumer is seen as a member of its group, with its client ID
// and the address it connects from: the evidence that maps a group to the
// pods that consume it (issue 25). Seed 000's fan-out service runs
// several consumers of one group; each is a member, for a classic group
// (DescribeGroups) and a KIP-848 group (ConsumerGroupDescribe) alike. A
// group whose consumers left has no members.
func TestObserveGroupMembersHosts(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 4, nil)
	c.Produce(t, "outbox", 8)

	join := func(group, clientID string, serverSide bool) *kgo.Client {
		t.Helper()
		protocol := kafkatest.Classic
		if serverSide {
			protocol = kafkatest.Consumer
		}
		return c.JoinGroupWith(t, group, protocol, []kgo.Opt{kgo.ClientID(clientID)}, "outbox")
	}
	fanout := []*kgo.Client{join("fanout", "fanout-0", false), join("fanout", "fanout-1", false)}
	nextGen := join("fanout-848", "fanout-848-0", true)
	c.WaitGroupState(t, "fanout", "Stable")
	c.WaitGroupState(t, "fanout-848", "Stable")

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	targets := []Target{{Group: "fanout", Topics: []string{"outbox"}}, {Group: "fanout-848", Topics: []string{"outbox"}}}
	loopback := netip.MustParseAddr("127.0.0.1")
	check := func(g proof.GroupObservation, clientIDs ...string) {
		t.Helper()
		var got []string
		for _, m := range g.Members {
			got = append(got, m.ClientID)
			if m.MemberID == "" || m.ClientHost == "" {
				t.Errorf("group %s: member %+v lacks its member ID or client host", g.ID, m)
			}
			if m.Host != loopback {
				t.Errorf("group %s: member %s host %v (reported %q), want %v: the address the consumer connected from", g.ID, m.ClientID, m.Host, m.ClientHost, loopback)
			}
		}
		if len(got) != len(clientIDs) {
			t.Fatalf("group %s: members %v, want %v", g.ID, got, clientIDs)
		}
		for _, want := range clientIDs {
			found := false
			for _, id := range got {
				found = found || id == want
			}
			if !found {
				t.Errorf("group %s: members %v, want %s among them", g.ID, got, want)
			}
		}
	}
	obs := observe(t, o, conn, targets...)
	check(obs[0].Group, "fanout-0", "fanout-1")
	check(obs[1].Group, "fanout-848-0")

	for _, cl := range fanout {
		cl.Close()
	}
	nextGen.Close()
	c.WaitGroupState(t, "fanout", "Empty")
	c.WaitGroupState(t, "fanout-848", "Empty")
	obs = observe(t, o, conn, targets...)
	check(obs[0].Group)
	check(obs[1].Group)
}

// Brokers report a member's client host as Java's InetAddress.toString()
// ("/10.1.2.3", "name/10.1.2.3"), IPv4 through a dual-stack socket as
// ::ffff:10.1.2.3; kfake as host:port. Each reads as the pod IP it is.
func TestHostAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/10.1.2.3", "10.1.2.3"},
		{"settle-7d9f-abcde.ledger.svc/10.1.2.3", "10.1.2.3"},
		{"/::ffff:10.1.2.3", "10.1.2.3"},
		{"/fd00:10:244::7", "fd00:10:244::7"},
		{"/fe80::1%eth0", "fe80::1"},
		{"10.1.2.3:54321", "10.1.2.3"},
		{"[fd00::7]:54321", "fd00::7"},
		{"", ""},
		{"/", ""},
		{"unresolved-host", ""},
	} {
		got := hostAddr(tc.in)
		if tc.want == "" {
			if got.IsValid() {
				t.Errorf("hostAddr(%q) = %v, want no address", tc.in, got)
			}
			continue
		}
		if got != netip.MustParseAddr(tc.want) {
			t.Errorf("hostAddr(%q) = %v, want %s", tc.in, got, tc.want)
		}
	}
}
