package controllers

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// Seed 000 (fan-out) installed across a fleet: many policies proven at
// once each cost one status write, not a pending status first and the
// proof second (issue 26: the client's QPS bounded the time to prove them
// all at two writes each), and a person who applies one still sees its
// Proven event.
func TestFirstProofIsOneWrite(t *testing.T) {
	const policies = 30
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 3, map[string]string{"retention.ms": fmt.Sprint(sevenDaysMs)})
	c.Produce(t, "outbox", 30)
	for i := range policies {
		c.CommitOffsets(t, fmt.Sprintf("fanout-%02d", i), "outbox", map[int32]int64{0: 10, 1: 5, 2: 1})
	}
	h := startManager(t, harnessOptions{interval: time.Minute})
	g := NewWithT(t)
	h.writes.take()
	for i := range policies {
		name := fmt.Sprintf("fanout-%02d", i)
		createPolicy(t, h.ns, name, name, []string{"outbox"}, policyOptions{servers: c.Addrs})
	}
	g.Eventually(func(g Gomega) int {
		return provenIn(g, t, h.ns)
	}, 2*eventually, poll).Should(Equal(policies))
	for i := range policies {
		g.Eventually(eventWith(h.ns, fmt.Sprintf("fanout-%02d", i), EventReasonProven), eventually, poll).ShouldNot(BeNil(),
			"within the first-proof event budget, each policy has its Proven event")
	}
	writes := h.writes.take()
	g.Expect(writes["PATCH consumerretentionpolicies/status"]).To(Equal(policies), "one status write per first proof: %v", writes)
	g.Expect(writes["POST events"]).To(Equal(policies), "one event per first proof: %v", writes)
}

// The first-proof event budget sheds only routine Proven events: a burst
// of first proofs sends at most its burst of them, and never holds back
// an event a person acts on.
func TestFirstProofEventBudget(t *testing.T) {
	g := NewWithT(t)
	var f firstProofs
	sent := 0
	for range 1000 {
		if f.event(&eventSpec{Reason: EventReasonProven}) != nil {
			sent++
		}
	}
	// 100 at once, then 10 per second: the loop takes far less than the
	// seconds that would add a few more.
	g.Expect(sent).To(BeNumerically(">=", 100))
	g.Expect(sent).To(BeNumerically("<", 200))
	for _, reason := range []string{EventReasonRecovered, "CommittedOffsetExpired", "BrokerUnreachable"} {
		g.Expect(f.event(&eventSpec{Reason: reason})).NotTo(BeNil(), reason)
	}
	g.Expect(f.event(nil)).To(BeNil())
}

// A held pending status ends when the observation comes (no write is
// owed), and otherwise after the grace, with the policy reconciled again
// to write it.
func TestFirstProofHoldsThePendingStatus(t *testing.T) {
	g := NewWithT(t)
	enqueued := make(chan types.NamespacedName, 4)
	f := firstProofs{grace: 50 * time.Millisecond}
	key := types.NamespacedName{Namespace: "ns", Name: "fanout"}
	g.Expect(f.hold(key, true)).To(BeFalse(), "without a queue to come back by, nothing is held")

	f.setEnqueue(func(k types.NamespacedName) { enqueued <- k })
	g.Expect(f.hold(key, true)).To(BeTrue())
	g.Expect(f.hold(key, true)).To(BeTrue(), "still within the grace")
	g.Expect(f.hold(key, false)).To(BeFalse(), "the observation came")
	g.Consistently(enqueued, 200*time.Millisecond).ShouldNot(Receive(), "nothing owed once proven")

	g.Expect(f.hold(key, true)).To(BeTrue(), "a new generation waits again")
	g.Eventually(enqueued).Should(Receive(Equal(key)))
	g.Expect(f.hold(key, true)).To(BeFalse(), "past the grace the pending status is written")
	f.forget(key)
	g.Expect(f.hold(key, true)).To(BeTrue())
}
