package chart_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/retentionguard/retention-guard/internal/testenv"
)

const (
	releaseName = "retention-guard"
	releaseNS   = "retention-guard"
	fullname    = "retention-guard"
)

var (
	root     = testenv.RepoRoot()
	chartDir = filepath.Join(root, "charts", "retention-guard")
)

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

// renderErr renders the chart as `helm install` would (schema validation
// included) with vals over values.yaml.
func renderErr(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	ch := loadChart(t)
	rv, err := util.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: releaseName, Namespace: releaseNS, Revision: 1, IsInstall: true}, nil, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
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
	var m manifests
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") {
			m.notes = files[n]
			continue
		}
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		objs, err := decodeAll(files[n])
		if err != nil {
			t.Fatalf("%s does not parse: %v\n%s", n, err, files[n])
		}
		m.objs = append(m.objs, objs...)
	}
	return m
}

func decodeAll(s string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(s), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
}

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
