// Command chartschema writes the chart's values.schema.json and README.md
// from its commented values.yaml (make chart-docs; hack/verify.sh fails
// when either committed file is out of date). Both come from one parse of
// values.yaml: a value's description is the same text in the schema and in
// README.md's values table (readme.go).
//
// Each value's schema starts from what its default implies: its type
// (string, boolean, integer, number, object, array), and for a mapping its
// keys as properties with additionalProperties false (a misspelt key fails
// the install). Its description is the comment above it, from the line
// starting with a double dash to the end of that paragraph (the helm-docs
// convention, which the chart kept when it stopped using helm-docs). A
// `# @default -- TEXT` line in it replaces the README's Default column; a
// leading "(type)" replaces its Type column. A `# @schema` annotation above
// that comment adds JSON Schema keywords, as YAML, in one of two forms:
//
//	# @schema {minimum: 1}
//
//	# @schema
//	# items: {type: string, minLength: 1}
//	# @schema
//
// Keywords of the annotation win over the inferred ones; its properties
// are merged into the inferred properties (and may add keys the default
// does not have). type, enum, const, anyOf and oneOf replace the inferred
// type. $ref replaces everything inferred (the default's own keys are not
// looked at). `required: true` is not a keyword of the value itself: the
// value is listed in its parent's required. The annotation of the file's
// header comment applies to the root ($schema, title, definitions, and
// properties such as Helm's global that values.yaml does not set).
//
// An empty mapping or list without an annotation is an error: the
// generator cannot tell what it may hold, and guessing would either refuse
// every entry or check none.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

func main() {
	values := flag.String("values", "charts/retention-guard/values.yaml", "the commented values file")
	out := flag.String("out", "charts/retention-guard/values.schema.json", "the schema to write")
	chart := flag.String("chart", "charts/retention-guard/Chart.yaml", "the chart's Chart.yaml, for README.md")
	tmpl := flag.String("readme-template", "charts/retention-guard/README.md.gotmpl", "the template of README.md (text/template)")
	readme := flag.String("readme", "charts/retention-guard/README.md", "the README to write (empty: none)")
	flag.Parse()
	if err := run(*values, *out, *chart, *tmpl, *readme); err != nil {
		fmt.Fprintf(os.Stderr, "chartschema: %v\n", err)
		os.Exit(1)
	}
}

func run(values, out, chart, tmpl, readme string) error {
	src, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	schema, err := Generate(src)
	if err != nil {
		return fmt.Errorf("%s: %w", values, err)
	}
	if readme == "" {
		return os.WriteFile(out, schema, 0o644)
	}
	chartYAML, err := os.ReadFile(chart)
	if err != nil {
		return err
	}
	t, err := os.ReadFile(tmpl)
	if err != nil {
		return err
	}
	doc, err := Readme(t, chartYAML, src)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	if err := os.WriteFile(out, schema, 0o644); err != nil {
		return err
	}
	return os.WriteFile(readme, doc, 0o644)
}

// document is a parsed values file: its root mapping, and the annotation
// of its header comment.
type document struct {
	*yaml.Node
	ann map[string]any
}

// parse reads a values file for both outputs: the schema and README.md.
func parse(src []byte) (document, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return document{}, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return document{}, errors.New("the values file is not one YAML mapping")
	}
	c, err := parseComment(doc.HeadComment)
	if err != nil {
		return document{}, fmt.Errorf("the header comment: %w", err)
	}
	return document{&doc, c.ann}, nil
}

