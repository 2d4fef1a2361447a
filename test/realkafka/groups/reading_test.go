package groups

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A partition leader answers ListOffsets and the group coordinator
// OffsetFetch, at different instants. A consumer produces and commits at
// the log end as fast as it can while the observer observes again and
// again: read in the observer's order (log start, committed offsets, log
// end), the committed offset is never beyond the log end.
func TestReadOrderUnderLiveCommits(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic, group = "live-payments", "live-settle"
		e.createTopic(t, topic, 1)
		producer := e.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		adm := kadm.NewClient(producer)
		ctx, cancel := context.WithCancel(context.Background())
		var (
			wg      sync.WaitGroup
			commits atomic.Int64
			loopErr atomic.Value
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("p")})
				rec, err := r.First()
				if err == nil {
					var os kadm.Offsets
					os.Add(kadm.Offset{Topic: topic, Partition: 0, At: rec.Offset + 1, LeaderEpoch: -1})
					err = adm.CommitAllOffsets(ctx, group, os)
				}
				if err != nil && ctx.Err() == nil {
					loopErr.Store(err)
					return
				}
				commits.Add(1)
			}
		}()
		defer func() { cancel(); wg.Wait() }()
		pollUntil(t, 30*time.Second, 100*time.Millisecond, "the committer runs", func() (bool, string) { return commits.Load() > 5, "" })

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}}
		var seen []int64
		for i := 0; i < 40; i++ {
			obs := observeOne(t, o, e.conn(reader), target)
			po := partition(t, obs, topic, 0)
			if po.LogEnd < po.Committed {
				t.Errorf("observation %d: log end %d below committed offset %d: a live consumer reads as beyond the end", i, po.LogEnd, po.Committed)
			}
			r := proof.Evaluate(obs, proof.Policy{GroupID: group, Topics: []string{topic}, RecoveryWindow: window}, obs.ObservedAt)
			if v := findViolation(r, proof.ReasonCommittedOffsetBeyondLogEnd); v != nil {
				t.Errorf("observation %d: false %s: %s", i, v.Reason, v.Message)
			}
			seen = append(seen, po.Committed)
		}
		if err, _ := loopErr.Load().(error); err != nil {
			t.Fatalf("the committer failed: %v", err)
		}
		if seen[len(seen)-1]-seen[0] < 20 {
			t.Fatalf("committed offsets %v: the consumer did not commit meanwhile; the test proves nothing", seen)
		}
	})
}

