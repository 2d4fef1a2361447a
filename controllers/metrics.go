package controllers

import (
	"slices"
	"sync"
	"time"
	"unique"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Prometheus metrics, on controller-runtime's registry (served by the
// manager's metrics endpoint). Every series of a policy is removed when the
// policy is deleted. A value that is not known (no observation, or the
// brokers could not say) has no series rather than a made-up one: alert on
// retentionguard_policy_verdict for Unknown.
//
// The per-policy series are not GaugeVecs (issue 26): a vector keeps a
// gauge, its label pairs and its hash entry per series, about 450 bytes
// each, 11 series a policy in make bench-scale's shape. policyMetrics keeps
// what the series say of each policy in one small struct, with label
// values shared (unique), and writes the series out at each scrape: the
// same names, labels and values.
var (
	policyVerdict = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_policy_verdict",
		Help: "1 for the policy's current verdict (Proven, Violated or Unknown), 0 for the others.",
	}, "verdict")

	recoveryHeadroomExpiration = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_recovery_headroom_expiration_timestamp_seconds",
		Help: "When the group's recovery headroom runs out, in unix seconds: the soonest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms (a caught-up partition: the check's time + retention.ms). " +
			"Alert on (this - time()): it stays right between checks.",
	})

	// Deprecated: recoveryHeadroomExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	recoveryHeadroomSeconds = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_recovery_headroom_seconds",
		Help: "Deprecated, removed in a later release: use retentionguard_recovery_headroom_expiration_timestamp_seconds - time(). " +
			"How long the group could go down, as of the last check, without losing records: the smallest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms - the check's time.",
	})

	expiredRecords = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_expired_records",
		Help: "Records of the topic deleted by retention before the group read them (log start minus committed offset, summed over partitions).",
	}, "topic")

	groupOffsetsExpiration = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_group_offsets_expiration_timestamp_seconds",
		Help: "When the group's soonest committed offset may expire, in unix seconds, on the clock Kafka uses for the group, named by " +
			"the clock label (GroupEmpty: a classic group's offsets, offsets.retention.minutes after it became Empty; " +
			"LastCommit: simple, KIP-848 and streams groups' offsets, after each offset's last commit). " +
			"No series while no clock runs (a classic group with members) or no commit can be dated. " +
			"Alert on (this - time()): it stays right between checks.",
	}, "clock")

	// Deprecated: groupOffsetsExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	groupOffsetsExpirySeconds = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_group_offsets_expiry_seconds",
		Help: "Deprecated, removed in a later release: use retentionguard_group_offsets_expiration_timestamp_seconds - time(). " +
			"How long, as of the last check, until the group's soonest committed offset may expire, on the clock named by the clock label.",
	}, "clock")

	recoveryWindowSeconds = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_policy_recovery_window_seconds",
		Help: "The policy's spec.recoveryWindow: the longest downtime its group must survive. Compare " +
			"retentionguard_recovery_headroom_expiration_timestamp_seconds - time() and " +
			"retentionguard_group_offsets_expiration_timestamp_seconds - time() with it.",
	})

	policyInfo = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_policy_info",
		Help: "Always 1: the policy's consumer group, enforcement (Deny, Warn, Audit) and the reason of its Ready condition, " +
			"to join on (namespace, policy).",
	}, "consumer_group", "enforcement", "reason")

	cronJobScheduleGapSeconds = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_cronjob_schedule_gap_seconds",
		Help: "The longest time between two scheduled runs of a CronJob the policy selects, over the next year " +
			"(startingDeadlineSeconds included; no series while suspended or unreadable). " +
			"Compare with offsets.retention.minutes: a gap that reaches it expires the group's offsets between runs.",
	}, "cronjob")

	offsetsTopicReadable = policyDesc(prometheus.GaugeOpts{
		Name: "retentionguard_offsets_topic_readable",
		Help: "1 when the last check read the group's exact commit and Empty times from __consumer_offsets, 0 when it could not " +
			"and bounded them instead; the reason label says why (Read, Denied: grant the principal Read on the topic, Absent, " +
			"Undecodable, NotRead). No series for a policy with spec.kafka.readOffsetsTopic: false.",
	}, "reason")

	liveChecksBusy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "retentionguard_live_checks_busy_total",
		Help: "Live checks (the webhook's re-check of a policy whose status proof is stale) that found every live slot of " +
			"their Kafka connection busy until their deadline, so their policy was judged unproven: the cluster answers slowly " +
			"or rollouts outpace it; see --live-checks-per-connection.",
	})

	kafkaRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "retentionguard_kafka_request_duration_seconds",
		Help:    "Round trip of the Kafka requests made to observe clusters, by Kafka API.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1ms .. ~16s
	}, []string{"api"})
)

