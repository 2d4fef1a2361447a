package e2e

// The dashboard check: what Grafana does with the chart's dashboard,
// done against the stack's real Prometheus (issue 36). No Grafana server
// runs here (docs/install.md says why), so the check does Grafana's part
// itself, the way Grafana's Prometheus data source does it: it resolves
// every template variable by running the variable's own query, puts the
// values into every panel's queries with Grafana's formatting, and runs
// them. TestDashboardQueriesReturnData (scenarios_test.go, after the
// seeds' scenarios) calls it on the chart's dashboard;
// TestDashboardCheckFailsBrokenPanels shows it refusing broken ones.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// grafanaDashboard is the part of a classic Grafana dashboard the check
// reads (its schema is checked by test/chart's
// TestDashboardIsGrafanasSchema with Grafana's own types).
type grafanaDashboard struct {
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Regex      string          `json:"regex"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Datasource *grafanaDSRef   `json:"datasource"`
}

type grafanaDSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	Title      string         `json:"title"`
	Type       string         `json:"type"`
	Datasource *grafanaDSRef  `json:"datasource"`
	Targets    []grafanaQuery `json:"targets"`
	// Panels are a collapsed row's.
	Panels []grafanaPanel `json:"panels"`
}

type grafanaQuery struct {
	RefID      string        `json:"refId"`
	Expr       string        `json:"expr"`
	Instant    bool          `json:"instant"`
	Datasource *grafanaDSRef `json:"datasource"`
}

// dashboardCheck is one run of the check: the Prometheus the data source
// points at, the time range the dashboard is viewed over, and the data
// source's scrape interval (Grafana's "Scrape interval" setting, the
// floor of $__interval and the base of $__rate_interval).
type dashboardCheck struct {
	api      promv1.API
	from, to time.Time
	scrape   time.Duration
	// maxDataPoints is a panel's width in points (Grafana: its width in
	// pixels).
	maxDataPoints int

	problems []string
	report   []string
	// metrics are the metric names Prometheus has over the range.
	metrics model.LabelValues
	// vars are the resolved variables, in the dashboard's order.
	vars []resolvedVar
}

type resolvedVar struct {
	v      grafanaVariable
	values []string
}

func (c *dashboardCheck) problemf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *dashboardCheck) reportf(format string, args ...any) {
	c.report = append(c.report, fmt.Sprintf(format, args...))
}

// checkDashboard runs the check on a dashboard's JSON: its problems are
// what fails it (none: the dashboard works), its report what it saw.
func checkDashboard(ctx context.Context, api promv1.API, raw []byte, from, to time.Time, scrape time.Duration) *dashboardCheck {
	c := &dashboardCheck{api: api, from: from, to: to, scrape: scrape, maxDataPoints: 1000}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		c.problemf("the dashboard is not JSON: %v", err)
		return c
	}
	var err error
	if c.metrics, _, err = api.LabelValues(ctx, "__name__", nil, from, to); err != nil {
		c.problemf("listing Prometheus' metrics: %v", err)
		return c
	}
	c.resolveVariables(ctx, d.Templating.List)
	queries := 0
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				c.problemf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				queries++
				c.checkQuery(ctx, p, q)
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		c.problemf("the dashboard has no query")
	}
	return c
}

// resolveVariables runs each variable's query, in order (a variable's
// query may name the ones before it), as Grafana's Prometheus data source
// does.
func (c *dashboardCheck) resolveVariables(ctx context.Context, vars []grafanaVariable) {
	for _, v := range vars {
		var values []string
		switch v.Type {
		case "datasource":
			// The data source variable lists the data sources of its
			// type: here, the one Prometheus.
			var typ string
			if json.Unmarshal(v.Query, &typ) != nil || typ != "prometheus" {
				c.problemf("variable %s: data sources of type %s, want prometheus", v.Name, v.Query)
				continue
			}
			values = []string{"prometheus"}
		case "query":
			if !c.readsPrometheus(v.Datasource) {
				c.problemf("variable %s reads data source %+v, not the Prometheus data source", v.Name, v.Datasource)
				continue
			}
			q, err := variableQuery(v.Query)
			if err != nil {
				c.problemf("variable %s: %v", v.Name, err)
				continue
			}
			q, ok := c.substitute(fmt.Sprintf("variable %s", v.Name), q, c.defaults())
			if !ok {
				continue
			}
			values, err = c.runVariableQuery(ctx, q)
			if err != nil {
				c.problemf("variable %s: %s: %v", v.Name, q, err)
				continue
			}
			if v.Regex != "" {
				values, err = filterRegex(v.Regex, values)
				if err != nil {
					c.problemf("variable %s: regex %s: %v", v.Name, v.Regex, err)
					continue
				}
			}
			c.reportf("variable %s: %s -> %v", v.Name, q, values)
		case "custom":
			var q string
			_ = json.Unmarshal(v.Query, &q)
			for s := range strings.SplitSeq(q, ",") {
				if s = strings.TrimSpace(s); s != "" {
					values = append(values, s)
				}
			}
		case "constant":
			var q string
			_ = json.Unmarshal(v.Query, &q)
			values = []string{q}
		default:
			c.problemf("variable %s: type %s is not one the check resolves", v.Name, v.Type)
			continue
		}
		if len(values) == 0 {
			c.problemf("variable %s resolves to no value against Prometheus: every panel filtering by it is empty", v.Name)
			continue
		}
		c.vars = append(c.vars, resolvedVar{v: v, values: values})
	}
}

// variableQuery is the PromQL-side query of a query variable: a string
// (the classic form) or {"query": ...} (Grafana 10's).
func variableQuery(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var o struct{ Query string }
	if err := json.Unmarshal(raw, &o); err != nil || o.Query == "" {
		return "", fmt.Errorf("query %s is neither a string nor {query}", raw)
	}
	return o.Query, nil
}

var (
	labelValuesRe = regexp.MustCompile(`^label_values\(\s*(?:(.+?)\s*,\s*)?([a-zA-Z_]\w*)\s*\)$`)
	queryResultRe = regexp.MustCompile(`^query_result\((.+)\)$`)
	metricsRe     = regexp.MustCompile(`^metrics\((.*)\)$`)
	labelNamesRe  = regexp.MustCompile(`^label_names\(\s*\)$`)
)

// runVariableQuery is what Grafana's Prometheus data source does with a
// variable query (its metricFindQuery): label_values(label),
// label_values(selector, label), label_names(), metrics(regex) and
// query_result(expr), over the dashboard's time range.
func (c *dashboardCheck) runVariableQuery(ctx context.Context, q string) ([]string, error) {
	q = strings.TrimSpace(q)
	var out []string
	switch {
	case labelValuesRe.MatchString(q):
		m := labelValuesRe.FindStringSubmatch(q)
		var match []string
		if m[1] != "" {
			match = []string{m[1]}
		}
		vals, _, err := c.api.LabelValues(ctx, m[2], match, c.from, c.to)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			out = append(out, string(v))
		}
	case labelNamesRe.MatchString(q):
		names, _, err := c.api.LabelNames(ctx, nil, c.from, c.to)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, string(n))
		}
	case metricsRe.MatchString(q):
		re, err := regexp.Compile(metricsRe.FindStringSubmatch(q)[1])
		if err != nil {
			return nil, err
		}
		vals, _, err := c.api.LabelValues(ctx, "__name__", nil, c.from, c.to)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if re.MatchString(string(v)) {
				out = append(out, string(v))
			}
		}
	case queryResultRe.MatchString(q):
		v, _, err := c.api.Query(ctx, queryResultRe.FindStringSubmatch(q)[1], c.to)
		if err != nil {
			return nil, err
		}
		vec, _ := v.(model.Vector)
		for _, s := range vec {
			out = append(out, fmt.Sprintf("%s %s %d", s.Metric, s.Value, s.Timestamp))
		}
	default:
		return nil, fmt.Errorf("not a query Grafana's Prometheus data source runs for a variable")
	}
	return out, nil
}

// filterRegex is a variable's regex: values that do not match are
// dropped; with a capture group, the first group is the value.
func filterRegex(expr string, values []string) ([]string, error) {
	expr = strings.TrimPrefix(expr, "/")
	if i := strings.LastIndex(expr, "/"); i >= 0 {
		expr = expr[:i]
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range values {
		if m := re.FindStringSubmatch(v); m != nil {
			if len(m) > 1 {
				v = m[1]
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// readsPrometheus: a data source reference Grafana resolves to the
// Prometheus data source: the data source variable, or one of type
// prometheus with no fixed UID of someone's Grafana.
func (c *dashboardCheck) readsPrometheus(ref *grafanaDSRef) bool {
	if ref == nil {
		return false
	}
	for _, rv := range c.vars {
		if rv.v.Type == "datasource" && (ref.UID == "$"+rv.v.Name || ref.UID == "${"+rv.v.Name+"}") {
			return true
		}
	}
	return false
}

// selection is a value chosen for each variable: the values selected,
// all marks "All".
type selection map[string]struct {
	values []string
	all    bool
}

// defaults is the selection a dashboard opens with: All for a variable
// that has it, the first value otherwise.
func (c *dashboardCheck) defaults() selection {
	s := selection{}
	for _, rv := range c.vars {
		e := s[rv.v.Name]
		if rv.v.IncludeAll {
			e.all, e.values = true, rv.values
		} else {
			e.values = rv.values[:1]
		}
		s[rv.v.Name] = e
	}
	return s
}

// grafanaVarRe matches $name, ${name}, ${name:format} and [[name]].
var grafanaVarRe = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute puts a selection and Grafana's globals into a query the way
// Grafana's Prometheus data source does (interpolateQueryExpr): a
// multi-value or All-able variable's values regex-escaped, several as
// (a|b), All as the allValue when there is one. A variable neither the
// dashboard nor Grafana defines is a problem.
func (c *dashboardCheck) substitute(where, q string, sel selection) (string, bool) {
	interval := c.interval()
	rate := max(interval+c.scrape, 4*c.scrape)
	rng := c.to.Sub(c.from)
	globals := map[string]string{
		"__interval":      promDuration(interval),
		"__interval_ms":   strconv.FormatInt(interval.Milliseconds(), 10),
		"__rate_interval": promDuration(rate),
		"__range":         promDuration(rng.Truncate(time.Second)),
		"__range_s":       strconv.FormatInt(int64(rng.Seconds()), 10),
		"__range_ms":      strconv.FormatInt(rng.Milliseconds(), 10),
		"__from":          strconv.FormatInt(c.from.UnixMilli(), 10),
		"__to":            strconv.FormatInt(c.to.UnixMilli(), 10),
	}
	ok := true
	out := grafanaVarRe.ReplaceAllStringFunc(q, func(m string) string {
		g := grafanaVarRe.FindStringSubmatch(m)
		name, format := g[1]+g[3]+g[4], g[2]
		if v, found := globals[name]; found {
			return v
		}
		var rv *resolvedVar
		for i := range c.vars {
			if c.vars[i].v.Name == name {
				rv = &c.vars[i]
			}
		}
		if rv == nil {
			c.problemf("%s names $%s, which the dashboard does not define (or did not resolve)", where, name)
			ok = false
			return m
		}
		if format != "" && format != "regex" && format != "pipe" && format != "raw" {
			c.problemf("%s: format %s of $%s is not one the check applies", where, format, name)
			ok = false
			return m
		}
		s := sel[name]
		if rv.v.Type == "datasource" {
			return s.values[0]
		}
		if s.all && rv.v.AllValue != "" {
			return rv.v.AllValue
		}
		if format == "raw" || !rv.v.Multi && !rv.v.IncludeAll {
			return strings.Join(s.values, ",")
		}
		esc := make([]string, len(s.values))
		for i, v := range s.values {
			esc[i] = promRegexEscape(v)
		}
		if len(esc) == 1 {
			return esc[0]
		}
		return "(" + strings.Join(esc, "|") + ")"
	})
	return out, ok
}

// promRegexEscape is Grafana's prometheusSpecialRegexEscape: a value
// inside a regex matcher's string literal.
func promRegexEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\\\`)
		case strings.ContainsRune(`$^*{}[]'+?.()|`, r):
			b.WriteString(`\\`)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// interval is Grafana's $__interval: the range over the panel's points,
// no finer than the data source's scrape interval, in whole seconds.
func (c *dashboardCheck) interval() time.Duration {
	i := c.to.Sub(c.from) / time.Duration(c.maxDataPoints)
	return max(i, c.scrape).Round(time.Second)
}

func promDuration(d time.Duration) string {
	return model.Duration(d).String()
}

// checkQuery runs one query of a panel: with the selection the dashboard
// opens with, as the panel runs it (an instant query at the range's end
// or a range query), which must not fail; and its data part — the query
// less a constant fallback such as `or vector(0)`, which answers whether
// there is data or not — over the range, which must return a series with
// a value, for the default selection, for every value of a multi-value
// variable ticked at once, and for at least one of its values alone.
// Every metric it names must be one Prometheus has.
func (c *dashboardCheck) checkQuery(ctx context.Context, p grafanaPanel, q grafanaQuery) {
	name := fmt.Sprintf("panel %q query %s", p.Title, q.RefID)
	// The panel's data source runs its queries; a query's own reference,
	// when it has one, must agree.
	if !c.readsPrometheus(p.Datasource) {
		c.problemf("%s: its panel reads data source %+v, not the Prometheus data source variable", name, p.Datasource)
		return
	}
	if q.Datasource != nil && !c.readsPrometheus(q.Datasource) {
		c.problemf("%s reads data source %+v, not the Prometheus data source variable", name, q.Datasource)
		return
	}
	if strings.TrimSpace(q.Expr) == "" {
		c.problemf("%s has no PromQL expr", name)
		return
	}
	expr, ok := c.substitute(name, q.Expr, c.defaults())
	if !ok {
		return
	}
	parsed, err := metricsql.Parse(expr)
	if err != nil {
		c.problemf("%s: its selectors cannot be read (MetricsQL's parser, a superset of PromQL's): %v: %s", name, err, expr)
	}
	if parsed != nil {
		for _, m := range metricNames(parsed) {
			if !slices.Contains(c.metrics, model.LabelValue(m)) {
				c.problemf("%s names metric %s, which Prometheus does not have: %s", name, m, expr)
			}
		}
	}

	// As the panel runs it.
	var shown int
	if q.Instant {
		v, _, err := c.api.Query(ctx, expr, c.to)
		if err != nil {
			c.problemf("%s fails in Prometheus: %v: %s", name, err, expr)
			return
		}
		shown, _ = count(v)
	} else {
		v, _, err := c.api.QueryRange(ctx, expr, promv1.Range{Start: c.from, End: c.to, Step: c.interval()})
		if err != nil {
			c.problemf("%s fails in Prometheus: %v: %s", name, err, expr)
			return
		}
		_, shown = count(v)
	}
	if shown == 0 {
		c.problemf("%s shows nothing (the panel as it opens): %s", name, expr)
	}

	// Its data part, for each selection.
	data := func(sel selection) (string, int, bool) {
		e, ok := c.substitute(name, q.Expr, sel)
		if !ok {
			return "", 0, false
		}
		e = dataPart(e)
		v, _, err := c.api.QueryRange(ctx, e, promv1.Range{Start: c.from, End: c.to, Step: c.interval()})
		if err != nil {
			c.problemf("%s fails in Prometheus: %v: %s", name, err, e)
			return e, 0, false
		}
		series, _ := count(v)
		return e, series, true
	}
	e, n, ok := data(c.defaults())
	if !ok {
		return
	}
	if n == 0 {
		c.problemf("%s returns no series over the range (the dashboard's default selection): %s", name, e)
		return
	}
	c.reportf("%s: %d series: %s", name, n, e)
	for _, rv := range c.vars {
		if !rv.v.Multi && !rv.v.IncludeAll || len(rv.values) < 2 || !usesVar(q.Expr, rv.v.Name) {
			continue
		}
		sel := c.defaults()
		sel[rv.v.Name] = struct {
			values []string
			all    bool
		}{values: rv.values}
		if e, n, ok := data(sel); ok && n == 0 {
			c.problemf("%s returns no series with every value of $%s ticked: %s", name, rv.v.Name, e)
		}
		some := false
		for _, val := range rv.values {
			sel[rv.v.Name] = struct {
				values []string
				all    bool
			}{values: []string{val}}
			if _, n, ok := data(sel); ok && n > 0 {
				some = true
				break
			}
		}
		if !some {
			c.problemf("%s returns no series for any single value of $%s %v: the variable's values select none of its data", name, rv.v.Name, rv.values)
		}
	}
}

func usesVar(expr, name string) bool {
	for _, g := range grafanaVarRe.FindAllStringSubmatch(expr, -1) {
		if g[1]+g[3]+g[4] == name {
			return true
		}
	}
	return false
}

// count is the series of a result and the points with a value.
func count(v model.Value) (series, points int) {
	switch r := v.(type) {
	case model.Vector:
		return len(r), len(r)
	case model.Matrix:
		for _, s := range r {
			n := 0
			for _, sp := range s.Values {
				if !math.IsNaN(float64(sp.Value)) {
					n++
				}
			}
			if n > 0 {
				series++
				points += n
			}
		}
	case *model.Scalar:
		return 1, 1
	}
	return series, points
}

// metricNames are the metric names of every selector of an expression.
func metricNames(e metricsql.Expr) []string {
	var out []string
	metricsql.VisitAll(e, func(x metricsql.Expr) {
		me, ok := x.(*metricsql.MetricExpr)
		if !ok {
			return
		}
		for _, lfs := range me.LabelFilterss {
			for _, lf := range lfs {
				if lf.Label == "__name__" && !lf.IsRegexp && !lf.IsNegative && !slices.Contains(out, lf.Value) {
					out = append(out, lf.Value)
				}
			}
		}
	})
	return out
}

// dataPart is an expression less a top-level `or` whose right side reads
// no metric (`or vector(0)`, `or on() vector(0)`): that side answers
// when the data part has nothing, so it would hide an empty panel.
func dataPart(expr string) string {
	i := lastTopLevelOr(expr)
	if i < 0 {
		return expr
	}
	right := expr[i+len("or"):]
	// The right side may begin with the operator's modifiers.
	right = regexp.MustCompile(`^\s*(on|ignoring)\s*\([^)]*\)`).ReplaceAllString(right, "")
	e, err := metricsql.Parse(right)
	if err != nil || len(metricNames(e)) > 0 {
		return expr
	}
	return strings.TrimSpace(expr[:i])
}

// lastTopLevelOr is the index of the last `or` operator outside
// parentheses, brackets, braces and strings, or -1.
func lastTopLevelOr(expr string) int {
	depth, last := 0, -1
	var quote byte
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		switch {
		case quote != 0:
			if ch == '\\' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'' || ch == '`':
			quote = ch
		case ch == '(' || ch == '[' || ch == '{':
			depth++
		case ch == ')' || ch == ']' || ch == '}':
			depth--
		case depth == 0 && (ch == 'o' || ch == 'O') && i+2 <= len(expr) && strings.EqualFold(expr[i:i+2], "or") &&
			(i == 0 || !isIdent(expr[i-1])) && (i+2 == len(expr) || !isIdent(expr[i+2])):
			last = i
		}
	}
	return last
}