// OffsetFetch naming partitions answers TOPIC_AUTHORIZATION_FAILED for
// topics the principal may not describe, and leaves them out when all
// topics are asked; a group the broker does not know answers offset -1
// without error. The observer reports the denied topic as a failure (never
// "no offset") and the unknown group as one that has no offsets.
func TestOffsetFetchDeniedTopicsAndUnknownGroups(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const open, secret, group = "audit-open", secretPrefix + "audit", "audit"
		e.createTopic(t, open, 1)
		e.createTopic(t, secret, 1)
		e.Produce(t, open, 5)
		e.Produce(t, secret, 5)
		e.Commit(t, group, open, 0, 3)
		e.Commit(t, group, secret, 0, 4)

		cl := e.userClient(t, noSecret)
		named := func(g string) *kmsg.OffsetFetchResponseGroup {
			r := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = g
			for _, name := range []string{open, secret} {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = name, []int32{0}
				rt.TopicID = topicID(t, e, name)
				rg.Topics = append(rg.Topics, rt)
			}
			r.Groups = []kmsg.OffsetFetchRequestGroup{rg}
			resp := req[*kmsg.OffsetFetchResponse](t, cl, r)
			if len(resp.Groups) != 1 {
				t.Fatalf("OffsetFetch answered %d groups", len(resp.Groups))
			}
			return &resp.Groups[0]
		}
		answers := func(rg *kmsg.OffsetFetchResponseGroup) map[string]kmsg.OffsetFetchResponseGroupTopicPartition {
			out := map[string]kmsg.OffsetFetchResponseGroupTopicPartition{}
			for _, rt := range rg.Topics {
				name := rt.Topic
				for _, n := range []string{open, secret} {
					if name == "" && rt.TopicID == topicID(t, e, n) {
						name = n
					}
				}
				for _, rp := range rt.Partitions {
					out[name] = rp
				}
			}
			return out
		}
		got := answers(named(group))
		if p := got[secret]; p.ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("OffsetFetch of %s as %s: %v offset %d, want TOPIC_AUTHORIZATION_FAILED", secret, noSecret, kerr.ErrorForCode(p.ErrorCode), p.Offset)
		}
		if p := got[open]; p.ErrorCode != 0 || p.Offset != 3 {
			t.Errorf("OffsetFetch of %s: %v offset %d, want 3", open, kerr.ErrorForCode(p.ErrorCode), p.Offset)
		}
		// All topics (none named): the denied one is left out silently.
		all := kmsg.NewPtrOffsetFetchRequest()
		ag := kmsg.NewOffsetFetchRequestGroup()
		ag.Group = group
		all.Groups = []kmsg.OffsetFetchRequestGroup{ag}
		ar := req[*kmsg.OffsetFetchResponse](t, cl, all)
		if len(ar.Groups) != 1 || ar.Groups[0].ErrorCode != 0 {
			t.Fatalf("OffsetFetch of all topics: %+v", ar.Groups)
		}
		if got := answers(&ar.Groups[0]); len(got) != 1 || got[open].Offset != 3 {
			t.Errorf("OffsetFetch of all topics as %s answered %+v, want %s only", noSecret, got, open)
		}
		// A group the broker does not know.
		unknown := named("never-committed")
		if unknown.ErrorCode != 0 {
			t.Errorf("OffsetFetch of an unknown group: %v, want no error", kerr.ErrorForCode(unknown.ErrorCode))
		}
		if p := answers(unknown)[open]; p.ErrorCode != 0 || p.Offset != -1 {
			t.Errorf("OffsetFetch of an unknown group on %s: %v offset %d, want -1 without error", open, kerr.ErrorForCode(p.ErrorCode), p.Offset)
		}

		// The observer, as the same principal.
		o := newObserver(t)
		obs := observe(t, o, e.conn(noSecret), kafka.Target{Group: group, Topics: []string{open, secret}})[0]
		deniedNamed := false
		for _, f := range obs.Failures {
			deniedNamed = deniedNamed || f.Reason == proof.ReasonAuthorizationFailed && f.Topic == secret
		}
		if !deniedNamed {
			t.Errorf("no AuthorizationFailed on %s among %s", secret, describeFailures(obs.Failures))
		}
		for _, to := range obs.Topics {
			for _, po := range to.Partitions {
				if to.Name == secret && po.Committed != proof.NoOffset {
					t.Errorf("%s/%d reported committed %d although denied", secret, po.Partition, po.Committed)
				}
			}
		}
		if po := partition(t, obs, open, 0); po.Committed != 3 {
			t.Errorf("%s/0 committed %d, want 3", open, po.Committed)
		}
		r := proof.Evaluate(obs, proof.Policy{GroupID: group, Topics: []string{open, secret}, RecoveryWindow: window}, obs.ObservedAt)
		if r.Verdict != proof.Unknown || findViolation(r, proof.ReasonNoCommittedOffset) != nil {
			t.Errorf("verdict %s %+v, want Unknown without NoCommittedOffset: a denied topic is not a missing offset", r.Verdict, r.Violations)
		}

		// Records deleted below the unknown group: nothing proves it read them.
		e.DeleteRecords(t, open, 0, 2)
		un := observeOne(t, o, e.conn(reader), kafka.Target{Group: "never-committed", Topics: []string{open}})
		if po := partition(t, un, open, 0); po.Committed != proof.NoOffset {
			t.Errorf("unknown group committed %d, want none", po.Committed)
		}
		if g := un.Group; g.State != proof.GroupStateDead || g.Protocol != "" {
			t.Errorf("unknown group = %+v, want Dead, no protocol", g)
		}
		if r := proof.Evaluate(un, proof.Policy{GroupID: "never-committed", Topics: []string{open}, RecoveryWindow: window}, un.ObservedAt); findViolation(r, proof.ReasonNoCommittedOffset) == nil {
			t.Errorf("unknown group: %s %+v, want NoCommittedOffset", r.Verdict, r.Violations)
		}
	})
}

func topicID(t *testing.T, e *env, topic string) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tds, err := e.Admin(t).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return tds[topic].ID
}

