package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	yaml "go.yaml.in/yaml/v3"
)

// Chart is what README.md's template may say of Chart.yaml (.Chart).
type Chart struct {
	Name         string       `yaml:"name"`
	Description  string       `yaml:"description"`
	Version      string       `yaml:"version"`
	AppVersion   string       `yaml:"appVersion"`
	KubeVersion  string       `yaml:"kubeVersion"`
	Home         string       `yaml:"home"`
	Dependencies []Dependency `yaml:"dependencies"`
}

// Dependency is a chart dependency of Chart.yaml.
type Dependency struct {
	Name       string `yaml:"name"`
	Alias      string `yaml:"alias"`
	Version    string `yaml:"version"`
	Repository string `yaml:"repository"`
}

// Row is one row of README.md's values table (.Values).
type Row struct {
	Key  string // the value's path, e.g. image.tag
	Type string // bool, int, float, string, list or object
	// Default is the default as compact JSON (keys sorted), or the text of
	// the description's @default line.
	Default     string
	Description string
}

// Readme renders the template tmpl with the chart chartYAML and the rows of
// the values file values. The template writes a cell of the values table
// with the function cell, which escapes a | (it would split the row).
func Readme(tmpl, chartYAML, values []byte) ([]byte, error) {
	var chart Chart
	if err := yaml.Unmarshal(chartYAML, &chart); err != nil {
		return nil, fmt.Errorf("parsing Chart.yaml: %w", err)
	}
	rows, err := Rows(values)
	if err != nil {
		return nil, err
	}
	t, err := template.New("README.md").Option("missingkey=error").Funcs(template.FuncMap{"cell": cell}).Parse(string(tmpl))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct {
		Chart  Chart
		Values []Row
	}{chart, rows}); err != nil {
		return nil, err
	}
	return tidy(b.Bytes()), nil
}

var (
	trailingBlank = regexp.MustCompile(`[ \t]+\n`)
	blankLines    = regexp.MustCompile(`\n{3,}`)
)

// tidy drops trailing blanks and collapses runs of empty lines, so that an
// empty section of the template leaves no gap, and ends the file with one
// newline.
func tidy(b []byte) []byte {
	b = trailingBlank.ReplaceAll(b, []byte("\n"))
	b = blankLines.ReplaceAll(b, []byte("\n\n"))
	return append(bytes.TrimRight(b, "\n"), '\n')
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// Rows lists the documented values of a values file in file order: every
// value with a description; a mapping or list with one is a single row
// (its default as JSON) and its entries are rows only when described
// themselves; an undescribed value is a row (without description) unless a
// mapping or list above it has one.
func Rows(values []byte) ([]Row, error) {
	doc, err := parse(values)
	if err != nil {
		return nil, err
	}
	var rows []Row
	return rows, rowsOf(&rows, "", nil, doc.Content[0], true)
}

// rowsOf appends the rows of the value v at path, whose key (or list
// entry) node key carries its comment; undescribed says whether a value
// without a description is listed.
func rowsOf(rows *[]Row, path string, key, v *yaml.Node, undescribed bool) error {
	var c comment
	if key != nil {
		var err error
		if c, err = parseComment(key.HeadComment); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	described := c.desc != ""
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	empty := (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && len(v.Content) == 0
	if path != "" && (described || (undescribed && (v.Kind == yaml.ScalarNode || empty))) {
		r, err := rowOf(path, v, c)
		if err != nil {
			return err
		}
		*rows = append(*rows, r)
	}
	undescribed = undescribed && !described
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i]
			if err := rowsOf(rows, keyPath(path, k.Value), k, v.Content[i+1], undescribed); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, e := range v.Content {
			if err := rowsOf(rows, fmt.Sprintf("%s[%d]", path, i), e, e, undescribed); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyPath is the path of key in the mapping at path; a key with a dot or a
// space is quoted.
func keyPath(path, key string) string {
	if strings.ContainsAny(key, ". ") {
		key = `"` + key + `"`
	}
	return join(path, key)
}

func rowOf(path string, v *yaml.Node, c comment) (Row, error) {
	r := Row{Key: path, Type: c.typ, Default: c.def, Description: c.desc}
	d, err := jsonable(v)
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", path, err)
	}
	if r.Type == "" {
		r.Type = typeName(d)
	}
	if !c.hasDef {
		if d == nil {
			r.Default = "`nil`"
		} else {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(d); err != nil {
				return Row{}, fmt.Errorf("%s: %w", path, err)
			}
			r.Default = "`" + strings.TrimSuffix(b.String(), "\n") + "`"
		}
	}
	return r, nil
}

func typeName(d any) string {
	switch d.(type) {
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "string" // a string, or null
}

// jsonable is the default v as JSON values; a timestamp stays the string
// it is written as.
func jsonable(v *yaml.Node) (any, error) {
	switch v.Kind {
	case yaml.AliasNode:
		return jsonable(v.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			e, err := jsonable(v.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[v.Content[i].Value] = e
		}
		return m, nil
	case yaml.SequenceNode:
		l := []any{}
		for _, e := range v.Content {
			d, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			l = append(l, d)
		}
		return l, nil
	}
	var d any
	var err error
	switch v.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		err = v.Decode(&b)
		d = b
	case "!!int":
		var i int64
		err = v.Decode(&i)
		d = i
	case "!!float":
		var f float64
		err = v.Decode(&f)
		d = f
	default:
		d = v.Value
	}
	return d, err
}
