package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// The stack's Prometheus evaluates the chart's rules with `for` and the
// rate interval shortened through chart values (the alerts' logic is the
// chart's own): every alert waits alertFor before it fires.
const (
	alertFor     = "3s"
	rateInterval = "10s"
	// alertTimeout bounds a wait for an alert: a check interval of the
	// policy (10s), a scrape, the rate interval and `for`, on a busy
	// machine.
	alertTimeout = 90 * time.Second
)

// alertValues are the chart values of the stack: monitoring on, scraped
// every second, `for` and the rate interval short.
func alertValues() map[string]any {
	forAll := map[string]any{}
	for _, a := range []string{"RetentionGuardPolicyViolated", "RetentionGuardPolicyUnknown", "RetentionGuardRecoveryHeadroomLow",
		"RetentionGuardEmptyGroupNearingOffsetsRetention", "RetentionGuardGroupOffsetsExpireWithinADay", "RetentionGuardWebhookDenying",
		"RetentionGuardWebhookFailingClosed", "RetentionGuardWebhookErrors", "RetentionGuardManagerDown"} {
		forAll[a] = alertFor
	}
	return map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true, "interval": "1s"},
		"prometheusRule":   map[string]any{"enabled": true, "for": forAll, "rateInterval": rateInterval},
		"grafanaDashboard": map[string]any{"enabled": true},
	}
}

func prom() promv1.API { return stk.Prometheus.API }

// alertKey writes an alert's labels for messages.
func alertKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{}
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func matches(a promv1.Alert, name string, labels map[string]string) bool {
	if string(a.Labels["alertname"]) != name {
		return false
	}
	for k, v := range labels {
		if string(a.Labels[model.LabelName(k)]) != v {
			return false
		}
	}
	return true
}

func activeAlerts(t *testing.T) []promv1.Alert {
	t.Helper()
	res, err := prom().Alerts(e2eutil.Ctx(t))
	e2eutil.Must(t, err)
	return res.Alerts
}

func describeAlerts(alerts []promv1.Alert) string {
	var out []string
	for _, a := range alerts {
		out = append(out, fmt.Sprintf("%s %s", a.State, a.Labels))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n  ")
}

// waitFiring waits until Prometheus reports the alert firing and returns
// it; then it checks, in Prometheus' own ALERTS series, that the alert was
// pending before it fired (its `for`).
func waitFiring(t *testing.T, name string, labels map[string]string, since time.Time) promv1.Alert {
	t.Helper()
	deadline := time.Now().Add(alertTimeout)
	for {
		for _, a := range activeAlerts(t) {
			if matches(a, name, labels) && a.State == promv1.AlertStateFiring {
				// The ALERTS sample of the evaluation that fired it may
				// not be queryable yet.
				var firstPending, firstFiring time.Time
				for range 20 {
					if firstPending, firstFiring = alertStates(t, name, labels, since); !firstFiring.IsZero() {
						break
					}
					time.Sleep(250 * time.Millisecond)
				}
				if firstPending.IsZero() || firstFiring.IsZero() || !firstPending.Before(firstFiring) {
					t.Errorf("alert %s: ALERTS shows pending at %v and firing at %v since %s; want pending first",
						alertKey(name, labels), firstPending, firstFiring, since.Format(time.TimeOnly))
				}
				t.Logf("alert %s: pending after %s, firing after %s",
					alertKey(name, labels), firstPending.Sub(since).Round(100*time.Millisecond), firstFiring.Sub(since).Round(100*time.Millisecond))
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s not firing within %s; active alerts:\n  %s", alertKey(name, labels), alertTimeout, describeAlerts(activeAlerts(t)))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// alertStates reads the first time the alert was pending and firing in
// Prometheus' ALERTS series since since.
func alertStates(t *testing.T, name string, labels map[string]string, since time.Time) (pending, firing time.Time) {
	t.Helper()
	first := func(state string) time.Time {
		l := map[string]string{"alertname": name, "alertstate": state}
		for k, v := range labels {
			l[k] = v
		}
		v, _, err := prom().QueryRange(e2eutil.Ctx(t), alertKey("ALERTS", l), promv1.Range{Start: since, End: time.Now(), Step: 250 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return firstSample(v)
	}
	return first("pending"), first("firing")
}

func firstSample(v model.Value) time.Time {
	var t time.Time
	if m, ok := v.(model.Matrix); ok {
		for _, s := range m {
			if len(s.Values) > 0 && (t.IsZero() || s.Values[0].Timestamp.Time().Before(t)) {
				t = s.Values[0].Timestamp.Time()
			}
		}
	}
	return t
}

// waitResolved waits until the alert is neither pending nor firing.
func waitResolved(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(alertTimeout)
	for {
		active := slices.ContainsFunc(activeAlerts(t), func(a promv1.Alert) bool { return matches(a, name, labels) })
		if !active {
			t.Logf("alert %s resolved after %s", alertKey(name, labels), time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s still active after %s; active alerts:\n  %s", alertKey(name, labels), alertTimeout, describeAlerts(activeAlerts(t)))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// alertLabels asserts the alert carries the labels want.
func alertLabels(t *testing.T, a promv1.Alert, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := string(a.Labels[model.LabelName(k)]); got != v {
			t.Errorf("alert %s: label %s=%q, want %q", a.Labels["alertname"], k, got, v)
		}
	}
}

// query runs an instant PromQL query.
func query(ctx context.Context, t *testing.T, q string) model.Vector {
	t.Helper()
	v, _, err := prom().Query(ctx, q, time.Now())
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s: %s, want a vector", q, v.Type())
	}
	return vec
}