// Each describe call knows its own kind of group only: DescribeGroups the
// classic ones (simple groups included: classic, no protocol type),
// ConsumerGroupDescribe KIP-848 groups, StreamsGroupDescribe streams
// groups. The observer classifies each from the answers.
func TestDescribeCallsPerGroupType(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic = "kinds"
		e.createTopic(t, topic, 2)
		e.Produce(t, topic, 10)
		member := e.JoinGroup(t, "kinds-classic", kafkatest.Classic, topic)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kafkatest.CommitSync(ctx, member, topic, map[int32]int64{0: 1}); err != nil {
			t.Fatal(err)
		}
		e.CommitOffsets(t, "kinds-simple", topic, map[int32]int64{0: 2})
		type kind struct {
			group, protocol, protocolType, state string
		}
		kinds := []kind{
			{"kinds-classic", proof.ProtocolClassic, proof.ProtocolTypeConsumer, proof.GroupStateStable},
			{"kinds-simple", proof.ProtocolClassic, "", proof.GroupStateEmpty},
		}
		if e.V.KIP848 {
			m := joinConsumerGroup(t, e, "kinds-848", topic)
			m.commit(t, topic, map[int32]int64{0: 3})
			kinds = append(kinds, kind{"kinds-848", proof.ProtocolConsumer, "", proof.GroupStateStable})
		}
		if streamsLine(e.V) {
			m := joinStreamsGroup(t, e, "kinds-streams", topic)
			m.commit(t, topic, 0, 4)
			m.leave(t)
			kinds = append(kinds, kind{"kinds-streams", proof.ProtocolStreams, "", proof.GroupStateEmpty})
		}
		if got := advertises(t, e, int16(kmsg.StreamsGroupDescribe)); got != streamsLine(e.V) {
			t.Errorf("ApiVersions lists StreamsGroupDescribe: %v, want %v (on by default from 4.2)", got, streamsLine(e.V))
		}

		// ConsumerGroupDescribe of every group at once: each group is
		// found by at most one entry, and by one exactly when it is a
		// KIP-848 group. (3.9 answers each group once per
		// __consumer_offsets partition of the request, GROUP_ID_NOT_FOUND
		// but from the group's own.)
		if e.V.KIP848 {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			for _, k := range kinds {
				r.Groups = append(r.Groups, k.group)
			}
			resp := req[*kmsg.ConsumerGroupDescribeResponse](t, e.userClient(t, reader), r)
			entries, found := map[string]int{}, map[string]int{}
			for _, g := range resp.Groups {
				entries[g.Group]++
				if g.ErrorCode == 0 {
					found[g.Group]++
				}
			}
			t.Logf("ConsumerGroupDescribe of %d groups: %d entries %v", len(kinds), len(resp.Groups), entries)
			for _, k := range kinds {
				if want := k.protocol == proof.ProtocolConsumer; (found[k.group] == 1) != want || found[k.group] > 1 {
					t.Errorf("ConsumerGroupDescribe found %s in %d entries of %d", k.group, found[k.group], entries[k.group])
				}
			}
		}

		o := newObserver(t)
		var targets []kafka.Target
		for _, k := range kinds {
			targets = append(targets, kafka.Target{Group: k.group, Topics: []string{topic}})
		}
		for i, obs := range observe(t, o, e.conn(reader), targets...) {
			requireNoFailures(t, obs)
			k := kinds[i]
			d := describeAll(t, e, k.group)
			t.Logf("%s: %s", k.group, d)
			if g := obs.Group; g.Protocol != k.protocol || g.ProtocolType != k.protocolType || g.State != k.state {
				t.Errorf("%s observed as %+v, want %s/%q %s (broker: %s)", k.group, g, k.protocol, k.protocolType, k.state, d)
			}
			// The broker's own answers: only the call of the group's kind
			// knows it.
			classicKnows := d.classicCode == 0 && !strings.HasPrefix(d.classic, "Dead")
			if classicKnows != (k.protocol == proof.ProtocolClassic) || (d.consumer == 0) != (k.protocol == proof.ProtocolConsumer) ||
				(d.streams == 0) != (k.protocol == proof.ProtocolStreams) {
				t.Errorf("%s (%s): %s", k.group, k.protocol, d)
			}
			if k.protocol != proof.ProtocolClassic && e.V.Dist.AtLeast(4, 0) && d.classicCode != kerr.GroupIDNotFound.Code {
				t.Errorf("%s: DescribeGroups v6 answers %s, want GROUP_ID_NOT_FOUND", k.group, d)
			}
		}
	})
}

