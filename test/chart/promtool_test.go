package chart_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The chart's alerts evaluated by Prometheus' own rule engine: the
// PrometheusRule is rendered with Helm's engine for every value
// combination that changes the rules, `promtool check rules` validates it,
// and `promtool test rules` replays, per alert, a series history that must
// fire it (at the time its `for` says, with its labels and text) and one
// that must not. promtool comes with Debian's prometheus package
// (hack/install-deps.sh, `make deps`).

// alertCombo is a value combination that changes the rules, and what the
// cases need to know of it. The durations are the contract stated here,
// not read back from the rendered rules.
type alertCombo struct {
	name string
	vals map[string]any
	// step is the cases' sample and evaluation interval; every duration
	// below is a multiple of it.
	step          time.Duration
	forOf         map[string]time.Duration
	rate          time.Duration
	failurePolicy string
	// job is the manager's scrape job (the metrics Service's name); empty
	// without a ServiceMonitor (no RetentionGuardManagerDown).
	job     string
	runbook string
	// shards are the values' shards (each a manager of its own).
	shards []string
}

// defaultFor is each alert's `for` when values.yaml is not overridden.
var defaultFor = map[string]time.Duration{
	"RetentionGuardPolicyViolated":                    5 * time.Minute,
	"RetentionGuardPolicyUnknown":                     15 * time.Minute,
	"RetentionGuardRecoveryHeadroomLow":               10 * time.Minute,
	"RetentionGuardEmptyGroupNearingOffsetsRetention": 10 * time.Minute,
	"RetentionGuardGroupOffsetsExpireWithinADay":      0,
	"RetentionGuardOffsetsTopicUnreadable":            30 * time.Minute,
	"RetentionGuardLogDivergedBelowGroup":             5 * time.Minute,
	"RetentionGuardWebhookDenying":                    0,
	"RetentionGuardWebhookFailingClosed":              5 * time.Minute,
	"RetentionGuardLiveChecksBusy":                    10 * time.Minute,
	"RetentionGuardWebhookErrors":                     5 * time.Minute,
	"RetentionGuardManagerDown":                       5 * time.Minute,
}

func alertCombos(t *testing.T) []alertCombo {
	defaultRunbook := "https://github.com/retentionguard/retention-guard/blob/v" + appVersion(t) + "/docs/runbook.md"
	short := map[string]any{}
	shortFor := map[string]time.Duration{}
	for a := range defaultFor {
		short[a] = "4s"
		shortFor[a] = 4 * time.Second
	}
	return []alertCombo{
		{
			name:          "defaults",
			vals:          set("prometheusRule.enabled", true, "serviceMonitor.enabled", true),
			step:          time.Minute,
			forOf:         defaultFor,
			rate:          5 * time.Minute,
			failurePolicy: "Fail",
			job:           fullname + "-webhook",
			runbook:       defaultRunbook,
		},
		{
			name:          "without ServiceMonitor",
			vals:          set("prometheusRule.enabled", true),
			step:          time.Minute,
			forOf:         defaultFor,
			rate:          5 * time.Minute,
			failurePolicy: "Fail",
			runbook:       defaultRunbook,
		},
		{
			name:          "failurePolicy Ignore",
			vals:          set("prometheusRule.enabled", true, "serviceMonitor.enabled", true, "webhook.failurePolicy", "Ignore"),
			step:          time.Minute,
			forOf:         defaultFor,
			rate:          5 * time.Minute,
			failurePolicy: "Ignore",
			job:           fullname + "-webhook",
			runbook:       defaultRunbook,
		},
		{
			name: "two shards",
			vals: set("prometheusRule.enabled", true, "serviceMonitor.enabled", true,
				"shards", []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}),
			step:          time.Minute,
			forOf:         defaultFor,
			rate:          5 * time.Minute,
			failurePolicy: "Fail",
			job:           fullname + "-webhook",
			runbook:       defaultRunbook,
			shards:        []string{"a", "b"},
		},
		{
			// What the end-to-end suite installs: seconds instead of
			// minutes, another name, the runbook elsewhere.
			name: "short durations, fullnameOverride, runbookURL",
			vals: set("prometheusRule.enabled", true, "serviceMonitor.enabled", true,
				"prometheusRule.for", short, "prometheusRule.rateInterval", "10s",
				"fullnameOverride", "guard", "prometheusRule.runbookURL", "https://git.example.internal/platform/retention-guard/runbook.md"),
			step:          time.Second,
			forOf:         shortFor,
			rate:          10 * time.Second,
			failurePolicy: "Fail",
			job:           "guard-webhook",
			runbook:       "https://git.example.internal/platform/retention-guard/runbook.md",
		},
	}
}

// promtool finds promtool or fails saying how to install it: the tests
// never skip for want of it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: run make deps (hack/install-deps.sh installs Debian's prometheus package, which brings it)")
	}
	return p
}

// renderedRules renders the chart's PrometheusRule with vals and returns
// its spec: a Prometheus rule file.
func renderedRules(t *testing.T, vals map[string]any) promRuleFile {
	t.Helper()
	prs := render(t, vals).all("PrometheusRule")
	if len(prs) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(prs))
	}
	spec, ok := prs[0].Object["spec"]
	if !ok {
		t.Fatal("the PrometheusRule has no spec")
	}
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var f promRuleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("the PrometheusRule's spec is not a rule file: %v", err)
	}
	return f
}

