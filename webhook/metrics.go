package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// decisionsTotal counts admission decisions by workload kind and
	// decision (allowed, denied, warned, audited, overridden, skipped, error).
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "retentionguard_admission_decisions_total",
		Help: "Admission decisions on Deployment, StatefulSet, Job and CronJob requests, by kind and decision " +
			"(allowed, denied, warned, audited, overridden; skipped: not a rollout; error: refused because the handler could not judge).",
	}, []string{"kind", "decision"})

	// durationSeconds is how long the handler took to decide.
	durationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "retentionguard_admission_duration_seconds",
		Help:    "Time the admission handler took to decide, by kind and decision.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5},
	}, []string{"kind", "decision"})
)

// outcomes are every decision label value.
var outcomes = []outcome{outcomeAllowed, outcomeDenied, outcomeWarned, outcomeAudited, outcomeOverridden, outcomeSkipped, outcomeError}

func init() {
	metrics.Registry.MustRegister(decisionsTotal, durationSeconds)
	// Every kind and decision starts at 0: rate() and increase() see a
	// counter's first increment only against an earlier sample, so a
	// series born at 1 would hide the first denial (or the first
	// fail-closed refusal) after a restart from the alerts.
	for _, kind := range []string{kindDeployment, kindStatefulSet, kindJob, kindCronJob} {
		for _, o := range outcomes {
			decisionsTotal.WithLabelValues(kind, string(o))
		}
	}
}
