package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Per-connection metrics; every series of a connection is removed when it
// is deleted. namespace is empty for a ClusterKafkaConnection.
var (
	connectionLabels = []string{"kind", "namespace", "connection"}

	connectionReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_ready",
		Help: "1 when the connection's cluster answered its last observation (Ready=True), else 0.",
	}, connectionLabels)
	connectionBrokers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_brokers",
		Help: "Brokers the connection's cluster metadata lists.",
	}, connectionLabels)
	connectionOffsetsRetention = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_offsets_retention_minutes",
		Help: "The smallest of the brokers' offsets.retention.minutes (no series when unreadable).",
	}, connectionLabels)
	connectionPolicies = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_policies",
		Help: "Policies that name the connection.",
	}, connectionLabels)
	connectionLastObserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_last_observed_timestamp_seconds",
		Help: "Unix time of the connection's last observation of its cluster.",
	}, connectionLabels)
	connectionUnguardedGroups = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "retentionguard_connection_unguarded_groups",
		Help: "Groups on the cluster no policy guards, by discovery's verdict (only with spec.discovery.enabled).",
	}, append(append([]string{}, connectionLabels...), "verdict"))
)

func init() {
	metrics.Registry.MustRegister(connectionReady, connectionBrokers, connectionOffsetsRetention,
		connectionPolicies, connectionLastObserved, connectionUnguardedGroups)
}

type connectionMetrics struct{}

var connectionMetricsState connectionMetrics

func (connectionMetrics) record(o coalesce.ConnectionOwner, out connectionOutcome) {
	l := []string{o.Kind, o.Namespace, o.Name}
	st := out.Status
	ready := 0.0
	if meta.IsStatusConditionTrue(st.Conditions, proof.ClauseReady) {
		ready = 1
	}
	connectionReady.WithLabelValues(l...).Set(ready)
	connectionPolicies.WithLabelValues(l...).Set(float64(st.Policies))
	if !out.Observed {
		return
	}
	connectionBrokers.WithLabelValues(l...).Set(float64(st.Brokers))
	if st.OffsetsRetentionMinutes != nil {
		connectionOffsetsRetention.WithLabelValues(l...).Set(float64(*st.OffsetsRetentionMinutes))
	} else {
		connectionOffsetsRetention.DeleteLabelValues(l...)
	}
	if st.LastObservedAt != nil {
		connectionLastObserved.WithLabelValues(l...).Set(float64(st.LastObservedAt.Unix()))
	}
	if v := st.UnguardedVerdicts; v != nil {
		connectionUnguardedGroups.WithLabelValues(append(l, string(rgv1.VerdictProven))...).Set(float64(v.Proven))
		connectionUnguardedGroups.WithLabelValues(append(l, string(rgv1.VerdictViolated))...).Set(float64(v.Violated))
		connectionUnguardedGroups.WithLabelValues(append(l, string(rgv1.VerdictUnknown))...).Set(float64(v.Unknown))
	} else {
		connectionUnguardedGroups.DeletePartialMatch(prometheus.Labels{"kind": o.Kind, "namespace": o.Namespace, "connection": o.Name})
	}
}

func (connectionMetrics) forget(o coalesce.ConnectionOwner) {
	labels := prometheus.Labels{"kind": o.Kind, "namespace": o.Namespace, "connection": o.Name}
	for _, v := range []*prometheus.GaugeVec{connectionReady, connectionBrokers, connectionOffsetsRetention,
		connectionPolicies, connectionLastObserved, connectionUnguardedGroups} {
		v.DeletePartialMatch(labels)
	}
}
