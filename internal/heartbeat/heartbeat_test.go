package heartbeat

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/shard"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

func TestHeartbeatLeaseName(t *testing.T) {
	g := NewWithT(t)
	a := LeaseName([]string{"Kafka-1:9092", "kafka-0:9092"}, time.Minute)
	g.Expect(a).To(Equal(LeaseName([]string{"kafka-0:9092", " kafka-1:9092", "kafka-0:9092"}, time.Minute)),
		"order, case, blanks and duplicates do not matter")
	g.Expect(a).NotTo(Equal(LeaseName([]string{"kafka-0:9092", "kafka-1:9092"}, 10*time.Minute)), "one Lease per interval")
	g.Expect(a).NotTo(Equal(LeaseName([]string{"kafka-0:9092"}, time.Minute)), "one Lease per cluster")
	g.Expect(len(a)).To(BeNumerically("<=", 63), "a valid object name")
}

// The leader renews a Lease only to the oldest confirmation of the
// policies naming it, and not at all while one of them has none: a new
// leader, a policy whose check is pending or failing, or one that moved.
func TestDueRenewals(t *testing.T) {
	const ns = "retention-guard"
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	hbA := &rgv1.HeartbeatReference{Namespace: ns, Name: "hb-a"}
	hbB := &rgv1.HeartbeatReference{Namespace: ns, Name: "hb-b"}
	policy := func(name string, ref *rgv1.HeartbeatReference, mut ...func(*rgv1.ConsumerRetentionPolicy)) rgv1.ConsumerRetentionPolicy {
		p := rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, UID: types.UID("uid-" + name), Generation: 1},
			Status: rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: 1, Heartbeat: ref,
				Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictProven, CheckedAt: metav1.NewTime(t0.Add(-time.Hour))}}}
		for _, m := range mut {
			m(&p)
		}
		return p
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "team", Name: name} }
	conf := func(name, lease string, at time.Duration) confirmation {
		return confirmation{uid: types.UID("uid-" + name), lease: lease, at: t0.Add(at), servers: []string{"kafka:9092"}, interval: time.Minute}
	}
	renewals := func(ps []rgv1.ConsumerRetentionPolicy, cs map[types.NamespacedName]confirmation) map[string]time.Time {
		out := map[string]time.Time{}
		for name, d := range dueRenewals(ns, ps, cs) {
			out[name] = d.renew
		}
		return out
	}

	cases := []struct {
		name      string
		policies  []rgv1.ConsumerRetentionPolicy
		confirmed map[types.NamespacedName]confirmation
		want      map[string]time.Time
	}{
		{
			name:     "the oldest confirmation of the policies naming a Lease",
			policies: []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", hbA), policy("c", hbB)},
			confirmed: map[types.NamespacedName]confirmation{
				key("a"): conf("a", "hb-a", 2*time.Second), key("b"): conf("b", "hb-a", -3*time.Second), key("c"): conf("c", "hb-b", 0),
			},
			want: map[string]time.Time{"hb-a": t0.Add(-3 * time.Second), "hb-b": t0},
		},
		{
			name:     "a new leader has confirmed nothing yet: nothing is renewed",
			policies: []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", hbA)},
			want:     map[string]time.Time{},
		},
		{
			name:      "one policy not yet (or no longer) confirmed holds its Lease back, not the others",
			policies:  []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", hbA), policy("c", hbB)},
			confirmed: map[types.NamespacedName]confirmation{key("a"): conf("a", "hb-a", 0), key("c"): conf("c", "hb-b", 0)},
			want:      map[string]time.Time{"hb-b": t0},
		},
		{
			name:      "a policy whose status still names the old Lease holds it back until the cache shows its move",
			policies:  []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", hbA)},
			confirmed: map[types.NamespacedName]confirmation{key("a"): conf("a", "hb-a", 0), key("b"): conf("b", "hb-b", time.Second)},
			want:      map[string]time.Time{"hb-b": t0.Add(time.Second)},
		},
		{
			name:      "a policy recreated under the same name is not confirmed by its predecessor",
			policies:  []rgv1.ConsumerRetentionPolicy{policy("a", hbA, func(p *rgv1.ConsumerRetentionPolicy) { p.UID = "new" })},
			confirmed: map[types.NamespacedName]confirmation{key("a"): conf("a", "hb-a", 0)},
			want:      map[string]time.Time{},
		},
		{
			name:      "a confirmation the cache does not show yet counts",
			policies:  []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", nil, func(p *rgv1.ConsumerRetentionPolicy) { p.Status = rgv1.ConsumerRetentionPolicyStatus{} })},
			confirmed: map[types.NamespacedName]confirmation{key("a"): conf("a", "hb-a", 0), key("b"): conf("b", "hb-a", -time.Minute)},
			want:      map[string]time.Time{"hb-a": t0.Add(-time.Minute)},
		},
		{
			name: "a proof of an older generation does not count (the webhook does not use it); nor a Lease in another namespace",
			policies: []rgv1.ConsumerRetentionPolicy{policy("a", hbA), policy("b", hbA, func(p *rgv1.ConsumerRetentionPolicy) { p.Generation = 2 }),
				policy("c", &rgv1.HeartbeatReference{Namespace: "elsewhere", Name: "hb-a"})},
			confirmed: map[types.NamespacedName]confirmation{key("a"): conf("a", "hb-a", 0)},
			want:      map[string]time.Time{"hb-a": t0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.confirmed == nil {
				tc.confirmed = map[types.NamespacedName]confirmation{}
			}
			g.Expect(renewals(tc.policies, tc.confirmed)).To(Equal(tc.want))
		})
	}
}

