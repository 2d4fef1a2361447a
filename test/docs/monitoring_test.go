package docs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/retentionguard/retention-guard/test/chartrender"
)

var root = filepath.Join("..", "..")

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anchors are the fragment ids GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces to hyphens, repeats numbered.
// Lines in fenced code blocks are not headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			out[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	}
	return out
}

var mdLink = regexp.MustCompile(`\]\(([A-Za-z0-9_./-]*\.md)?#([^)\s]+)\)`)

// Every link to a heading of docs/ or the README (another file's, or the
// same file's) resolves: the alerts' runbook entries are such anchors.
func TestDocAnchorsResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	links := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(src), -1) {
			target := f
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(f), m[1])
			}
			doc, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s links to %s#%s: %v", filepath.Base(f), m[1], m[2], err)
				continue
			}
			links++
			if !anchors(string(doc))[m[2]] {
				t.Errorf("%s links to %s#%s: no such heading", filepath.Base(f), filepath.Base(target), m[2])
			}
		}
	}
	if links == 0 {
		t.Fatal("no link to a heading found: the pattern is wrong")
	}
}

type rule struct {
	Alert       string            `json:"alert"`
	Annotations map[string]string `json:"annotations"`
}

func renderedAlerts(t *testing.T, vals map[string]any) []rule {
	t.Helper()
	objs, err := chartrender.Render(filepath.Join(root, "charts", "retention-guard"), vals)
	if err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		b, err := yaml.Marshal(o.Object["spec"])
		if err != nil {
			t.Fatal(err)
		}
		var spec struct {
			Groups []struct{ Rules []rule }
		}
		if err := yaml.Unmarshal(b, &spec); err != nil {
			t.Fatal(err)
		}
		for _, g := range spec.Groups {
			out = append(out, g.Rules...)
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart rendered no alert")
	}
	return out
}

// Each alert's runbook_url is docs/runbook.md of the chart's version plus
// an anchor that exists there, and docs/install.md's alert table lists the
// alert with a link to that entry.
func TestAlertsLinkToTheirRunbookEntry(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal([]byte(read(t, "charts/retention-guard/Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	base := "https://github.com/retentionguard/retention-guard/blob/v" + chart.AppVersion + "/docs/runbook.md#"
	runbook := anchors(read(t, "docs/runbook.md"))
	install := read(t, "docs/install.md")
	for _, fp := range []string{"Fail", "Ignore"} {
		vals := map[string]any{
			"prometheusRule": map[string]any{"enabled": true},
			"serviceMonitor": map[string]any{"enabled": true},
			"webhook":        map[string]any{"failurePolicy": fp},
		}
		for _, r := range renderedAlerts(t, vals) {
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, base)
			if !ok {
				t.Errorf("%s: runbook_url %q does not start with %q", r.Alert, url, base)
				continue
			}
			if !runbook[anchor] {
				t.Errorf("%s: runbook_url %s: docs/runbook.md has no heading #%s", r.Alert, url, anchor)
			}
			row := "| `" + r.Alert + "` |"
			i := strings.Index(install, row)
			if i < 0 {
				t.Errorf("docs/install.md's alert table has no row for %s", r.Alert)
				continue
			}
			line := install[i : i+strings.Index(install[i:], "\n")]
			if !strings.Contains(line, "(runbook.md#"+anchor+")") {
				t.Errorf("docs/install.md's row for %s does not link runbook.md#%s: %s", r.Alert, anchor, line)
			}
		}
	}
}

// docs/install.md lists every panel of the dashboard with the queries
// behind it, as they are in the dashboard.
func TestDashboardTableMatchesTheDashboard(t *testing.T) {
	var dash struct {
		Panels []struct {
			Title   string
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(read(t, "charts/retention-guard/files/dashboard.json")), &dash); err != nil {
		t.Fatal(err)
	}
	install := read(t, "docs/install.md")
	rows := map[string]string{}
	for _, line := range strings.Split(install, "\n") {
		if strings.HasPrefix(line, "| ") {
			cells := strings.SplitN(strings.TrimPrefix(line, "| "), " | ", 2)
			rows[cells[0]] = strings.ReplaceAll(line, `\|`, "|")
		}
	}
	for _, p := range dash.Panels {
		row, ok := rows[p.Title]
		if !ok {
			t.Errorf("docs/install.md's dashboard table has no row for panel %q", p.Title)
			continue
		}
		if !strings.Contains(row, "| "+p.Type+" |") {
			t.Errorf("panel %q: the row does not say its type %s: %s", p.Title, p.Type, row)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(row, "`"+tg.Expr+"`") {
				t.Errorf("panel %q: the row lacks its query `%s`", p.Title, tg.Expr)
			}
		}
	}
}
