package controllers

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// labelsOf returns the label sets of the series of name whose labels
// include labels.
func labelsOf(name string, labels map[string]string) []map[string]string {
	var out []map[string]string
	for _, m := range seriesOf(name, labels) {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		out = append(out, l)
	}
	return out
}

// The series alerts join on: the recovery window, the info series (group,
// enforcement, Ready's reason) and the offsets expiry with its clock. A
// policy has one series of each at a time: a new clock or reason replaces
// the old series, and a deleted policy has none. The expiries are
// absolute (unix seconds, from the proof's own times), beside the
// deprecated relative gauges, with the same labels.
func TestPolicySeriesFollowTheProof(t *testing.T) {
	g := NewWithT(t)
	m := metricsState // what the manager's /metrics serves
	key := types.NamespacedName{Namespace: "metrics-unit", Name: "settle"}
	policy := map[string]string{"namespace": key.Namespace, "policy": key.Name}
	facts := policyFacts{GroupID: "ledger-settle-consumer", Enforcement: "Deny", RecoveryWindow: 72 * time.Hour, ReadyReason: proof.ReasonProven}
	checkedAt := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	const (
		offsetsAt  = "retentionguard_group_offsets_expiration_timestamp_seconds"
		offsetsIn  = "retentionguard_group_offsets_expiry_seconds"
		headroomAt = "retentionguard_recovery_headroom_expiration_timestamp_seconds"
		headroomIn = "retentionguard_recovery_headroom_seconds"
	)

	empty := &proof.Result{Verdict: proof.Proven, HasGroupOffsetsExpireIn: true, GroupOffsetsExpireIn: 100 * time.Hour,
		OffsetExpiry:        proof.OffsetExpiry{Clock: proof.ExpiryClockGroupEmpty, HasSoonest: true, Soonest: checkedAt.Add(100 * time.Hour)},
		HasRecoveryHeadroom: true, RecoveryHeadroom: 5*24*time.Hour + 1500*time.Millisecond,
		RecoveryHeadroomExpiresAt: checkedAt.Add(5*24*time.Hour + 1500*time.Millisecond)}
	m.record(key, facts, empty)
	g.Expect(gauge(g, "retentionguard_policy_recovery_window_seconds", policy)).To(Equal((72 * time.Hour).Seconds()))
	g.Expect(labelsOf("retentionguard_policy_info", policy)).To(ConsistOf(map[string]string{
		"namespace": "metrics-unit", "policy": "settle", "consumer_group": "ledger-settle-consumer", "enforcement": "Deny", "reason": "Proven",
	}))
	g.Expect(gauge(g, "retentionguard_policy_info", with(with(with(policy, "consumer_group", "ledger-settle-consumer"),
		"enforcement", "Deny"), "reason", "Proven"))).To(Equal(1.0))
	g.Expect(labelsOf(offsetsAt, policy)).To(ConsistOf(HaveKeyWithValue("clock", "GroupEmpty")))
	g.Expect(gauge(g, offsetsAt, with(policy, "clock", "GroupEmpty"))).To(Equal(float64(checkedAt.Unix() + 100*3600)))
	g.Expect(gauge(g, offsetsIn, with(policy, "clock", "GroupEmpty"))).To(Equal((100 * time.Hour).Seconds()))
	g.Expect(gauge(g, headroomAt, policy)).To(Equal(float64(checkedAt.Unix()+5*24*3600)+1.5), "to the millisecond")
	g.Expect(gauge(g, headroomIn, policy)).To(Equal(5*24*3600 + 1.5))
	// Cardinality unchanged: each absolute gauge has the labels of the
	// relative one it replaces.
	g.Expect(labelsOf(offsetsAt, policy)).To(Equal(labelsOf(offsetsIn, policy)))
	g.Expect(labelsOf(headroomAt, policy)).To(Equal(labelsOf(headroomIn, policy)))

	// The group's offsets now expire per commit, the proof fails and the
	// window changed: one series each, with the new values; no headroom.
	perCommit := &proof.Result{Verdict: proof.Unknown, HasGroupOffsetsExpireIn: true, GroupOffsetsExpireIn: 50 * time.Hour,
		OffsetExpiry: proof.OffsetExpiry{Clock: proof.ExpiryClockLastCommit, HasSoonest: true, Soonest: checkedAt.Add(50 * time.Hour)}}
	facts.ReadyReason, facts.RecoveryWindow = proof.ReasonOffsetsMayExpireBeforeWindow, 96*time.Hour
	m.record(key, facts, perCommit)
	for _, name := range []string{offsetsAt, offsetsIn} {
		g.Expect(labelsOf(name, policy)).To(ConsistOf(HaveKeyWithValue("clock", "LastCommit")), name)
	}
	g.Expect(gauge(g, offsetsAt, with(policy, "clock", "LastCommit"))).To(Equal(float64(checkedAt.Unix() + 50*3600)))
	g.Expect(seriesOf(headroomAt, policy)).To(BeEmpty())
	g.Expect(seriesOf(headroomIn, policy)).To(BeEmpty())
	g.Expect(labelsOf("retentionguard_policy_info", policy)).To(ConsistOf(
		HaveKeyWithValue("reason", "OffsetsMayExpireBeforeWindow")))
	g.Expect(gauge(g, "retentionguard_policy_recovery_window_seconds", policy)).To(Equal((96 * time.Hour).Seconds()))

	// No clock runs (a member joined): no expiry series.
	m.record(key, facts, &proof.Result{Verdict: proof.Proven})
	g.Expect(seriesOf(offsetsAt, policy)).To(BeEmpty())
	g.Expect(seriesOf(offsetsIn, policy)).To(BeEmpty())

	m.record(key, facts, empty)
	m.forget(key)
	for _, name := range []string{"retentionguard_policy_info", "retentionguard_policy_recovery_window_seconds",
		offsetsAt, offsetsIn, headroomAt, headroomIn, "retentionguard_policy_verdict"} {
		g.Expect(seriesOf(name, policy)).To(BeEmpty(), name)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	g.Expect(m.policies).NotTo(HaveKey(key), "forget drops what it remembered of the policy")
}

// What Prometheus scrapes from /metrics (seed 003's team alerts on these
// series): the registry's families and every policy's, in the text format
// Prometheus' own parser reads, with label values escaped (a consumer
// group may hold any character), gzip when asked, and a CronJob's gap
// series before its policy's first proof. A family without series is
// left out, as client_golang leaves it out.
func TestMetricsEndpointStreamsEveryPolicy(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	busy := prometheus.NewCounter(prometheus.CounterOpts{Name: "retentionguard_live_checks_busy_total", Help: "busy"})
	reg.MustRegister(busy)
	busy.Add(3)
	m := newPolicyMetrics()
	odd := types.NamespacedName{Namespace: "payments", Name: "settle"}
	oddGroup := "settle \"v2\" \\ eu\nwest"
	m.record(odd, policyFacts{GroupID: oddGroup, Enforcement: "Deny", RecoveryWindow: 72 * time.Hour, ReadyReason: proof.ReasonProven},
		&proof.Result{Verdict: proof.Proven, HasRecoveryHeadroom: true, RecoveryHeadroom: 90 * time.Hour,
			RecoveryHeadroomExpiresAt: time.UnixMilli(1_780_000_000_250),
			Partitions:                []proof.PartitionResult{{Topic: "settlements", Verdict: proof.Proven}}})
	batch := types.NamespacedName{Namespace: "billing", Name: "nightly"}
	m.recordSchedules(batch, []assemble.CronJob{{Name: "invoice-run", Gap: assemble.ScheduleGap{Gap: 24 * time.Hour}}})

	get := func(encoding string) (*httptest.ResponseRecorder, map[string]*dto.MetricFamily) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		metricsHandler(reg, m).ServeHTTP(rec, req)
		g.Expect(rec.Code).To(Equal(http.StatusOK))
		g.Expect(rec.Header().Get("Content-Type")).To(HavePrefix("text/plain; version=0.0.4"))
		var body io.Reader = bytes.NewReader(rec.Body.Bytes())
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			g.Expect(err).NotTo(HaveOccurred())
			body = zr
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(body)
		g.Expect(err).NotTo(HaveOccurred())
		return rec, families
	}
	plain, families := get("")
	g.Expect(plain.Header().Get("Content-Encoding")).To(BeEmpty())
	zipped, zfamilies := get("deflate, gzip;q=0.9")
	g.Expect(zipped.Header().Get("Content-Encoding")).To(Equal("gzip"))
	g.Expect(fmt.Sprint(zfamilies)).To(Equal(fmt.Sprint(families)), "the same series, compressed")

	g.Expect(families["retentionguard_live_checks_busy_total"].GetMetric()[0].GetCounter().GetValue()).To(Equal(3.0), "the registry's own")
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	info := families["retentionguard_policy_info"]
	g.Expect(info.GetHelp()).To(HavePrefix("Always 1: the policy's consumer group"))
	g.Expect(info.GetType()).To(Equal(dto.MetricType_GAUGE))
	g.Expect(info.GetMetric()).To(HaveLen(1), "the batch policy has no proof yet")
	g.Expect(labels(info.GetMetric()[0])).To(Equal(map[string]string{"namespace": "payments", "policy": "settle",
		"consumer_group": oddGroup, "enforcement": "Deny", "reason": "Proven"}))
	g.Expect(families["retentionguard_recovery_headroom_expiration_timestamp_seconds"].GetMetric()[0].GetGauge().GetValue()).
		To(Equal(1_780_000_000.25))
	verdicts := map[string]float64{}
	for _, s := range families["retentionguard_policy_verdict"].GetMetric() {
		verdicts[labels(s)["verdict"]] = s.GetGauge().GetValue()
	}
	g.Expect(verdicts).To(Equal(map[string]float64{"Proven": 1, "Violated": 0, "Unknown": 0}))
	gap := families["retentionguard_cronjob_schedule_gap_seconds"].GetMetric()
	g.Expect(gap).To(HaveLen(1))
	g.Expect(labels(gap[0])).To(Equal(map[string]string{"namespace": "billing", "policy": "nightly", "cronjob": "invoice-run"}))
	g.Expect(gap[0].GetGauge().GetValue()).To(Equal((24 * time.Hour).Seconds()))
	g.Expect(families).NotTo(HaveKey("retentionguard_group_offsets_expiration_timestamp_seconds"), "no clock: no family")
	g.Expect(families).NotTo(HaveKey("retentionguard_offsets_topic_readable"), "the read was not asked")

	// A registry that fails to gather fails the scrape, as
	// controller-runtime's handler does (promhttp.HTTPErrorOnError).
	rec := httptest.NewRecorder()
	metricsHandler(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return nil, errors.New("collector broke") }), m).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	g.Expect(rec.Code).To(Equal(http.StatusInternalServerError))
	g.Expect(rec.Body.String()).To(ContainSubstring("collector broke"))
}

