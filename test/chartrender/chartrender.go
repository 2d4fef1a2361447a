// Package chartrender renders charts/retention-guard as `helm install`
// would — values.schema.json validation included — with the Helm v4
// library, for the chart tests and the end-to-end stack.
package chartrender

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The release name and namespace the chart is rendered with.
const (
	ReleaseName      = "retention-guard"
	ReleaseNamespace = "retention-guard"
)

// Files renders the chart at chartDir with vals over values.yaml and
// returns its files by name (templates and NOTES.txt). A value the schema
// refuses is an error that names it.
func Files(chartDir string, vals map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	rv, err := util.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: ReleaseName, Namespace: ReleaseNamespace, Revision: 1, IsInstall: true}, nil, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// Objects decodes the YAML files among files, in file-name order.
func Objects(files map[string]string) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, n := range names {
		o, err := Decode(files[n])
		if err != nil {
			return nil, fmt.Errorf("%s does not parse: %w", n, err)
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// Render renders the chart and decodes the objects `helm install`
// creates: all but the test hooks (helm.sh/hook: test), which only `helm
// test` creates (Objects of Files keeps them).
func Render(chartDir string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	files, err := Files(chartDir, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	objs, err := Objects(files)
	if err != nil {
		return nil, err
	}
	installed := objs[:0]
	for _, o := range objs {
		if !IsTestHook(o) {
			installed = append(installed, o)
		}
	}
	return installed, nil
}

// IsTestHook reports whether o is one of the chart's `helm test` objects.
func IsTestHook(o *unstructured.Unstructured) bool {
	for _, e := range strings.Split(o.GetAnnotations()["helm.sh/hook"], ",") {
		if strings.TrimSpace(e) == "test" || strings.TrimSpace(e) == "test-success" {
			return true
		}
	}
	return false
}

// Decode reads every non-empty YAML or JSON document in s.
func Decode(s string) ([]*unstructured.Unstructured, error) {
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
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
