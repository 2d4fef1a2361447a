package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCommittedSchemaIsGenerated: the chart's values.schema.json is what
// values.yaml generates (make chart-docs), so go test catches an edited
// values.yaml whose schema was not regenerated, as hack/verify.sh does.
func TestCommittedSchemaIsGenerated(t *testing.T) {
	dir := filepath.Join("..", "..", "charts", "retention-guard")
	src, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Generate(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("values.schema.json is out of date with values.yaml: run make chart-docs")
	}
	again, _ := Generate(src)
	if !bytes.Equal(got, again) {
		t.Errorf("two runs on the same values.yaml differ")
	}
}

func generate(t *testing.T, src string) map[string]any {
	t.Helper()
	b, err := Generate([]byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInference(t *testing.T) {
	s := generate(t, `# @schema {title: t}

# -- A name.
name: x
# @schema {minimum: 1}
# -- How many.
count: 2
# -- A ratio.
ratio: 0.5
# -- On or off.
on: true
# -- Ports.
ports: [1, 2]
group:
  # @schema {enum: [a, b]}
  # -- One of two.
  # @default -- a, unless set
  pick: a
`)
	want := map[string]any{
		"title": "t", "type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"name":  map[string]any{"type": "string", "description": "A name."},
			"count": map[string]any{"type": "integer", "minimum": 1.0, "description": "How many."},
			"ratio": map[string]any{"type": "number", "description": "A ratio."},
			"on":    map[string]any{"type": "boolean", "description": "On or off."},
			"ports": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "description": "Ports."},
			"group": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"pick": map[string]any{"enum": []any{"a", "b"}, "description": "One of two."},
			}},
		},
	}
	if !reflect.DeepEqual(s, want) {
		got, _ := json.MarshalIndent(s, "", "  ")
		t.Errorf("schema:\n%s", got)
	}
}

func TestAnnotations(t *testing.T) {
	s := generate(t, `# @schema
# definitions: {d: {type: string, pattern: "^[0-9]+s$"}}
# properties: {global: {type: object}}
# @schema

# -- Alerts.
for:
  # @schema {$ref: "#/definitions/d", required: true}
  A: 5s
  B: 1s
# @schema
# additionalProperties: {type: string}
# @schema
# -- Labels.
labels: {}
# @schema {properties: {extra: {type: integer}}}
# -- Resources.
res:
  cpu: 1
`)
	props := s["properties"].(map[string]any)
	if _, ok := props["global"]; !ok {
		t.Errorf("the root annotation's properties are not added: %v", props)
	}
	f := props["for"].(map[string]any)
	if got := f["required"]; !reflect.DeepEqual(got, []any{"A"}) {
		t.Errorf("required %v, want [A] (hoisted from A's annotation)", got)
	}
	if a := f["properties"].(map[string]any)["A"]; !reflect.DeepEqual(a, map[string]any{"$ref": "#/definitions/d"}) {
		t.Errorf("A is %v: $ref replaces the inferred schema", a)
	}
	if l := props["labels"].(map[string]any); !reflect.DeepEqual(l["additionalProperties"], map[string]any{"type": "string"}) {
		t.Errorf("labels: %v", l)
	}
	r := props["res"].(map[string]any)["properties"].(map[string]any)
	if _, ok := r["cpu"]; !ok {
		t.Errorf("res lost its inferred cpu: %v", r)
	}
	if !reflect.DeepEqual(r["extra"], map[string]any{"type": "integer"}) {
		t.Errorf("res.extra from the annotation: %v", r["extra"])
	}
}

// TestRefuses: what the generator cannot know it refuses to guess.
func TestRefuses(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"an empty mapping", "# -- Labels.\nlabels: {}\n", "empty mapping"},
		{"an empty list", "# -- Hosts.\nhosts: []\n", "empty list"},
		{"a list of mappings", "# -- Rules.\nrules: [{a: 1}]\n", "annotation (items)"},
		{"a value without a description", "a:\n  b: 1\n", "a.b has no description"},
		{"an annotation below the description", "# -- A.\n# @schema {minimum: 1}\na: 1\n", "above the description"},
		{"an unclosed block", "# @schema\n# minimum: 1\n# -- A.\na: 1\n", "not closed"},
		{"a helm-docs tag nothing renders", "# -- A.\n# @section -- S\na: 1\n", "@section"},
		{"a null default", "# -- A.\na: null\n", "no JSON type"},
		{"a keyword twice", "# @schema {minimum: 1}\n# @schema {minimum: 2}\n# -- A.\na: 1\n", "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
