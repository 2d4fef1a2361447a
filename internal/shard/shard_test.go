package shard

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

func policy(labels map[string]string) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "ledger-settle", Namespace: "ledger", Labels: labels}}
}

// Seed 003 (a platform team past one manager moves the ledger's
// connection between shards): the shard's name is stable across
// processes and spellings of one selector, differs between shards, and
// the default shard's notin selector takes unlabelled policies (no gap).
func TestShardSelectsAndNamesItself(t *testing.T) {
	g := NewWithT(t)
	a, err := Parse(rgv1.ShardLabel + "=a")
	g.Expect(err).NotTo(HaveOccurred())
	a2, err := Parse(rgv1.ShardLabel + " = a")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := Parse(rgv1.ShardLabel + "=b")
	g.Expect(err).NotTo(HaveOccurred())
	rest, err := Parse(rgv1.ShardLabel + " notin (a,b)")
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(a.Name()).To(Equal(a2.Name()), "one selector, one name")
	g.Expect(a.Name()).To(HaveLen(10))
	g.Expect(a.Name()).NotTo(Equal(b.Name()))
	g.Expect(a.Name()).NotTo(Equal(rest.Name()))

	unlabelled, inA, inC := policy(nil), policy(map[string]string{rgv1.ShardLabel: "a"}), policy(map[string]string{rgv1.ShardLabel: "c"})
	g.Expect(a.Owns(inA)).To(BeTrue())
	g.Expect(a.Owns(unlabelled)).To(BeFalse())
	g.Expect(rest.Owns(unlabelled)).To(BeTrue(), "the default shard takes a policy without the label")
	g.Expect(rest.Owns(inC)).To(BeTrue(), "and one naming a shard that does not run")
	g.Expect(rest.Owns(inA)).To(BeFalse())

	none, err := Parse("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none.Sharded()).To(BeFalse())
	g.Expect(none.Name()).To(BeEmpty())
	g.Expect(none.Owns(inA)).To(BeTrue())
	var unset *Shard
	g.Expect(unset.Owns(inA)).To(BeTrue(), "no shard: everything")

	_, err = Parse(rgv1.ShardLabel + " in a")
	g.Expect(err).To(MatchError(ContainSubstring("is not a label selector")))
}

// A policy relabelled out of the shard still reaches the old shard's
// reconciler (which forgets it); one relabelled in reaches the new one.
func TestShardPredicateSeesPoliciesLeaveAndJoin(t *testing.T) {
	g := NewWithT(t)
	a, _ := Parse(rgv1.ShardLabel + "=a")
	inA, inB := policy(map[string]string{rgv1.ShardLabel: "a"}), policy(map[string]string{rgv1.ShardLabel: "b"})
	p := a.Predicate()
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: inA, ObjectNew: inB})).To(BeTrue(), "leaving")
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: inB, ObjectNew: inA})).To(BeTrue(), "joining")
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: inB, ObjectNew: inB})).To(BeFalse(), "another shard's")
	g.Expect(p.Create(event.CreateEvent{Object: inB})).To(BeFalse())
}

// A shard's heartbeat Lease confirms only the policies its selector
// selects: a policy moved to another shard falls back to its own
// checkedAt until the new shard names its Lease.
func TestLeaseVouchesOnlyForItsShard(t *testing.T) {
	g := NewWithT(t)
	a, _ := Parse(rgv1.ShardLabel + "=a")
	lease := map[string]string{SelectorAnnotation: a.String()}
	g.Expect(Vouches(lease, map[string]string{rgv1.ShardLabel: "a"})).To(BeTrue())
	g.Expect(Vouches(lease, map[string]string{rgv1.ShardLabel: "b"})).To(BeFalse())
	g.Expect(Vouches(nil, map[string]string{rgv1.ShardLabel: "b"})).To(BeTrue(), "an unsharded manager's Lease")
	g.Expect(Vouches(map[string]string{SelectorAnnotation: "in in ("}, nil)).To(BeFalse(), "unparsable: fail closed")
}
