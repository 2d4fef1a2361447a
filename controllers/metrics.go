package controllers

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Prometheus metrics, on controller-runtime's registry (served by the
// manager's metrics endpoint). Every series of a policy is removed when the
// policy is deleted. A value that is not known (no observation, or the
// brokers could not say) has no series rather than a made-up one: alert on
// retentionguard_policy_verdict for Unknown.
var (
	policyVerdict = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_policy_verdict",
		Help: "1 for the policy's current verdict (Proven, Violated or Unknown), 0 for the others.",
	}, []string{"namespace", "policy", "verdict"})

	recoveryHeadroomExpiration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_recovery_headroom_expiration_timestamp_seconds",
		Help: "When the group's recovery headroom runs out, in unix seconds: the soonest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms (a caught-up partition: the check's time + retention.ms). " +
			"Alert on (this - time()): it stays right between checks.",
	}, []string{"namespace", "policy"})

	// Deprecated: recoveryHeadroomExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	recoveryHeadroomSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_recovery_headroom_seconds",
		Help: "Deprecated, removed in a later release: use retentionguard_recovery_headroom_expiration_timestamp_seconds - time(). " +
			"How long the group could go down, as of the last check, without losing records: the smallest, over partitions, of " +
			"timestamp(record at committed offset) + retention.ms - the check's time.",
	}, []string{"namespace", "policy"})

	expiredRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_expired_records",
		Help: "Records of the topic deleted by retention before the group read them (log start minus committed offset, summed over partitions).",
	}, []string{"namespace", "policy", "topic"})

	groupOffsetsExpiration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_group_offsets_expiration_timestamp_seconds",
		Help: "When the group's soonest committed offset may expire, in unix seconds, on the clock Kafka uses for the group, named by " +
			"the clock label (GroupEmpty: a classic group's offsets, offsets.retention.minutes after it became Empty; " +
			"LastCommit: simple, KIP-848 and streams groups' offsets, after each offset's last commit). " +
			"No series while no clock runs (a classic group with members) or no commit can be dated. " +
			"Alert on (this - time()): it stays right between checks.",
	}, []string{"namespace", "policy", "clock"})

	// Deprecated: groupOffsetsExpiration without going stale between
	// checks. Kept one release for dashboards of users' own.
	groupOffsetsExpirySeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_group_offsets_expiry_seconds",
		Help: "Deprecated, removed in a later release: use retentionguard_group_offsets_expiration_timestamp_seconds - time(). " +
			"How long, as of the last check, until the group's soonest committed offset may expire, on the clock named by the clock label.",
	}, []string{"namespace", "policy", "clock"})

	recoveryWindowSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_policy_recovery_window_seconds",
		Help: "The policy's spec.recoveryWindow: the longest downtime its group must survive. Compare " +
			"retentionguard_recovery_headroom_expiration_timestamp_seconds - time() and " +
			"retentionguard_group_offsets_expiration_timestamp_seconds - time() with it.",
	}, []string{"namespace", "policy"})

	policyInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_policy_info",
		Help: "Always 1: the policy's consumer group, enforcement (Deny, Warn, Audit) and the reason of its Ready condition, " +
			"to join on (namespace, policy).",
	}, []string{"namespace", "policy", "consumer_group", "enforcement", "reason"})

	cronJobScheduleGapSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_cronjob_schedule_gap_seconds",
		Help: "The longest time between two scheduled runs of a CronJob the policy selects, over the next year " +
			"(startingDeadlineSeconds included; no series while suspended or unreadable). " +
			"Compare with offsets.retention.minutes: a gap that reaches it expires the group's offsets between runs.",
	}, []string{"namespace", "policy", "cronjob"})

	kafkaRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "retentionguard_kafka_request_duration_seconds",
		Help:    "Round trip of the Kafka requests made to observe clusters, by Kafka API.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1ms .. ~16s
	}, []string{"api"})
)

func init() {
	metrics.Registry.MustRegister(policyVerdict, recoveryHeadroomExpiration, recoveryHeadroomSeconds, expiredRecords,
		groupOffsetsExpiration, groupOffsetsExpirySeconds, recoveryWindowSeconds, policyInfo, cronJobScheduleGapSeconds,
		kafkaRequestDuration)
}

// ObserveKafkaRequest feeds retentionguard_kafka_request_duration_seconds.
// Pass it to kafka.WithRequestHook.
func ObserveKafkaRequest(api string, took time.Duration, _ error) {
	kafkaRequestDuration.WithLabelValues(api).Observe(took.Seconds())
}

// metricsState tracks the per-policy series of this process.
var metricsState = newPolicyMetrics()

var verdicts = []rgv1.Verdict{rgv1.VerdictProven, rgv1.VerdictViolated, rgv1.VerdictUnknown}

// policyMetrics records the per-policy series, remembering which topics
// have a series so that a topic dropped from the spec loses its own.
type policyMetrics struct {
	mu       sync.Mutex
	topics   map[types.NamespacedName][]string
	cronJobs map[types.NamespacedName][]string
	// single holds the labels of the one series a policy has of the
	// vectors whose other labels change (info, offsets expiry clock).
	single map[singleKey]prometheus.Labels
}

type singleKey struct {
	vec    *prometheus.GaugeVec
	policy types.NamespacedName
}

func newPolicyMetrics() *policyMetrics {
	return &policyMetrics{
		topics:   make(map[types.NamespacedName][]string),
		cronJobs: make(map[types.NamespacedName][]string),
		single:   make(map[singleKey]prometheus.Labels),
	}
}