// Generate returns the JSON schema of the values file src, indented, keys
// sorted, with a final newline.
func Generate(src []byte) ([]byte, error) {
	root, err := parse(src)
	if err != nil {
		return nil, err
	}
	s, _, err := schemaOf("", root.Content[0], root.ann, "", true)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// schemaOf is the schema of the value v at path, given its annotation and
// description; required reports the annotation's `required: true`.
// described says whether the value or one of its parents has a
// description: every value must, so that README.md explains it.
func schemaOf(path string, v *yaml.Node, ann map[string]any, desc string, described bool) (s map[string]any, required bool, err error) {
	where := path
	if where == "" {
		where = "the root"
	}
	described = described || desc != ""
	if !described && (v.Kind != yaml.MappingNode || len(v.Content) == 0) {
		return nil, false, fmt.Errorf("%s has no description: write one above it, starting with a double dash (README.md lists it with that description)", where)
	}
	s = map[string]any{}
	if r, ok := ann["required"].(bool); ok {
		required = r
		delete(ann, "required")
	}
	if desc != "" {
		s["description"] = desc
	}
	if _, ok := ann["$ref"]; ok {
		for k, a := range ann {
			s[k] = a
		}
		return s, required, nil
	}
	if !hasAny(ann, "type", "enum", "const", "anyOf", "oneOf") {
		t, err := typeOf(v)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", where, err)
		}
		s["type"] = t
	}
	switch v.Kind {
	case yaml.MappingNode:
		annProps, _ := ann["properties"].(map[string]any)
		if ann["properties"] != nil && annProps == nil {
			return nil, false, fmt.Errorf("%s: the annotation's properties is not a mapping", where)
		}
		props := map[string]any{}
		var req []any
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, cv := v.Content[i], v.Content[i+1]
			c, err := parseComment(k.HeadComment)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", join(path, k.Value), err)
			}
			cs, creq, err := schemaOf(join(path, k.Value), cv, c.ann, c.desc, described && path != "")
			if err != nil {
				return nil, false, err
			}
			if extra, ok := annProps[k.Value].(map[string]any); ok {
				merge(cs, extra)
			}
			props[k.Value] = cs
			if creq {
				req = append(req, k.Value)
			}
		}
		for k, extra := range annProps {
			if _, ok := props[k]; !ok {
				props[k] = extra
			}
		}
		if len(props) == 0 && !hasAny(ann, "additionalProperties", "properties", "$ref") {
			return nil, false, fmt.Errorf("%s: an empty mapping needs a # @schema annotation saying what it may hold (additionalProperties or properties)", where)
		}
		if len(props) > 0 {
			s["properties"] = props
		}
		if _, ok := ann["additionalProperties"]; !ok {
			s["additionalProperties"] = false
		}
		if len(req) > 0 {
			s["required"] = req
		}
	case yaml.SequenceNode:
		if _, ok := ann["items"]; !ok {
			items, err := itemsOf(v)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", where, err)
			}
			s["items"] = items
		}
	}
	for k, a := range ann {
		if k == "properties" {
			continue
		}
		s[k] = a
	}
	return s, required, nil
}

// typeOf is the JSON type of a default value.
func typeOf(v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.MappingNode:
		return "object", nil
	case yaml.SequenceNode:
		return "array", nil
	case yaml.ScalarNode:
		switch v.ShortTag() {
		case "!!str":
			return "string", nil
		case "!!bool":
			return "boolean", nil
		case "!!int":
			return "integer", nil
		case "!!float":
			return "number", nil
		}
		return "", fmt.Errorf("a default of tag %s has no JSON type: annotate it (# @schema {type: ...})", v.ShortTag())
	}
	return "", errors.New("aliases and anchors are not supported")
}

// itemsOf infers the items of a list default whose entries are scalars of
// one type; anything else needs an annotation.
func itemsOf(v *yaml.Node) (map[string]any, error) {
	if len(v.Content) == 0 {
		return nil, errors.New("an empty list needs a # @schema annotation saying what its items are (items)")
	}
	var t string
	for _, e := range v.Content {
		et, err := typeOf(e)
		if err != nil || e.Kind != yaml.ScalarNode || (t != "" && et != t) {
			return nil, errors.New("a list of mixed or non-scalar entries needs a # @schema annotation (items)")
		}
		t = et
	}
	return map[string]any{"type": t}, nil
}

// merge copies src's keys into dst, merging mappings key by key.
func merge(dst, src map[string]any) {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
}