func isIdent(b byte) bool {
	return b == '_' || b == ':' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// scrapeInterval is the longest scrape interval of Prometheus' jobs, read
// from its running configuration: what the Grafana data source's "Scrape
// interval" is set to.
func scrapeInterval(ctx context.Context, api promv1.API) (time.Duration, error) {
	cfg, err := api.Config(ctx)
	if err != nil {
		return 0, err
	}
	var c struct {
		Global struct {
			ScrapeInterval string `json:"scrape_interval"`
		} `json:"global"`
		ScrapeConfigs []struct {
			ScrapeInterval string `json:"scrape_interval"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(cfg.YAML), &c); err != nil {
		return 0, err
	}
	longest := time.Duration(0)
	for _, s := range append([]string{c.Global.ScrapeInterval}, func() []string {
		var out []string
		for _, sc := range c.ScrapeConfigs {
			out = append(out, sc.ScrapeInterval)
		}
		return out
	}()...) {
		if s == "" {
			continue
		}
		d, err := model.ParseDuration(s)
		if err != nil {
			return 0, err
		}
		longest = max(longest, time.Duration(d))
	}
	if longest == 0 {
		return 0, fmt.Errorf("no scrape interval in Prometheus' configuration")
	}
	return longest, nil
}

// values are a resolved variable's values.
func (c *dashboardCheck) values(name string) []string {
	for _, rv := range c.vars {
		if rv.v.Name == name {
			return rv.values
		}
	}
	return nil
}