// recordSchedules sets the gap series of the CronJobs the policy selects,
// removing those of CronJobs it no longer selects, suspended ones and
// unreadable schedules.
func (m *policyMetrics) recordSchedules(policy types.NamespacedName, cjs []cronJobSchedule) {
	var names []string
	for _, c := range cjs {
		if c.Suspended || c.Err != nil {
			continue
		}
		cronJobScheduleGapSeconds.WithLabelValues(policy.Namespace, policy.Name, c.Name).Set(c.Gap.Gap.Seconds())
		names = append(names, c.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.cronJobs[policy] {
		if !slices.Contains(names, n) {
			cronJobScheduleGapSeconds.DeleteLabelValues(policy.Namespace, policy.Name, n)
		}
	}
	m.cronJobs[policy] = names
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
	ns, name := policy.Namespace, policy.Name
	m.setSingle(policyInfo, policy, prometheus.Labels{"namespace": ns, "policy": name,
		"consumer_group": facts.GroupID, "enforcement": facts.Enforcement, "reason": facts.ReadyReason}, 1)
	recoveryWindowSeconds.WithLabelValues(ns, name).Set(facts.RecoveryWindow.Seconds())
	for _, v := range verdicts {
		value := 0.0
		if string(v) == string(res.Verdict) {
			value = 1
		}
		policyVerdict.WithLabelValues(ns, name, string(v)).Set(value)
	}

	// The proof's own times, absolute: a series that is not set again
	// until the next check still says when, and (it - time()) how long.
	if res.HasRecoveryHeadroom {
		recoveryHeadroomExpiration.WithLabelValues(ns, name).Set(unixSeconds(res.RecoveryHeadroomExpiresAt))
		recoveryHeadroomSeconds.WithLabelValues(ns, name).Set(res.RecoveryHeadroom.Seconds())
	} else {
		recoveryHeadroomExpiration.DeleteLabelValues(ns, name)
		recoveryHeadroomSeconds.DeleteLabelValues(ns, name)
	}
	if res.HasGroupOffsetsExpireIn {
		clock := res.OffsetExpiry.Clock
		if clock == "" {
			clock = "Unknown"
		}
		labels := prometheus.Labels{"namespace": ns, "policy": name, "clock": clock}
		m.setSingle(groupOffsetsExpiration, policy, labels, unixSeconds(res.OffsetExpiry.Soonest))
		m.setSingle(groupOffsetsExpirySeconds, policy, labels, res.GroupOffsetsExpireIn.Seconds())
	} else {
		m.dropSingle(groupOffsetsExpiration, policy)
		m.dropSingle(groupOffsetsExpirySeconds, policy)
	}

	// Expired records per topic, for the topics whose partitions were
	// observed (a topic whose offsets could not be read has no series).
	perTopic := make(map[string]int64)
	var topics []string
	for _, p := range res.Partitions {
		if p.Verdict == proof.Unknown {
			continue
		}
		if _, ok := perTopic[p.Topic]; !ok {
			topics = append(topics, p.Topic)
		}
		perTopic[p.Topic] += p.ExpiredRecords
	}
	for _, t := range topics {
		expiredRecords.WithLabelValues(ns, name, t).Set(float64(perTopic[t]))
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.topics[policy] {
		if !slices.Contains(topics, t) {
			expiredRecords.DeleteLabelValues(ns, name, t)
		}
	}
	m.topics[policy] = topics
}

// setSingle sets the one series of vec the policy has (its labels
// include the policy's): when its other label values change, the new
// series is set before the old one goes, so a scrape never finds none.
func (m *policyMetrics) setSingle(vec *prometheus.GaugeVec, policy types.NamespacedName, labels prometheus.Labels, v float64) {
	vec.With(labels).Set(v)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := singleKey{vec, policy}
	if old, ok := m.single[k]; ok && !maps.Equal(old, labels) {
		vec.Delete(old)
	}
	m.single[k] = labels
}

// dropSingle removes the one series of vec the policy has.
func (m *policyMetrics) dropSingle(vec *prometheus.GaugeVec, policy types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := singleKey{vec, policy}
	if old, ok := m.single[k]; ok {
		vec.Delete(old)
		delete(m.single, k)
	}
}

// unixSeconds is t in unix seconds, to the millisecond (cert-manager's
// certmanager_certificate_expiration_timestamp_seconds is in whole
// seconds; a millisecond keeps a headroom of seconds exact).
func unixSeconds(t time.Time) float64 {
	return float64(t.UnixMilli()) / 1e3
}

// forget removes every series of a deleted policy.
func (m *policyMetrics) forget(policy types.NamespacedName) {
	labels := prometheus.Labels{"namespace": policy.Namespace, "policy": policy.Name}
	policyVerdict.DeletePartialMatch(labels)
	recoveryHeadroomExpiration.DeletePartialMatch(labels)
	recoveryHeadroomSeconds.DeletePartialMatch(labels)
	expiredRecords.DeletePartialMatch(labels)
	groupOffsetsExpiration.DeletePartialMatch(labels)
	groupOffsetsExpirySeconds.DeletePartialMatch(labels)
	recoveryWindowSeconds.DeletePartialMatch(labels)
	policyInfo.DeletePartialMatch(labels)
	cronJobScheduleGapSeconds.DeletePartialMatch(labels)
	m.mu.Lock()
	delete(m.topics, policy)
	delete(m.cronJobs, policy)
	for k := range m.single {
		if k.policy == policy {
			delete(m.single, k)
		}
	}
	m.mu.Unlock()
}