// Kafka 4.0+ (KAFKA-18813) refuses ConsumerGroupDescribe with
// TOPIC_AUTHORIZATION_FAILED when the principal may not Describe a topic
// the group subscribes to; the observer names the topic ACL.
func TestConsumerGroupDescribeTopicDenied(t *testing.T) {
	t.Parallel()
	forEach(t, kip848, func(t *testing.T, e *env) {
		const jobs, secret, group = "cgd-jobs", secretPrefix + "cgd-jobs", "cgd-workers"
		e.createTopic(t, jobs, 1)
		e.createTopic(t, secret, 1)
		m := joinConsumerGroup(t, e, group, jobs, secret)
		m.commit(t, jobs, map[int32]int64{0: 0})

		cl := e.userClient(t, noSecret)
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{group}
		resp := req[*kmsg.ConsumerGroupDescribeResponse](t, cl, r)
		code := resp.Groups[0].ErrorCode
		o := newObserver(t)
		obs := observe(t, o, e.conn(noSecret), kafka.Target{Group: group, Topics: []string{jobs}})[0]
		f := findFailure(obs, proof.ReasonAuthorizationFailed, proof.APIConsumerGroupDescribe, "")
		if consumerGroupDescribeChecksTopics(e.V) {
			if code != kerr.TopicAuthorizationFailed.Code {
				t.Fatalf("ConsumerGroupDescribe as %s: %v, want TOPIC_AUTHORIZATION_FAILED", noSecret, kerr.ErrorForCode(code))
			}
			if f == nil || !strings.Contains(f.Message, "grant Describe on those topics (the policy names "+jobs) {
				t.Errorf("failures %s, want ConsumerGroupDescribe denied naming the topic ACL", describeFailures(obs.Failures))
			}
			if obs.Group.State != "" {
				t.Errorf("group state %q reported although the describe was denied", obs.Group.State)
			}
			return
		}
		if code != 0 || resp.Groups[0].State != "Stable" {
			t.Fatalf("ConsumerGroupDescribe on %s as %s: %v %q, want Stable (no topic check before 4.0)", e.V.Name, noSecret, kerr.ErrorForCode(code), resp.Groups[0].State)
		}
		requireNoFailures(t, obs)
		if g := obs.Group; g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateStable {
			t.Errorf("group = %+v, want consumer Stable", g)
		}
	})
}

// consumerGroupDescribeChecksTopics: KAFKA-18813 (4.0).
func consumerGroupDescribeChecksTopics(v variant) bool { return v.Dist.AtLeast(4, 0) }

// A committed offset is never checked against the log: an admin may commit
// past the end, which the proof reads as CommittedOffsetBeyondLogEnd; a
// topic deleted and created again loses the group's offsets instead.
func TestCommittedOffsetBeyondLogEndAndDeletedTopic(t *testing.T) {
	t.Parallel()
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic, group = "beyond-ledger", "beyond-settle"
		e.createTopic(t, topic, 1)
		e.Produce(t, topic, 5)
		e.Commit(t, group, topic, 0, 100) // the broker accepts it

		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}}
		obs := observeOne(t, o, e.conn(reader), target)
		if po := partition(t, obs, topic, 0); po.Committed != 100 || po.LogEnd != 5 {
			t.Fatalf("%s/0 = %+v, want committed 100 past log end 5", topic, po)
		}
		r := proof.Evaluate(obs, proof.Policy{GroupID: group, Topics: []string{topic}, RecoveryWindow: window}, obs.ObservedAt)
		if r.Verdict != proof.Violated || findViolation(r, proof.ReasonCommittedOffsetBeyondLogEnd) == nil {
			t.Errorf("verdict %s %+v, want Violated, CommittedOffsetBeyondLogEnd", r.Verdict, r.Violations)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := e.Admin(t).DeleteTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, time.Minute, 500*time.Millisecond, "the group's offsets go with the deleted topic", func() (bool, string) {
			os, err := e.Admin(t).FetchOffsets(ctx, group)
			if err != nil {
				return false, err.Error()
			}
			o, ok := os.Lookup(topic, 0)
			return !ok || o.At < 0, fmt.Sprintf("%+v", o)
		})
		pollUntil(t, time.Minute, 500*time.Millisecond, "the topic can be created again", func() (bool, string) {
			resp, err := e.Admin(t).CreateTopic(ctx, 1, 1, nil, topic)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		// The recreated topic is served a moment after CreateTopics answers.
		pollUntil(t, time.Minute, 500*time.Millisecond, "the recreated topic is observed", func() (bool, string) {
			obs = observe(t, o, e.conn(reader), target)[0]
			return len(obs.Failures) == 0, describeFailures(obs.Failures)
		})
		if po := partition(t, obs, topic, 0); po.Committed != proof.NoOffset {
			t.Errorf("recreated %s/0: committed %d, want none (the old offset went with the topic)", topic, po.Committed)
		}
	})
}