// policyDesc describes a per-policy gauge: labels namespace, policy, then
// more.
func policyDesc(o prometheus.GaugeOpts, more ...string) *prometheus.Desc {
	return prometheus.NewDesc(o.Name, o.Help, append([]string{"namespace", "policy"}, more...), nil)
}

func init() {
	metrics.Registry.MustRegister(metricsState, kafkaRequestDuration, liveChecksBusy)
}

// ObserveKafkaRequest feeds retentionguard_kafka_request_duration_seconds.
// Pass it to kafka.WithRequestHook.
func ObserveKafkaRequest(api string, took time.Duration, _ error) {
	kafkaRequestDuration.WithLabelValues(api).Observe(took.Seconds())
}

// CountLiveCheckBusy counts a live check that found every live slot of its
// connection busy (coalesce.Options.OnLiveBusy).
func CountLiveCheckBusy() { liveChecksBusy.Inc() }

// metricsState holds the per-policy series of this process.
var metricsState = newPolicyMetrics()

var verdicts = []rgv1.Verdict{rgv1.VerdictProven, rgv1.VerdictViolated, rgv1.VerdictUnknown}

// policyMetrics is the collector of the per-policy series: what each
// policy's say, written out at each scrape.
type policyMetrics struct {
	mu       sync.RWMutex
	policies map[types.NamespacedName]*policySeries
}

// policySeries is what one policy's series say. Label values are interned
// (unique.Make): enforcement, reasons, clocks and topics repeat across
// policies.
type policySeries struct {
	recorded                   bool // record has run (recordSchedules may come first)
	verdict                    proof.Verdict
	group, enforcement, reason string
	window                     float64
	hasHeadroom                bool
	headroomAt, headroomIn     float64
	hasOffsets                 bool
	clock                      string
	offsetsAt, offsetsIn       float64
	expired                    []labeledValue // by topic
	gaps                       []labeledValue // by CronJob
	// offsetsTopic: the read was asked; offsetsTopicReason why it failed
	// (empty when read).
	offsetsTopic       bool
	offsetsTopicReason string
}

type labeledValue struct {
	label string
	value float64
}

func newPolicyMetrics() *policyMetrics {
	return &policyMetrics{policies: make(map[types.NamespacedName]*policySeries)}
}

func intern(s string) string { return unique.Make(s).Value() }

// seriesLocked returns the policy's entry, creating it.
func (m *policyMetrics) seriesLocked(policy types.NamespacedName) *policySeries {
	s := m.policies[policy]
	if s == nil {
		s = &policySeries{}
		m.policies[policy] = s
	}
	return s
}

