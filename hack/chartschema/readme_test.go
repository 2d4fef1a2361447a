package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func chartFiles(t *testing.T) (tmpl, chart, values []byte) {
	t.Helper()
	dir := filepath.Join("..", "..", "charts", "retention-guard")
	var err error
	if tmpl, err = os.ReadFile(filepath.Join(dir, "README.md.gotmpl")); err != nil {
		t.Fatal(err)
	}
	if chart, err = os.ReadFile(filepath.Join(dir, "Chart.yaml")); err != nil {
		t.Fatal(err)
	}
	if values, err = os.ReadFile(filepath.Join(dir, "values.yaml")); err != nil {
		t.Fatal(err)
	}
	return tmpl, chart, values
}

// TestCommittedReadmeIsGenerated: the chart's README.md is what
// README.md.gotmpl renders from Chart.yaml and values.yaml (make
// chart-docs), as hack/verify.sh checks.
func TestCommittedReadmeIsGenerated(t *testing.T) {
	tmpl, chart, values := chartFiles(t)
	want, err := os.ReadFile(filepath.Join("..", "..", "charts", "retention-guard", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Readme(tmpl, chart, values)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("README.md is out of date with values.yaml, Chart.yaml or README.md.gotmpl: run make chart-docs")
	}
}

// TestReadmeDescriptionReachesItsRow: an edited description in values.yaml
// is the Description cell of its value's row, beside its key, type and
// default.
func TestReadmeDescriptionReachesItsRow(t *testing.T) {
	tmpl, chart, values := chartFiles(t)
	const old = "# -- Image pull policy.\n"
	if !bytes.Contains(values, []byte(old)) {
		t.Fatalf("values.yaml no longer says %q; pick another description", old)
	}
	edited := bytes.Replace(values, []byte(old), []byte("# -- When the kubelet pulls\n  # the image | a pipe.\n"), 1)
	got, err := Readme(tmpl, chart, edited)
	if err != nil {
		t.Fatal(err)
	}
	row := "\n| image.pullPolicy | string | `\"IfNotPresent\"` | When the kubelet pulls the image \\| a pipe. |\n"
	if !strings.Contains(string(got), row) {
		t.Errorf("README.md has no row %q:\n%s", row, got)
	}
}

// TestRows: which values get a row, and what it says (the helm-docs rules
// the chart's README was first generated with).
func TestRows(t *testing.T) {
	rows, err := Rows([]byte(`# Header, no row.

# -- A name.
name: x
# -- (duration) A timeout.
timeout: 10s
# -- Ports.
ports: [443, 6443]
group:
  # -- On or off.
  on: true
  # -- A ratio.
  # @default -- half of it
  ratio: 0.5
# -- Resources, one row.
res:
  limits: {cpu: "1", memory: 512Mi}
  # -- Described below a described mapping: its own row.
  requests: {cpu: 100m}
"dotted.key": 1
empty: {}
none: null
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{"name", "string", "`\"x\"`", "A name."},
		{"timeout", "duration", "`\"10s\"`", "A timeout."},
		{"ports", "list", "`[443,6443]`", "Ports."},
		{"group.on", "bool", "`true`", "On or off."},
		{"group.ratio", "float", "half of it", "A ratio."},
		{"res", "object", "`{\"limits\":{\"cpu\":\"1\",\"memory\":\"512Mi\"},\"requests\":{\"cpu\":\"100m\"}}`", "Resources, one row."},
		{"res.requests", "object", "`{\"cpu\":\"100m\"}`", "Described below a described mapping: its own row."},
		{`"dotted.key"`, "int", "`1`", ""},
		{"empty", "object", "`{}`", ""},
		{"none", "string", "`nil`", ""},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%q\nwant:\n%q", rows, want)
	}
}
