package controllers

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// scaleFigures is what one run of the scale test measured.
type scaleFigures struct {
	policies       int
	allProvenAfter time.Duration
	window         time.Duration
	intervals      float64
	requests       int
	byAPI          map[string]int
	passes         int64
	targets        int64
	startupPasses  int64
	perPass        []int          // Kafka requests of each steady pass
	writes         map[string]int // API writes in the window, by method and resource
}

func (f scaleFigures) perInterval() float64 { return float64(f.requests) / f.intervals }

func (f scaleFigures) String() string {
	apis := slices.Sorted(maps.Keys(f.byAPI))
	parts := make([]string, 0, len(apis))
	for _, a := range apis {
		parts = append(parts, fmt.Sprintf("%s=%d", a, f.byAPI[a]))
	}
	return fmt.Sprintf("%d policies: all Proven %s after creation (%d passes while they were being created); over %s (%.1f intervals): %d Kafka requests "+
		"(%.1f per interval), %d observation passes (%.2f per interval) carrying %d targets, requests per pass %v; by API: %s; API writes: %v",
		f.policies, f.allProvenAfter.Round(time.Millisecond), f.startupPasses, f.window, f.intervals, f.requests, f.perInterval(),
		f.passes, float64(f.passes)/f.intervals, f.targets, f.perPass, strings.Join(parts, " "), f.writes)
}

// mode is the most frequent value (the smallest of equals), -1 for none.
func mode(v []int) int {
	count := map[int]int{}
	best := -1
	for _, x := range v {
		count[x]++
		if best < 0 || count[x] > count[best] || count[x] == count[best] && x < best {
			best = x
		}
	}
	return best
}

// N policies on one cluster cost what one costs: the Coalescer runs one
// batched observation per interval for all of them, each pass sends the
// same Kafka requests whatever the number of policies, and once proven,
// unchanged proofs cost no status write at all (the heartbeat Lease
// confirms them: about one write per pass for all policies). The figures
// are logged for docs/benchmarks.md.
func TestManyPoliciesShareOneObservation(t *testing.T) {
	const (
		topics   = 10
		many     = 200
		interval = 3 * time.Second
		window   = 5 * interval
	)
	c := kafkatest.NewCluster(t)
	for i := range topics {
		name := fmt.Sprintf("topic-%02d", i)
		c.CreateTopic(t, name, 3, map[string]string{"retention.ms": strconv.FormatInt(sevenDaysMs, 10)})
		c.Produce(t, name, 30)
	}
	groups := make([]string, many)
	for i := range many {
		groups[i] = fmt.Sprintf("group-%03d", i)
		// Simple groups (commits without joining): each commit dated by
		// the record before it, one Fetch per leader for all groups. The
		// groups lag, so their headroom and offset expiry are measured
		// from now and move a little on every check.
		c.CommitOffsets(t, groups[i], fmt.Sprintf("topic-%02d", i%topics), map[int32]int64{0: 10, 1: 5, 2: 1})
	}

	measure := func(n int) scaleFigures {
		t.Helper()
		g := NewWithT(t)
		h := startManager(t, harnessOptions{interval: interval})
		defer h.stop()
		created := time.Now()
		for i := range n {
			createPolicy(t, h.ns, groups[i], groups[i], []string{fmt.Sprintf("topic-%02d", i%topics)},
				policyOptions{servers: c.Addrs})
		}
		g.Eventually(func(g Gomega) int {
			return provenIn(g, t, h.ns)
		}, 90*time.Second, 200*time.Millisecond).Should(Equal(n))
		f := scaleFigures{policies: n, allProvenAfter: time.Since(created), window: window,
			startupPasses: h.observer.passes.Load()}
		// Two more intervals: the first proofs' events are sent, and every
		// policy is re-proved once on a pass made after they were all
		// proven (requeues are an interval ± 10% apart). Until then the
		// heartbeat's oldest confirmation can still step through the many
		// passes made while the policies were being created, one renewal
		// each, which is not the steady state being counted.
		time.Sleep(2 * interval) // letting asynchronous work settle, not waiting for a condition

		// Steady state: count what a few intervals cost.
		h.requests.take()
		h.writes.take()
		h.observer.takePerPass()
		passes, targets := h.observer.passes.Load(), h.observer.targets.Load()
		start := time.Now()
		time.Sleep(window) // the measurement period, not a wait for a condition
		f.byAPI, f.requests = h.requests.take()
		f.writes = h.writes.take()
		f.perPass = h.observer.takePerPass()
		f.intervals = float64(time.Since(start)) / float64(interval)
		f.passes = h.observer.passes.Load() - passes
		f.targets = h.observer.targets.Load() - targets
		return f
	}

	one := measure(1)
	t.Log(one)
	lots := measure(many)
	t.Log(lots)
	t.Logf("%d policies cost %.2f× the Kafka requests of one", many, lots.perInterval()/one.perInterval())

	g := NewWithT(t)
	g.Expect(one.passes).To(BeNumerically(">=", 3), "one policy is checked about once per interval")
	// Deterministic: a pass asks each broker the same batched requests
	// whether it carries one target or 200.
	g.Expect(mode(lots.perPass)).To(Equal(mode(one.perPass)),
		"Kafka requests per pass with %d policies (%v) and with one (%v)", many, lots.perPass, one.perPass)
	// Generous on timing: the design gives about one pass per interval
	// either way (a little more for many policies, whose earliest jitter
	// comes first); N separate observations would cost N times as much.
	g.Expect(lots.perInterval()).To(BeNumerically("<=", 3*one.perInterval()),
		"%d policies must cost a small constant of what one costs, not %d times", many, many)
	g.Expect(float64(lots.passes)).To(BeNumerically("<=", 3*float64(one.passes)))
	g.Expect(lots.targets).To(BeNumerically(">=", int64(many)*(lots.passes-1)), "each pass carries every policy's target")

	// Deterministic: proofs that did not change are not written again,
	// however many policies re-prove them; the heartbeat Lease of the
	// cluster is renewed about once per pass for all of them.
	for _, f := range []scaleFigures{one, lots} {
		g.Expect(f.writes).NotTo(HaveKey("PATCH consumerretentionpolicies/status"), "%d policies: status writes %v", f.policies, f.writes)
		g.Expect(f.writes).NotTo(HaveKey("POST events"), "%d policies: events of unchanged verdicts", f.policies)
		// At most one renewal per pass (a pass that straddles the window's
		// start may add one).
		// Each renewal is one request: the Lease is patched (no conflict
		// with a cache that is behind) and never written twice with one
		// renewTime.
		g.Expect(f.writes["PATCH leases"]).To(And(BeNumerically(">=", 1), BeNumerically("<=", f.passes+1)),
			"%d policies: heartbeat renewals %v for %d passes", f.policies, f.writes, f.passes)
		g.Expect(f.writes).NotTo(HaveKey("PUT leases"), "%d policies: %v", f.policies, f.writes)
	}
}

// provenIn counts the policies of namespace ns whose status says Proven.
func provenIn(g Gomega, t *testing.T, ns string) int {
	var list rgv1.ConsumerRetentionPolicyList
	g.Expect(env.Client.List(testCtx(t), &list, client.InNamespace(ns))).To(Succeed())
	proven := 0
	for _, p := range list.Items {
		if p.Status.Proof != nil && p.Status.Proof.Verdict == rgv1.VerdictProven {
			proven++
		}
	}
	return proven
}