func hasAny(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	descStart = regexp.MustCompile(`^#\s*--\s?(.*)$`)
	// A README.md Default column in place of the default's JSON.
	defaultTag = regexp.MustCompile(`^#\s*@default\s+--\s?(.*)$`)
	// helm-docs' other tags, which nothing here renders.
	unsupportedTag = regexp.MustCompile(`^#\s*@(section|notationType|raw|ignore)\b`)
	// A README.md Type column in place of the default's type, at the start
	// of a description: "(list) …".
	typeOverride = regexp.MustCompile(`^\((.*?)\)\s*`)
)

// comment is what a key's head comment says.
type comment struct {
	ann  map[string]any // the @schema annotation's keywords
	desc string         // the description
	// typ and def, when set, replace README.md's Type and Default columns.
	typ, def string
	hasDef   bool
}

// parseComment reads a key's head comment: the @schema annotation and the
// description (the last paragraph starting with a double dash, the
// convention helm-docs introduced).
func parseComment(c string) (comment, error) {
	var out comment
	if c == "" {
		return out, nil
	}
	lines := strings.Split(c, "\n")
	var block []string
	inBlock := false
	descAt := -1
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case inBlock && l == "# @schema":
			inBlock = false
			a, err := parseAnnotation(strings.Join(block, "\n"))
			if err != nil {
				return out, err
			}
			if out.ann, err = mergeAnnotation(out.ann, a); err != nil {
				return out, err
			}
		case inBlock:
			if !strings.HasPrefix(l, "#") {
				return out, fmt.Errorf("line %q inside a # @schema block is not a comment", l)
			}
			block = append(block, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
		case l == "# @schema":
			if descAt >= 0 {
				return out, errors.New("a # @schema block after the description would be read as part of it (README.md); put it above the description")
			}
			inBlock, block = true, nil
		case strings.HasPrefix(l, "# @schema "):
			if descAt >= 0 {
				return out, errors.New("a # @schema line after the description would be read as part of it (README.md); put it above the description")
			}
			a, err := parseAnnotation(strings.TrimPrefix(l, "# @schema "))
			if err != nil {
				return out, err
			}
			if out.ann, err = mergeAnnotation(out.ann, a); err != nil {
				return out, err
			}
		case descStart.MatchString(l):
			descAt = i
		}
	}
	if inBlock {
		return out, errors.New("a # @schema block is not closed by a second # @schema line")
	}
	if descAt < 0 {
		return out, nil
	}
	desc := []string{descStart.FindStringSubmatch(strings.TrimSpace(lines[descAt]))[1]}
	for _, l := range lines[descAt+1:] {
		l = strings.TrimSpace(l)
		if l == "" || !strings.HasPrefix(l, "#") {
			break
		}
		if m := defaultTag.FindStringSubmatch(l); m != nil {
			out.def, out.hasDef = strings.TrimSpace(m[1]), true
			continue
		}
		if m := unsupportedTag.FindStringSubmatch(l); m != nil {
			return out, fmt.Errorf("@%s in a description: hack/chartschema does not support it", m[1])
		}
		desc = append(desc, strings.TrimSpace(strings.TrimPrefix(l, "#")))
	}
	text := strings.TrimSpace(strings.Join(desc, " "))
	if m := typeOverride.FindStringSubmatch(text); m != nil {
		out.typ = m[1]
		text = text[len(m[0]):]
	}
	out.desc = text
	return out, nil
}

// parseAnnotation reads the JSON Schema keywords of an annotation.
func parseAnnotation(src string) (map[string]any, error) {
	var a map[string]any
	if err := yaml.Unmarshal([]byte(src), &a); err != nil {
		return nil, fmt.Errorf("@schema %q: %w", src, err)
	}
	if a == nil {
		return nil, fmt.Errorf("@schema %q: not a mapping of JSON Schema keywords", src)
	}
	return a, nil
}

func mergeAnnotation(a, b map[string]any) (map[string]any, error) {
	if a == nil {
		return b, nil
	}
	for k, v := range b {
		if _, ok := a[k]; ok {
			return nil, fmt.Errorf("@schema keyword %s given twice", k)
		}
		a[k] = v
	}
	return a, nil
}
