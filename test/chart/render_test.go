package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/chartrender"
)

const (
	releaseName = chartrender.ReleaseName
	releaseNS   = chartrender.ReleaseNamespace
	fullname    = "retention-guard"
)

var (
	root     = testenv.RepoRoot()
	chartDir = filepath.Join(root, "charts", "retention-guard")
)

// renderErr renders the chart as `helm install` would (schema validation
// included) with vals over values.yaml.
func renderErr(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	return chartrender.Files(chartDir, vals)
}

// manifests is a rendered release, by kind and name.
type manifests struct {
	objs  []*unstructured.Unstructured
	notes string
}

func render(t *testing.T, vals map[string]any) manifests {
	t.Helper()
	files, err := renderErr(t, vals)
	if err != nil {
		t.Fatalf("rendering with %v: %v", vals, err)
	}
	objs, err := chartrender.Objects(files)
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{objs: objs}
	for n, f := range files {
		if strings.HasSuffix(n, "/NOTES.txt") {
			m.notes = f
		}
	}
	return m
}

func decodeAll(s string) ([]*unstructured.Unstructured, error) { return chartrender.Decode(s) }

func (m manifests) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m.all(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func (m manifests) get(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := m.find(kind, name)
	if o == nil {
		var have []string
		for _, o := range m.objs {
			have = append(have, o.GetKind()+"/"+o.GetName())
		}
		t.Fatalf("no %s %q rendered; have %v", kind, name, have)
	}
	return o
}

// into converts an unstructured object into a typed one.
func into[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	b, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	v := new(T)
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return v
}

// generated reads the one document of a controller-gen output under config/.
func generated[T any](t *testing.T, rel string) *T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimPrefix(b, []byte("---\n"))
	v := new(T)
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return v
}

// set builds a values map from dotted paths.
func set(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		parts := strings.Split(kv[i].(string), ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = kv[i+1]
	}
	return out
}
