package workloads

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// candidate is a value a workload's pods are configured with, under a
// name that may carry a group ID, and the evidence it is if the value is
// the group's ID.
type candidate struct {
	value    string
	evidence Evidence
}

// configMaps finds a namespace's ConfigMaps by name.
type configMaps map[[2]string]map[string]string

func (c configMaps) get(namespace, name string) (map[string]string, bool) {
	d, ok := c[[2]string{namespace, name}]
	return d, ok
}

// candidates lists what w's pod template sets that could name a group:
// each container's (and init container's) variables — literal, from a
// configMapKeyRef, every key of an envFrom ConfigMap — with a name
// envConfidence accepts, SPRING_APPLICATION_JSON's properties, and the
// keys and properties of the ConfigMaps its volumes mount. $(VAR)
// references and Secrets are not resolved.
func candidates(w *Workload, cms configMaps) []candidate {
	var out []candidate
	ns := w.Ref.Namespace
	spec := &w.Template.Spec
	containers := slices.Concat(spec.InitContainers, spec.Containers)
	for i := range containers {
		c := &containers[i]
		for _, src := range c.EnvFrom {
			if src.ConfigMapRef == nil {
				continue
			}
			data, _ := cms.get(ns, src.ConfigMapRef.Name)
			for _, key := range sortedKeys(data) {
				name := src.Prefix + key
				if conf := envConfidence(name); conf > 0 {
					out = append(out, candidate{value: data[key], evidence: Evidence{
						Kind: EvidenceEnvironment, Confidence: conf, Container: c.Name, Variable: name,
						ConfigMap: src.ConfigMapRef.Name, Key: key,
					}})
				}
			}
		}
		for _, e := range c.Env {
			value, ev, ok := envEntry(ns, c.Name, e, cms)
			if !ok {
				continue
			}
			if e.Name == "SPRING_APPLICATION_JSON" {
				out = append(out, fileCandidates(value, "SPRING_APPLICATION_JSON", ev)...)
				continue
			}
			if conf := envConfidence(e.Name); conf > 0 {
				ev.Confidence = conf
				out = append(out, candidate{value: value, evidence: ev})
			}
		}
	}
	for _, v := range spec.Volumes {
		for _, ref := range mountedConfigMaps(v) {
			data, _ := cms.get(ns, ref.name)
			for _, key := range sortedKeys(data) {
				if ref.items != nil && !slices.Contains(ref.items, key) {
					continue
				}
				base := Evidence{Kind: EvidenceConfigMap, ConfigMap: ref.name, Key: key}
				if conf := propertyConfidence(key); conf > 0 {
					ev := base
					ev.Confidence = conf
					out = append(out, candidate{value: data[key], evidence: ev})
				}
				out = append(out, fileCandidates(data[key], key, base)...)
			}
		}
	}
	for i := range out {
		out[i].value = strings.TrimSpace(out[i].value)
	}
	return out
}

// envEntry resolves one env entry: a literal value or a configMapKeyRef
// of a ConfigMap that exists.
func envEntry(ns, container string, e corev1.EnvVar, cms configMaps) (string, Evidence, bool) {
	ev := Evidence{Kind: EvidenceEnvironment, Container: container, Variable: e.Name}
	switch {
	case e.ValueFrom == nil:
		if strings.Contains(e.Value, "$(") {
			return "", ev, false
		}
		return e.Value, ev, true
	case e.ValueFrom.ConfigMapKeyRef != nil:
		r := e.ValueFrom.ConfigMapKeyRef
		data, ok := cms.get(ns, r.Name)
		if !ok {
			return "", ev, false
		}
		v, ok := data[r.Key]
		ev.ConfigMap, ev.Key = r.Name, r.Key
		return v, ev, ok
	}
	return "", ev, false
}

// ConfigMapNames are the ConfigMaps w's pods read (env configMapKeyRef,
// envFrom configMapRef, configMap and projected volumes), in the
// workload's namespace: what a gatherer fetches for candidates.
func (w *Workload) ConfigMapNames() []string {
	var out []string
	spec := &w.Template.Spec
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				out = append(out, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				out = append(out, e.ConfigMapRef.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		for _, m := range mountedConfigMaps(v) {
			out = append(out, m.name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type mountedConfigMap struct {
	name  string
	items []string // nil: every key
}

func mountedConfigMaps(v corev1.Volume) []mountedConfigMap {
	items := func(ks []corev1.KeyToPath) []string {
		if len(ks) == 0 {
			return nil
		}
		out := make([]string, 0, len(ks))
		for _, k := range ks {
			out = append(out, k.Key)
		}
		return out
	}
	var out []mountedConfigMap
	if v.ConfigMap != nil {
		out = append(out, mountedConfigMap{v.ConfigMap.Name, items(v.ConfigMap.Items)})
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				out = append(out, mountedConfigMap{s.ConfigMap.Name, items(s.ConfigMap.Items)})
			}
		}
	}
	return out
}

// maxFileBytes bounds the configuration files read for properties.
const maxFileBytes = 256 << 10

// fileCandidates reads content as a configuration file — Java
// properties (key=value, key: value, key value), or YAML/JSON (nested keys
// joined with dots, as Spring Boot flattens them) — and returns the
// properties propertyConfidence accepts. where names the file (a
// ConfigMap key, SPRING_APPLICATION_JSON); base is the evidence to extend
// with the property's name. Content that is neither gives nothing.
func fileCandidates(content, where string, base Evidence) []candidate {
	if len(content) > maxFileBytes || !strings.ContainsAny(content, "=:\n{") {
		return nil
	}
	props := map[string]string{}
	lower := strings.ToLower(where)
	if strings.HasSuffix(lower, ".properties") || strings.HasSuffix(lower, ".conf") {
		readProperties(content, props)
	} else {
		var doc any
		if err := yaml.Unmarshal([]byte(content), &doc); err == nil {
			flatten("", doc, props)
		}
		if len(props) == 0 {
			readProperties(content, props)
		}
	}
	var out []candidate
	for _, key := range sortedKeys(props) {
		if conf := propertyConfidence(key); conf > 0 {
			ev := base
			ev.Confidence, ev.Property = conf, key
			out = append(out, candidate{value: props[key], evidence: ev})
		}
	}
	return out
}

// readProperties reads java.util.Properties' line format, without
// continuation lines and escapes (a group ID has neither).
func readProperties(content string, into map[string]string) {
	for line := range strings.SplitSeq(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=: \t")
		if i <= 0 {
			continue
		}
		key := line[:i]
		value := strings.TrimLeft(line[i:], " \t")
		if value != "" && (value[0] == '=' || value[0] == ':') {
			value = value[1:]
		}
		into[key] = strings.TrimSpace(value)
	}
}

// flatten joins nested YAML keys with dots (spring: {kafka: {consumer:
// {group-id: x}}} is spring.kafka.consumer.group-id=x); scalars become
// their text, lists are left out.
func flatten(prefix string, v any, into map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, sub, into)
		}
	case string:
		if prefix != "" {
			into[prefix] = t
		}
	case nil, []any:
	default:
		if prefix != "" {
			into[prefix] = fmt.Sprint(t)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