// recordSchedules sets the gap series of the CronJobs the policy selects;
// those it no longer selects, suspended ones and unreadable schedules
// have none.
func (m *policyMetrics) recordSchedules(policy types.NamespacedName, cjs []assemble.CronJob) {
	var gaps []labeledValue
	for _, c := range cjs {
		if c.Suspended || c.Err != nil {
			continue
		}
		gaps = append(gaps, labeledValue{label: c.Name, value: c.Gap.Gap.Seconds()})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seriesLocked(policy).gaps = gaps
}

// policyFacts are what the series say about the policy itself, beside
// its proof.
type policyFacts struct {
	GroupID        string
	Enforcement    string
	RecoveryWindow time.Duration
	// ReadyReason is the reason of the policy's Ready condition.
	ReadyReason string
}

// record sets the policy's series from a proof result and the policy it
// judged.
func (m *policyMetrics) record(policy types.NamespacedName, facts policyFacts, res *proof.Result) {
	// Expired records per topic, for the topics whose partitions were
	// observed (a topic whose offsets could not be read has no series).
	var expired []labeledValue
	for _, p := range res.Partitions {
		if p.Verdict == proof.Unknown {
			continue
		}
		i := slices.IndexFunc(expired, func(e labeledValue) bool { return e.label == p.Topic })
		if i < 0 {
			expired = append(expired, labeledValue{label: intern(p.Topic)})
			i = len(expired) - 1
		}
		expired[i].value += float64(p.ExpiredRecords)
	}
	next := policySeries{
		recorded: true, verdict: res.Verdict,
		group: facts.GroupID, enforcement: intern(facts.Enforcement), reason: intern(facts.ReadyReason),
		window:       facts.RecoveryWindow.Seconds(),
		expired:      slices.Clip(expired),
		offsetsTopic: res.OffsetsTopic.Requested, offsetsTopicReason: intern(res.OffsetsTopic.Reason),
	}
	// The proof's own times, absolute: a series that is not set again
	// until the next check still says when, and (it - time()) how long.
	if res.HasRecoveryHeadroom {
		next.hasHeadroom = true
		next.headroomAt, next.headroomIn = unixSeconds(res.RecoveryHeadroomExpiresAt), res.RecoveryHeadroom.Seconds()
	}
	if res.HasGroupOffsetsExpireIn {
		clock := res.OffsetExpiry.Clock
		if clock == "" {
			clock = "Unknown"
		}
		next.hasOffsets, next.clock = true, intern(clock)
		next.offsetsAt, next.offsetsIn = unixSeconds(res.OffsetExpiry.Soonest), res.GroupOffsetsExpireIn.Seconds()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seriesLocked(policy)
	if s.group == next.group {
		next.group = s.group // keep one copy of the string
	}
	next.gaps = s.gaps
	*s = next
}

// unixSeconds is t in unix seconds, to the millisecond (cert-manager's
// certmanager_certificate_expiration_timestamp_seconds is in whole
// seconds; a millisecond keeps a headroom of seconds exact).
func unixSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1e3
}

// forget removes every series of a deleted policy.
func (m *policyMetrics) forget(policy types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.policies, policy)
}

// Describe implements prometheus.Collector.
func (m *policyMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{policyVerdict, recoveryHeadroomExpiration, recoveryHeadroomSeconds, expiredRecords,
		groupOffsetsExpiration, groupOffsetsExpirySeconds, recoveryWindowSeconds, policyInfo, cronJobScheduleGapSeconds,
		offsetsTopicReadable} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: every policy's series.
func (m *policyMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for key, s := range m.policies {
		ns, name := key.Namespace, key.Name
		for _, g := range s.gaps {
			gauge(cronJobScheduleGapSeconds, g.value, ns, name, g.label)
		}
		if !s.recorded {
			continue
		}
		gauge(policyInfo, 1, ns, name, s.group, s.enforcement, s.reason)
		gauge(recoveryWindowSeconds, s.window, ns, name)
		for _, v := range verdicts {
			value := 0.0
			if string(v) == string(s.verdict) {
				value = 1
			}
			gauge(policyVerdict, value, ns, name, string(v))
		}
		if s.hasHeadroom {
			gauge(recoveryHeadroomExpiration, s.headroomAt, ns, name)
			gauge(recoveryHeadroomSeconds, s.headroomIn, ns, name)
		}
		if s.hasOffsets {
			gauge(groupOffsetsExpiration, s.offsetsAt, ns, name, s.clock)
			gauge(groupOffsetsExpirySeconds, s.offsetsIn, ns, name, s.clock)
		}
		for _, e := range s.expired {
			gauge(expiredRecords, e.value, ns, name, e.label)
		}
		if s.offsetsTopic {
			if s.offsetsTopicReason == "" {
				gauge(offsetsTopicReadable, 1, ns, name, "Read")
			} else {
				gauge(offsetsTopicReadable, 0, ns, name, s.offsetsTopicReason)
			}
		}
	}
}
