package kafka

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Discovery finds every group and the topics each committed on, and
// observes them in the same pass as the targets.
func TestObserveClusterDiscovers(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.SeedGroupKinds(t)
	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	co := o.ObserveCluster(ctx, conn, ClusterRequest{
		Targets:  []Target{{Group: "healthy", Topics: []string{"orders"}}},
		Discover: &Discovery{},
	})
	requireNoFailures(t, co.Observations[0])
	if len(co.Brokers) != 1 || !is(co.OffsetsRetentionMinutes, "10080") || !is(co.BrokerOffsetsRetention[co.Brokers[0]], "10080") {
		t.Errorf("brokers %v, offsets retention %+v per broker %+v", co.Brokers, co.OffsetsRetentionMinutes, co.BrokerOffsetsRetention)
	}
	got := map[string][]string{}
	for _, d := range co.Discovered {
		got[d.Group] = d.Topics
		if d.Failure != nil {
			t.Errorf("%s: %s", d.Group, d.Failure.Message)
		}
	}
	want := map[string][]string{"healthy": {"orders"}, "expired": {"payments"}, "simple": {"orders"}, "offsetless": nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("discovered %v, want %v", got, want)
	}
	for _, d := range co.Discovered {
		switch d.Group {
		case "expired":
			if p := partition(t, d.Observation, "payments", 0); p.Committed != 2 || p.LogStart != 6 {
				t.Errorf("expired: committed %d, log start %d; want 2 and 6", p.Committed, p.LogStart)
			}
		case "healthy":
			if d.Observation.Group.ProtocolType != "consumer" || d.Observation.Group.State != "Stable" {
				t.Errorf("healthy: %+v", d.Observation.Group)
			}
		case "simple":
			if d.Observation.Group.ProtocolType != "" || d.Observation.Group.Protocol != proof.ProtocolClassic {
				t.Errorf("simple: %+v", d.Observation.Group)
			}
		case "offsetless":
			if d.State != "Stable" {
				t.Errorf("offsetless: state %q, want Stable", d.State)
			}
		}
	}

	co = o.ObserveCluster(ctx, conn, ClusterRequest{Discover: &Discovery{Match: regexp.MustCompile("^(healthy|simple)$").MatchString}})
	if len(co.Discovered) != 2 || co.Discovered[0].Group != "healthy" || co.Discovered[1].Group != "simple" {
		t.Errorf("with a pattern: %+v", co.Discovered)
	}
}

// One pass per connection whatever the number of groups: the requests of
// a steady-state pass that discovers and observes 1,000 groups are the
// requests of a pass for 1 group, API by API (docs/benchmarks.md).
func TestDiscoveryRequestsDoNotGrowWithGroups(t *testing.T) {
	counts := func(groups int) map[string]int {
		c := kafkatest.NewCluster(t)
		c.CreateTopic(t, "events", 3, nil)
		c.Produce(t, "events", 30)
		for i := range groups {
			c.CommitOffsets(t, fmt.Sprintf("g-%04d", i), "events", map[int32]int64{0: 7, 1: 7, 2: 7})
		}
		var rc requestCounter
		o, _ := newTestObserver(t, WithRequestHook(rc.hook))
		conn := Connection{BootstrapServers: c.Addrs}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := ClusterRequest{Targets: []Target{{Group: "g-0000", Topics: []string{"events"}}}, Discover: &Discovery{}}
		o.ObserveCluster(ctx, conn, req) // connections, API versions, coordinators
		rc.reset()
		co := o.ObserveCluster(ctx, conn, req)
		if len(co.Discovered) != groups {
			t.Fatalf("discovered %d groups, want %d", len(co.Discovered), groups)
		}
		for _, d := range co.Discovered {
			if len(d.Observation.Failures) > 0 {
				t.Fatalf("%s: %s", d.Group, describeFailures(d.Observation.Failures))
			}
		}
		return rc.reset()
	}
	one, thousand := counts(1), counts(1000)
	t.Logf("requests per pass: 1 group %v (%d), 1,000 groups %v (%d)", one, total(one), thousand, total(thousand))
	if !reflect.DeepEqual(one, thousand) {
		t.Errorf("requests per pass grow with groups:\n    1 group:  %v\n1,000 groups: %v", one, thousand)
	}
	// kfake has no StreamsGroupDescribe (a broker without the API has no
	// streams group: not asked). Metadata twice: the pass's own, and the
	// client's broker list that ListGroups goes to every broker of.
	// ApiVersions once per broker: its group.version feature.
	want := map[string]int{
		"ApiVersions": 1, "ListGroups": 1, "OffsetFetch": 2, "Metadata": 2, "DescribeConfigs": 2, "ListOffsets": 2,
		"DescribeGroups": 1, "ConsumerGroupDescribe": 1, "Fetch": 1,
	}
	if !reflect.DeepEqual(thousand, want) {
		t.Errorf("requests per pass on one broker: %v, want %v", thousand, want)
	}
}
