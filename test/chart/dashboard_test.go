package chart_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	corev1 "k8s.io/api/core/v1"
)

// grafanaGlobals are the variables Grafana itself defines for queries
// (https://grafana.com/docs/grafana/latest/dashboards/variables/add-template-variables/#global-variables).
var grafanaGlobals = []string{"__interval", "__interval_ms", "__rate_interval", "__range", "__range_s", "__range_ms",
	"__dashboard", "__from", "__to", "__name", "__org", "__user", "__timezone"}

// dashboardVar matches $name, ${name} and ${name:format} in a query or a
// datasource reference.
var dashboardVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// The chart's Grafana dashboard as Grafana's own published types read it
// (issue 36: it had never been loaded by anything): the dashboard kind of
// grafana-foundation-sdk, generated from Grafana's schema, decodes it
// strictly (no field it does not know, none it requires missing, each
// panel's options and field config by its plugin's own type) and
// validates it; every variable a query or a data source names is one the
// dashboard defines or one of Grafana's globals; every panel reads the
// Prometheus data source variable. The queries themselves run against a
// real Prometheus in test/e2e (TestDashboardQueriesReturnData).
func TestDashboardIsGrafanasSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	m := render(t, set("grafanaDashboard.enabled", true))
	cm := into[corev1.ConfigMap](t, m.get(t, "ConfigMap", fullname+"-dashboard"))
	raw := []byte(cm.Data["retention-guard.json"])

	// The classic dashboard kind: what files/dashboard.json is and what
	// Grafana's sidecar loads. The SDK marks it deprecated in favour of
	// dashboardv2, the v2 resource Grafana 12's API serves, another format.
	//lint:ignore SA1019 the chart ships a classic dashboard (see above)
	var strict dashboard.Dashboard
	if err := noBuildErrors(strict.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("Grafana's dashboard schema refuses the chart's dashboard:\n%v", err)
	}
	// The strict decoder checks; it leaves the panels out (v0.0.22 drops
	// a panel whose decoding returned its empty error list). The plain
	// decoder reads them, each query as its data source's own type.
	//lint:ignore SA1019 the chart ships a classic dashboard (see above)
	var d dashboard.Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if err := noBuildErrors(d.Validate()); err != nil {
		t.Fatalf("Grafana's dashboard schema does not validate the chart's dashboard:\n%v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("the dashboard has no panel")
	}

	defined := slices.Clone(grafanaGlobals)
	var datasourceVar string
	for _, v := range d.Templating.List {
		defined = append(defined, v.Name)
		if v.Type == "datasource" {
			datasourceVar = v.Name
			if q, _ := json.Marshal(v.Query); !strings.Contains(string(q), "prometheus") {
				t.Errorf("data source variable %s selects %s, want prometheus data sources", v.Name, q)
			}
		}
	}
	if datasourceVar == "" {
		t.Fatal("the dashboard has no data source variable: a fixed data source UID matches no one's Grafana")
	}
	used := func(where, s string) {
		for _, m := range dashboardVar.FindAllStringSubmatch(s, -1) {
			name := m[1] + m[2]
			if !slices.Contains(defined, name) {
				t.Errorf("%s names $%s, which the dashboard does not define (variables: %v)", where, name, defined)
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Datasource != nil && v.Datasource.Uid != nil {
			used("variable "+v.Name+" data source", *v.Datasource.Uid)
		}
		if q, err := json.Marshal(v.Query); err == nil {
			used("variable "+v.Name, string(q))
		}
	}
	panels := 0
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue // a row: no queries
		}
		panels++
		title := "panel " + deref(p.Panel.Title)
		if p.Panel.Datasource == nil || p.Panel.Datasource.Uid == nil || *p.Panel.Datasource.Uid != "${"+datasourceVar+"}" {
			t.Errorf("%s does not read the data source variable ${%s}", title, datasourceVar)
		}
		if len(p.Panel.Targets) == 0 {
			t.Errorf("%s has no query", title)
		}
		for _, tg := range p.Panel.Targets {
			b, err := json.Marshal(tg)
			if err != nil {
				t.Fatal(err)
			}
			var q struct{ Expr string }
			if err := json.Unmarshal(b, &q); err != nil || q.Expr == "" {
				t.Errorf("%s: a query without a PromQL expr: %s", title, b)
			}
			used(title, string(b))
		}
	}
	if panels != len(d.Panels) || panels == 0 {
		t.Errorf("%d of %d panels decoded, want every one (the dashboard has no rows)", panels, len(d.Panels))
	}
}

// noBuildErrors is err, or nil for an empty cog.BuildErrors: the SDK's
// UnmarshalJSONStrict (v0.0.22) returns its error list as an error even
// when the list is empty.
func noBuildErrors(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
