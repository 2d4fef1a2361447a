package records

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// listGroupsOn is ListGroups as one broker answers it: the groups it
// coordinates, with their protocol type and (v5+) group type.
func listGroupsOn(t *testing.T, c *kafkatest.Cluster, broker int32) map[string]kmsg.ListGroupsResponseGroup {
	t.Helper()
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, c.Client(t).Broker(int(broker)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("ListGroups on broker %d: %v", broker, err)
	}
	out := map[string]kmsg.ListGroupsResponseGroup{}
	for _, g := range resp.Groups {
		out[g.Group] = g
	}
	return out
}

// connectMember joins group as a Kafka Connect worker does (protocol type
// connect) and stays in it until the test ends.
func connectMember(t *testing.T, c *kafkatest.Cluster, group string) {
	t.Helper()
	cl := c.Client(t)
	ctx, cancel := contextFor(60 * time.Second)
	defer cancel()
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "connect"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "sessioned", []byte{0, 1}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("JoinGroup %s: %v", group, err)
		}
		return resp
	}
	var resp *kmsg.JoinGroupResponse
	for attempt := 0; ; attempt++ {
		resp = join("")
		if kerr.ErrorForCode(resp.ErrorCode) == kerr.MemberIDRequired {
			resp = join(resp.MemberID)
		}
		err := kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			break
		}
		// A coordinator that just moved (the cluster is young) forgets
		// the pending member: join again.
		if attempt == 4 || !errors.Is(err, kerr.UnknownMemberID) && !errors.Is(err, kerr.NotCoordinator) && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			t.Fatalf("JoinGroup %s: %v", group, err)
		}
		time.Sleep(time.Second)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, resp.MemberID, resp.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("connect"), resp.Protocol
	if sresp, err := sync.RequestWith(ctx, cl); err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("SyncGroup %s: %v %v", group, err, kerr.ErrorForCode(sresp.ErrorCode))
	}
}