type promRuleFile struct {
	Groups []struct {
		Name  string     `json:"name"`
		Rules []promRule `json:"rules"`
	} `json:"groups"`
}

type promRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (f promRuleFile) alerts() map[string]promRule {
	out := map[string]promRule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r
		}
	}
	return out
}

// The promtool unit-test file format (prometheus/cmd/promtool/unittest.go).
type promTestFile struct {
	RuleFiles          []string        `json:"rule_files"`
	EvaluationInterval string          `json:"evaluation_interval"`
	Tests              []promTestGroup `json:"tests"`
}

type promTestGroup struct {
	Name           string          `json:"name"`
	Interval       string          `json:"interval"`
	InputSeries    []promSeries    `json:"input_series"`
	AlertRuleTests []promAlertTest `json:"alert_rule_test"`
}

type promSeries struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

type promAlertTest struct {
	EvalTime  string      `json:"eval_time"`
	AlertName string      `json:"alertname"`
	ExpAlerts []promAlert `json:"exp_alerts"`
}

type promAlert struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations"`
}

// TestAlertRules: promtool checks the rendered rules and runs every case
// against them, per value combination.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	for _, combo := range alertCombos(t) {
		t.Run(combo.name, func(t *testing.T) {
			rules := renderedRules(t, combo.vals)
			dir := t.TempDir()
			rb, err := yaml.Marshal(rules)
			if err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rb, 0o644))
			if out, err := exec.Command(tool, "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput(); err != nil {
				t.Fatalf("promtool check rules: %v\n%s\nrules:\n%s", err, out, rb)
			}

			cases := alertCases(t, combo)
			// Every rendered alert has a history that fires it and one
			// that does not; no case names an alert the chart lacks.
			fires, silent := map[string]int{}, map[string]int{}
			for _, c := range cases {
				if c.fires {
					fires[c.alert]++
				} else {
					silent[c.alert]++
				}
			}
			rendered := rules.alerts()
			for a := range rendered {
				if fires[a] == 0 || silent[a] == 0 {
					t.Errorf("alert %s has %d firing and %d silent histories; want at least one of each", a, fires[a], silent[a])
				}
				if want := combo.forOf[a]; promDuration(t, rendered[a].For) != want {
					t.Errorf("alert %s: for %q, want %s", a, rendered[a].For, want)
				}
			}
			for a := range fires {
				if _, ok := rendered[a]; !ok {
					t.Errorf("a case fires %s, which the chart does not render with these values", a)
				}
			}

			tf := promTestFile{RuleFiles: []string{"rules.yaml"}, EvaluationInterval: promDur(combo.step)}
			for _, c := range cases {
				if _, ok := rendered[c.alert]; !ok {
					continue // asserted above for firing cases; a silent one needs no rule
				}
				tf.Tests = append(tf.Tests, promTestGroup{
					Name: c.alert + ": " + c.what, Interval: promDur(combo.step),
					InputSeries: c.series, AlertRuleTests: c.evals,
				})
			}
			tb, err := yaml.Marshal(tf)
			if err != nil {
				t.Fatal(err)
			}
			testFile := filepath.Join(dir, "alerts_test.yaml")
			must(t, os.WriteFile(testFile, tb, 0o644))
			out, err := exec.Command(tool, "test", "rules", testFile).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules: %v\n%s", err, out)
			}
			var evals int
			for _, g := range tf.Tests {
				evals += len(g.AlertRuleTests)
			}
			t.Logf("promtool test rules: %d histories, %d evaluations over %d alerts: %s",
				len(tf.Tests), evals, len(rendered), strings.TrimSpace(lastLine(string(out))))
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// promDur writes d as a Prometheus duration in seconds ("90s", "0s").
func promDur(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// promDuration parses the Prometheus durations the chart writes (units
// ms, s, m, h, d, w, concatenated; "0").
func promDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" || s == "0" {
		return 0
	}
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
		"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}
	var total time.Duration
	rest := s
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 {
			t.Fatalf("duration %q does not parse", s)
		}
		n, _ := strconv.Atoi(rest[:i])
		rest = rest[i:]
		u := "ms"
		if !strings.HasPrefix(rest, "ms") {
			u = rest[:1]
		}
		d, ok := units[u]
		if !ok {
			t.Fatalf("duration %q: unknown unit %q", s, u)
		}
		total += time.Duration(n) * d
		rest = rest[len(u):]
	}
	return total
}

// humanizeDuration is Prometheus' template function of that name
// (template/template.go), for the expected text of alerts whose value is a
// duration.
func humanizeDuration(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4g", v)
	}
	if v == 0 {
		return fmt.Sprintf("%.4gs", v)
	}
	if math.Abs(v) >= 1 {
		sign := ""
		if v < 0 {
			sign = "-"
			v = -v
		}
		d := int64(v)
		seconds, minutes, hours, days := d%60, (d/60)%60, (d/3600)%24, d/86400
		switch {
		case days != 0:
			return fmt.Sprintf("%s%dd %dh %dm %ds", sign, days, hours, minutes, seconds)
		case hours != 0:
			return fmt.Sprintf("%s%dh %dm %ds", sign, hours, minutes, seconds)
		case minutes != 0:
			return fmt.Sprintf("%s%dm %ds", sign, minutes, seconds)
		}
		return fmt.Sprintf("%s%.4gs", sign, v)
	}
	return fmt.Sprintf("%.4gs", v) // not needed by the cases: their values are whole seconds
}

// seriesName writes name{labels} with sorted labels.
func seriesName(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