// Seed 003, past one manager: a shard writes its own Lease (its name, its
// shard label and selector) for its own policies, and never deletes or
// renews another shard's Lease, however stale; its own stale Lease that no
// policy names any more it deletes, as an unsharded manager does.
func TestShardRenewsOnlyItsOwnLeases(t *testing.T) {
	g := NewWithT(t)
	const ns = "retention-guard"
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	a, err := shard.Parse(rgv1.ShardLabel + "=a")
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := shard.Parse(rgv1.ShardLabel + "=b")
	servers := []string{"kafka:9092"}
	g.Expect(ShardLeaseName(a, servers, time.Minute)).NotTo(Equal(ShardLeaseName(b, servers, time.Minute)), "two shards on one cluster")
	g.Expect(ShardLeaseName(nil, servers, time.Minute)).To(Equal(LeaseName(servers, time.Minute)), "unsharded names unchanged")

	stale := metav1.NewMicroTime(now.Add(-time.Hour))
	staleLease := func(name string, sh *shard.Shard) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{Label: "true", rgv1.ShardLabel: sh.Name()},
			Annotations: map[string]string{heartbeatIntervalAnnotation: "1m"}},
			Spec: coordinationv1.LeaseSpec{RenewTime: &stale}}
	}
	mine := ShardLeaseName(a, servers, time.Minute)
	p := &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: "ledger-settle", UID: "u1", Generation: 1,
		Labels: map[string]string{rgv1.ShardLabel: "a"}},
		Status: rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: 1, Heartbeat: &rgv1.HeartbeatReference{Namespace: ns, Name: mine},
			Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictProven}}}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).
		WithObjects(p, staleLease("theirs", b), staleLease("mine-unused", a)).Build()
	h := &Leases{Client: c, Namespace: ns, Shard: a, Identity: "shard-a-0", now: func() time.Time { return now }}
	h.Confirm(client.ObjectKeyFromObject(p), p.UID, p.Status.Heartbeat, servers, time.Minute, now.Add(-10*time.Second))
	g.Expect(h.renew(context.Background())).To(Succeed())

	var l coordinationv1.Lease
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: mine}, &l)).To(Succeed())
	g.Expect(l.Labels).To(HaveKeyWithValue(rgv1.ShardLabel, a.Name()))
	g.Expect(l.Annotations).To(HaveKeyWithValue(shard.SelectorAnnotation, a.String()))
	g.Expect(l.Spec.RenewTime.Time).To(BeTemporally("==", now.Add(-10*time.Second)))
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "theirs"}, &l)).To(Succeed(), "another shard's Lease deleted")
	g.Expect(l.Spec.RenewTime.Time).To(BeTemporally("==", stale.Time), "another shard's Lease written")
	err = c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mine-unused"}, &l)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "its own stale unused Lease: %v", err)
}