// ListGroups is answered per broker for the groups it coordinates; the
// observer asks every broker, then one OffsetFetch per group naming no
// topics (null: every topic the group committed on). The group type comes
// from ListGroups v5 (classic, consumer); Connect worker groups are left
// out — and, on 4.x, share groups (on by default from 4.2).
func TestDiscoveryAsksEveryBroker(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		b, c := disagreeingCluster(t, d)
		const orders, refunds = "discovery-orders", "discovery-refunds"
		createTopic(t, c, orders, 1, nil)
		createTopic(t, c, refunds, 1, nil)
		c.ProduceTo(t, orders, 0, 10)
		c.ProduceTo(t, refunds, 0, 10)
		var simple []string
		for i := range 9 {
			g := fmt.Sprintf("discovery-simple-%d", i)
			simple = append(simple, g)
			c.Commit(t, g, orders, 0, 4)
		}
		c.Commit(t, "discovery-simple-0", refunds, 0, 2) // two topics: OffsetFetch(null) answers both
		classic := c.JoinGroup(t, "discovery-classic", kafkatest.Classic, orders)
		if err := kafkatest.CommitSync(context.Background(), classic, orders, map[int32]int64{0: 6}); err != nil {
			t.Fatal(err)
		}
		// franz-go joins 3.9 with the classic protocol: it speaks
		// ConsumerGroupHeartbeat from v1 (4.0 GA), 3.9's preview has v0.
		kip848 := d.AtLeast(4, 0)
		modern := c.JoinGroup(t, "discovery-kip848", kafkatest.Consumer, refunds)
		if err := kafkatest.CommitSync(context.Background(), modern, refunds, map[int32]int64{0: 7}); err != nil {
			t.Fatal(err)
		}
		wantType := "classic"
		if kip848 {
			wantType = "consumer"
		}
		connectMember(t, c, "discovery-connect-cluster")
		share := d.AtLeast(4, 2)
		if share {
			shareMember(t, c, "discovery-share", orders)
		}

		// The broker's own answers: each group on exactly one broker.
		where := map[string]int32{}
		types := map[string]kmsg.ListGroupsResponseGroup{}
		for _, n := range b.Nodes {
			for g, lg := range listGroupsOn(t, c, n.ID) {
				if !strings.HasPrefix(g, "discovery-") {
					continue
				}
				if other, dup := where[g]; dup {
					t.Errorf("group %s listed by brokers %d and %d", g, other, n.ID)
				}
				where[g], types[g] = n.ID, lg
			}
		}
		coordinators := map[int32]bool{}
		for _, id := range where {
			coordinators[id] = true
		}
		t.Logf("Apache Kafka %s: coordinators %v", d.Version, where)
		if len(coordinators) < 2 {
			t.Errorf("all groups on one broker (%v): the test does not show ListGroups per broker", where)
		}
		if types["discovery-connect-cluster"].ProtocolType != "connect" {
			t.Errorf("Kafka lists the Connect group as %+v", types["discovery-connect-cluster"])
		}
		if got := types["discovery-kip848"].GroupType; got != wantType {
			t.Errorf("Kafka's group type of the group joined with KIP-848's protocol: %q, want %s (ListGroups v5)", got, wantType)
		}
		if got := types["discovery-classic"].GroupType; got != "classic" {
			t.Errorf("Kafka's group type of the classic group: %q, want classic (ListGroups v5)", got)
		}
		if share && types["discovery-share"].GroupType != "share" {
			t.Errorf("Apache Kafka %s lists the share group as %+v", d.Version, types["discovery-share"])
		}

		co := observeCluster(t, observer(t), conn(c), kafka.ClusterRequest{
			Discover: &kafka.Discovery{Match: func(g string) bool { return strings.HasPrefix(g, "discovery-") }},
		})
		if len(co.DiscoveryFailures) > 0 {
			t.Fatalf("discovery failures: %s", describeFailures(co.DiscoveryFailures))
		}
		got := map[string]kafka.DiscoveredGroup{}
		for _, dg := range co.Discovered {
			got[dg.Group] = dg
		}
		for _, g := range simple[1:] {
			if !slices.Equal(got[g].Topics, []string{orders}) {
				t.Errorf("%s (coordinator %d): discovered %+v, want topics [%s]", g, where[g], got[g], orders)
			}
		}
		if !slices.Equal(got["discovery-simple-0"].Topics, []string{orders, refunds}) {
			t.Errorf("discovery-simple-0: topics %v, want both it committed on", got["discovery-simple-0"].Topics)
		}
		if dg := got["discovery-classic"]; dg.Type != "classic" || dg.ProtocolType != "consumer" || !slices.Equal(dg.Topics, []string{orders}) {
			t.Errorf("classic group discovered as %+v", dg)
		}
		if dg := got["discovery-kip848"]; dg.Type != wantType || !slices.Equal(dg.Topics, []string{refunds}) {
			t.Errorf("KIP-848 group discovered as %+v", dg)
		} else if p := partitionObs(t, dg.Observation, refunds, 0); p.Committed != 7 {
			t.Errorf("KIP-848 group observed at %d, want 7", p.Committed)
		}
		for _, g := range []string{"discovery-connect-cluster", "discovery-share"} {
			if _, ok := got[g]; ok {
				t.Errorf("%s discovered: Connect and share groups are left out", g)
			}
		}
		if want := len(simple) + 2; len(co.Discovered) != want {
			t.Errorf("discovered %d groups, want %d", len(co.Discovered), want)
		}

		// scan judges the same groups, and only those.
		code, out := scan(t, c, "1h", "^discovery-")
		var scanned []string
		for _, g := range out.Groups {
			scanned = append(scanned, g.Group)
			if g.Group == "discovery-simple-0" && !slices.Equal(g.Topics, []string{orders, refunds}) {
				t.Errorf("scan: discovery-simple-0 on %v, want both topics", g.Topics)
			}
		}
		slices.Sort(scanned)
		var discovered []string
		for _, dg := range co.Discovered {
			discovered = append(discovered, dg.Group)
		}
		if !slices.Equal(scanned, discovered) || code == 64 || len(out.Failures) > 0 {
			t.Errorf("scan: exit %d, groups %v, failures %v; want the discovered %v", code, scanned, out.Failures, discovered)
		}
	})
}

// shareMember joins a share group (KIP-932) with a ShareGroupHeartbeat and
// keeps it until the test ends (the heartbeat's session outlives the test).
func shareMember(t *testing.T, c *kafkatest.Cluster, group, topic string) {
	t.Helper()
	cl := c.Client(t)
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, "share-member-0000000001", 0
	req.SubscribedTopicNames = []string{topic}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("ShareGroupHeartbeat %s (share groups should be on by default): %v", group, err)
	}
}

// Groups no describe call knows (a policy's group whose consumers never
// started) are read as Dead on every coordinator: each of the three
// describe calls must reach the group's own coordinator. StreamsGroupDescribe
// (4.1+) is no request franz-go routes to a coordinator: sent to any
// broker, it answered NOT_COORDINATOR for the groups another broker
// coordinates, and the observer reported them unreachable.
func TestObserveAbsentGroupsOnEveryCoordinator(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := disagreeingCluster(t, d)
		const topic = "absent-orders"
		createTopic(t, c, topic, 1, nil)
		c.ProduceTo(t, topic, 0, 3)
		// __consumer_offsets exists once a group did: before, every
		// coordinator lookup answers COORDINATOR_NOT_AVAILABLE.
		c.Commit(t, "absent-seed", topic, 0, 1)
		var targets []kafka.Target
		for i := range 9 {
			targets = append(targets, kafka.Target{Group: fmt.Sprintf("absent-group-%d", i), Topics: []string{topic}})
		}
		co := observeCluster(t, observer(t), conn(c), kafka.ClusterRequest{Targets: targets})
		for _, obs := range co.Observations {
			if len(obs.Failures) > 0 || obs.Group.State != proof.GroupStateDead {
				t.Errorf("Apache Kafka %s: group %s: state %q, failures %s; want Dead and none", d.Version, obs.Group.ID, obs.Group.State, describeFailures(obs.Failures))
			}
		}
	})
}
