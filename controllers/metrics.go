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

// Prometheus metrics, served by the manager's metrics endpoint. Every
// series of a policy is removed when the policy is deleted. A value that
// is not known (no observation, or the brokers could not say) has no
// series rather than a made-up one: alert on retentionguard_policy_verdict
// for Unknown.
//
// The per-policy series are neither GaugeVecs (issue 26: a vector keeps a
// gauge, its label pairs and its hash entry per series, about 450 bytes
// each) nor a prometheus.Collector (issue 34: client_golang's Gather
// builds every series of every collector as a dto.Metric before the first
// byte is written, 106 MiB at 20,000 policies, about 12 series each, at
// every scrape). policyMetrics keeps what the series say of each policy
// in one small struct, with label values shared (unique), and the
// metrics endpoint writes them out line by line at each scrape
// (exposition.go): the same names, labels and values.
var (
	policyVerdict = &policyFamily{
		name:   "retentionguard_policy_verdict",
		help:   "1 for the policy's current verdict (Proven, Violated or Unknown), 0 for the others.",
		labels: []string{"verdict"},
		series: func(s *policySeries, w *seriesWriter) {
			for _, v := range verdicts {
				value := 0.0
				if string(v) == string(s.verdict) {
					value = 1
				}
				w.gauge(value, string(v))
			}
		},
	}

	recoveryHeadroomExpiration = &policyFamily{
		name: "retentionguard_recovery_headroom_expiration_timestamp_seconds",
		help: "When the group's recovery headroom runs out, in unix seconds: the soonest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms (a caught-up partition: the check's time + retention.ms). " +
			"Alert on (this - time()): it stays right between checks.",
		series: headroomSeries(func(s *policySeries) float64 { return s.headroomAt }),
	}

	// Deprecated: recoveryHeadroomExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	recoveryHeadroomSeconds = &policyFamily{
		name: "retentionguard_recovery_headroom_seconds",
		help: "Deprecated, removed in a later release: use retentionguard_recovery_headroom_expiration_timestamp_seconds - time(). " +
			"How long the group could go down, as of the last check, without losing records: the smallest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms - the check's time.",
		series: headroomSeries(func(s *policySeries) float64 { return s.headroomIn }),
	}

	expiredRecords = &policyFamily{
		name:   "retentionguard_expired_records",
		help:   "Records of the topic deleted by retention before the group read them (log start minus committed offset, summed over partitions).",
		labels: []string{"topic"},
		series: labeledSeries(func(s *policySeries) []labeledValue { return s.expired }),
	}

	groupOffsetsExpiration = &policyFamily{
		name: "retentionguard_group_offsets_expiration_timestamp_seconds",
		help: "When the group's soonest committed offset may expire, in unix seconds, on the clock Kafka uses for the group, named by " +
			"the clock label (GroupEmpty: a classic group's offsets, offsets.retention.minutes after it became Empty; " +
			"LastCommit: simple, KIP-848 and streams groups' offsets, after each offset's last commit). " +
			"No series while no clock runs (a classic group with members) or no commit can be dated. " +
			"Alert on (this - time()): it stays right between checks.",
		labels: []string{"clock"},
		series: offsetsSeries(func(s *policySeries) float64 { return s.offsetsAt }),
	}

	// Deprecated: groupOffsetsExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	groupOffsetsExpirySeconds = &policyFamily{
		name: "retentionguard_group_offsets_expiry_seconds",
		help: "Deprecated, removed in a later release: use retentionguard_group_offsets_expiration_timestamp_seconds - time(). " +
			"How long, as of the last check, until the group's soonest committed offset may expire, on the clock named by the clock label.",
		labels: []string{"clock"},
		series: offsetsSeries(func(s *policySeries) float64 { return s.offsetsIn }),
	}

	recoveryWindowSeconds = &policyFamily{
		name: "retentionguard_policy_recovery_window_seconds",
		help: "The policy's spec.recoveryWindow: the longest downtime its group must survive. Compare " +
			"retentionguard_recovery_headroom_expiration_timestamp_seconds - time() and " +
			"retentionguard_group_offsets_expiration_timestamp_seconds - time() with it.",
		series: func(s *policySeries, w *seriesWriter) { w.gauge(s.window) },
	}

	policyInfo = &policyFamily{
		name: "retentionguard_policy_info",
		help: "Always 1: the policy's consumer group, enforcement (Deny, Warn, Audit) and the reason of its Ready condition, " +
			"to join on (namespace, policy).",
		labels: []string{"consumer_group", "enforcement", "reason"},
		series: func(s *policySeries, w *seriesWriter) { w.gauge(1, s.group, s.enforcement, s.reason) },
	}

	cronJobScheduleGapSeconds = &policyFamily{
		name: "retentionguard_cronjob_schedule_gap_seconds",
		help: "The longest time between two scheduled runs of a CronJob the policy selects, over the next year " +
			"(startingDeadlineSeconds included; no series while suspended or unreadable). " +
			"Compare with offsets.retention.minutes: a gap that reaches it expires the group's offsets between runs.",
		labels: []string{"cronjob"},
		// Before the policy's first proof too: recordSchedules may come
		// first.
		beforeProof: true,
		series:      labeledSeries(func(s *policySeries) []labeledValue { return s.gaps }),
	}

	offsetsTopicReadable = &policyFamily{
		name: "retentionguard_offsets_topic_readable",
		help: "1 when the last check read the group's exact commit and Empty times from __consumer_offsets, 0 when it could not " +
			"and bounded them instead; the reason label says why (Read, Denied: grant the principal Read on the topic, Absent, " +
			"Undecodable, NotRead). No series for a policy with spec.kafka.readOffsetsTopic: false.",
		labels: []string{"reason"},
		series: func(s *policySeries, w *seriesWriter) {
			switch {
			case !s.offsetsTopic:
			case s.offsetsTopicReason == "":
				w.gauge(1, "Read")
			default:
				w.gauge(0, s.offsetsTopicReason)
			}
		},
	}

	// policyFamilies are every per-policy family, written at each scrape
	// in this order.
	policyFamilies = []*policyFamily{cronJobScheduleGapSeconds, policyInfo, recoveryWindowSeconds, policyVerdict,
		recoveryHeadroomExpiration, recoveryHeadroomSeconds, groupOffsetsExpiration, groupOffsetsExpirySeconds,
		expiredRecords, offsetsTopicReadable}

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

// headroomSeries is the one series of a recovery headroom family, while
// the proof has a headroom.
func headroomSeries(value func(*policySeries) float64) func(*policySeries, *seriesWriter) {
	return func(s *policySeries, w *seriesWriter) {
		if s.hasHeadroom {
			w.gauge(value(s))
		}
	}
}

// labeledSeries is a series per labeled value (a topic's, a CronJob's).
func labeledSeries(values func(*policySeries) []labeledValue) func(*policySeries, *seriesWriter) {
	return func(s *policySeries, w *seriesWriter) {
		for _, v := range values(s) {
			w.gauge(v.value, v.label)
		}
	}
}

// offsetsSeries is the one series of a group offsets expiry family, on
// its clock, while a clock runs.
func offsetsSeries(value func(*policySeries) float64) func(*policySeries, *seriesWriter) {
	return func(s *policySeries, w *seriesWriter) {
		if s.hasOffsets {
			w.gauge(value(s), s.clock)
		}
	}
}

func init() {
	metrics.Registry.MustRegister(kafkaRequestDuration, liveChecksBusy)
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