// The manager's metrics server serves /metrics through MetricsFilter and
// passes any other path on to what controller-runtime serves there.
func TestMetricsFilterServesOnlyMetrics(t *testing.T) {
	g := NewWithT(t)
	filter, err := MetricsFilter(nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "next "+r.URL.Path) })
	h, err := filter(logr.Discard(), next)
	g.Expect(err).NotTo(HaveOccurred())
	for path, want := range map[string]string{"/metrics": "retentionguard_live_checks_busy_total", "/debug/extra": "next /debug/extra"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		g.Expect(rec.Body.String()).To(ContainSubstring(want), path)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "identity": false, "gzip": true, "GZIP": true, "deflate, gzip;q=1.0, *;q=0.5": true,
		"gzip;q=0": false, "gzip; q=0.001": true, "x-gzip": false, "br, zstd": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// BenchmarkMetricsScrape is one /metrics scrape, gzip as Prometheus asks,
// of 20,000 policies in make bench-scale's shape (2 topics each, a
// headroom, an offsets clock, the read of __consumer_offsets asked):
// issue 34's in-flight cost of a scrape.
func BenchmarkMetricsScrape(b *testing.B) {
	const policies = 20000
	m := newPolicyMetrics()
	for i := range policies {
		key := types.NamespacedName{Namespace: fmt.Sprintf("team-%03d", i%500), Name: fmt.Sprintf("consumer-%05d", i)}
		now := time.Now()
		m.record(key, policyFacts{GroupID: fmt.Sprintf("group-%05d", i), Enforcement: "Deny", RecoveryWindow: 72 * time.Hour,
			ReadyReason: proof.ReasonProven}, &proof.Result{Verdict: proof.Proven,
			HasRecoveryHeadroom: true, RecoveryHeadroom: 90 * time.Hour, RecoveryHeadroomExpiresAt: now.Add(90 * time.Hour),
			HasGroupOffsetsExpireIn: true, GroupOffsetsExpireIn: 160 * time.Hour,
			OffsetExpiry: proof.OffsetExpiry{Clock: proof.ExpiryClockGroupEmpty, HasSoonest: true, Soonest: now.Add(160 * time.Hour)},
			OffsetsTopic: proof.OffsetsTopicRead{Requested: true, Reason: proof.OffsetsTopicAbsent},
			Partitions: []proof.PartitionResult{{Topic: fmt.Sprintf("topic-%03d", (2*i)%900), Verdict: proof.Proven},
				{Topic: fmt.Sprintf("topic-%03d", (2*i+1)%900), Verdict: proof.Proven}}})
	}
	h := metricsHandler(metrics.Registry, m)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(discardResponse{}, req)
	}
}

// discardResponse is a ResponseWriter that keeps nothing.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}
