package controllers

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// shapeObserver answers every target as make bench-scale's Kafka clusters
// do (test/scale): a running classic group on 2 topics of 12 partitions,
// each partition with its committed record's and the preceding record's
// timestamps; it delivers each observation as the real observer does.
type shapeObserver struct{}

func (shapeObserver) ObserveCluster(_ context.Context, _ kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	now := time.Now()
	out := make([]proof.Observation, len(req.Targets))
	for i, t := range req.Targets {
		out[i] = shapeObservation(t, now)
		if req.Deliver != nil {
			req.Deliver(i, kafka.ObservedAs(out[i]))
		}
	}
	if req.Deliver != nil {
		out = nil // each went to Deliver
	}
	return kafka.ClusterObservation{ObservedAt: now, Observations: out, Brokers: []int32{1, 2, 3}}
}

func (shapeObserver) Forget(kafka.Connection) {}

func shapeObservation(t kafka.Target, now time.Time) proof.Observation {
	obs := proof.Observation{
		ObservedAt: now, ClusterID: "scale-cluster-0",
		OffsetsRetentionMinutes: proof.ConfigValue{Present: true, Value: "10080", Source: "broker default offsets.retention.minutes, strictest of 3 brokers"},
		Group: proof.GroupObservation{ID: t.Group, State: proof.GroupStateStable, Protocol: proof.ProtocolClassic,
			ProtocolType: proof.ProtocolTypeConsumer, Subscribed: t.Topics, SubscriptionKnown: true},
	}
	for ti, name := range t.Topics {
		topic := proof.TopicObservation{
			Name:           name,
			RetentionMs:    proof.ConfigValue{Present: true, Value: strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)},
			RetentionBytes: proof.ConfigValue{Present: true, Value: "-1", Source: "broker default log.retention.bytes"},
			CleanupPolicy:  proof.ConfigValue{Present: true, Value: "delete", Source: "broker default log.cleanup.policy"},
			TimestampType:  proof.ConfigValue{Present: true, Value: "CreateTime", Source: "broker default log.message.timestamp.type"},
			TopicID:        fmt.Sprintf("%032x", ti+1),
		}
		for p := range 12 {
			topic.Partitions = append(topic.Partitions, proof.PartitionObservation{
				Partition: int32(p), LogStart: 0, LogEnd: 20, Committed: 15,
				CommittedTimestamp: now.Add(-time.Minute), PrecedingTimestamp: now.Add(-2 * time.Minute),
				ShareLag: -1,
			})
		}
		obs.Topics = append(obs.Topics, topic)
	}
	return obs
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeapPerPolicy measures what the manager keeps per policy
// between two checks, in make bench-scale's shape (each policy its own
// group on 2 topics of 12 partitions, one Kafka connection): the
// Coalescer's per-target state once every policy has reconciled with the
// pass's observation (coalescer-B/policy), the policy's metric series
// (metrics-B/policy), and the policy object with the status that
// reconcile wrote, as the informer caches it (policy-B/policy). Times are
// not the point (each op builds and tears down the state of 1,000
// policies); heap bytes are exact on a loaded machine.
//
//	go test ./controllers/ -run '^$' -bench BenchmarkHeapPerPolicy -benchtime 3x
func BenchmarkHeapPerPolicy(b *testing.B) {
	const policies = 1000
	conn := kafka.Connection{BootstrapServers: []string{"kafka-0:9092", "kafka-1:9092", "kafka-2:9092"}}
	var coalescerB, metricsB, policyB float64
	for b.Loop() {
		h0 := liveHeap()
		c := coalesce.New(shapeObserver{}, coalesce.Options{Linger: time.Millisecond})
		var ready sync.WaitGroup
		ready.Add(policies)
		c.SetNotify(func(types.NamespacedName) { ready.Done() })
		keys := make([]types.NamespacedName, policies)
		targets := make([]kafka.Target, policies)
		for i := range policies {
			keys[i] = types.NamespacedName{Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("consumer-%05d", i)}
			targets[i] = kafka.Target{Group: fmt.Sprintf("group-%05d", i),
				Topics: []string{fmt.Sprintf("topic-%03d", (2*i)%300), fmt.Sprintf("topic-%03d", (2*i+1)%300)}}
			if _, _, fresh := c.Request(keys[i], conn, targets[i], time.Minute); fresh {
				b.Fatal("nothing observed yet, yet fresh")
			}
		}
		ready.Wait()

		// Every policy reconciles with the pass's observation: its status,
		// its series, and the object the informer caches with that status.
		cached := make([]*rgv1.ConsumerRetentionPolicy, policies)
		for i, key := range keys {
			obs, _, fresh := c.Request(key, conn, targets[i], time.Minute)
			if !fresh {
				b.Fatalf("policy %d: the pass's observation is not served", i)
			}
			p := &rgv1.ConsumerRetentionPolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: types.UID(fmt.Sprintf("uid-%05d", i)),
					Generation: 1, ResourceVersion: strconv.Itoa(1000 + i), Labels: map[string]string{"app": key.Name}},
				Spec: rgv1.ConsumerRetentionPolicySpec{GroupID: targets[i].Group, Topics: targets[i].Topics,
					RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour}},
			}
			pol := proof.Policy{UID: string(p.UID), GroupID: targets[i].Group, Topics: targets[i].Topics, RecoveryWindow: 72 * time.Hour}
			out := computeStatus(p.Status, statusInput{Generation: 1, Policy: pol, Now: time.Now(), Observation: &obs,
				Interval: time.Minute, Servers: conn.BootstrapServers})
			if out.Result == nil || out.Result.Verdict != proof.Proven {
				b.Fatalf("policy %d: want a Proven result, got %+v", i, out.Result)
			}
			p.Status = out.Status
			cached[i] = p
			metricsState.record(key, policyFacts{GroupID: targets[i].Group, Enforcement: "Deny", RecoveryWindow: 72 * time.Hour,
				ReadyReason: proof.ReasonProven}, out.Result)
		}

		h1 := liveHeap()
		for _, key := range keys {
			metricsState.forget(key)
		}
		h2 := liveHeap()
		runtime.KeepAlive(cached)
		cached = nil
		h3 := liveHeap()
		runtime.KeepAlive(cached)
		c.Close()
		runtime.KeepAlive(c)
		c = nil
		h4 := liveHeap()
		runtime.KeepAlive(c)
		_ = h0
		metricsB = float64(int64(h1)-int64(h2)) / policies
		policyB = float64(int64(h2)-int64(h3)) / policies
		coalescerB = float64(int64(h3)-int64(h4)) / policies
	}
	b.ReportMetric(coalescerB, "coalescer-B/policy")
	b.ReportMetric(metricsB, "metrics-B/policy")
	b.ReportMetric(policyB, "policy-B/policy")
	b.ReportMetric(coalescerB+metricsB+policyB, "B/policy")
}
