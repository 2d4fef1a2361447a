package webhook

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// envValue is what a container's environment variable resolves to.
type envValue struct {
	// Declared: the variable is set for the container.
	Declared bool
	// Value is the variable's value when Declared and resolvable.
	Value string
	// From says where the value comes from, for messages: "env",
	// "ConfigMap settle-config key AUTO_OFFSET_RESET",
	// "envFrom ConfigMap settle-config".
	From string
	// Unresolvable, when not empty, says why the value cannot be known from
	// the pod template (missing ConfigMap or key, a Secret, a fieldRef, a
	// $(VAR) reference). The variable may or may not be set.
	Unresolvable string
}

// containerEnv is a consumer container's resolved client settings.
type containerEnv struct {
	Container string
	// Missing: spec.consumer.container names a container the pod template
	// does not have.
	Missing     bool
	OffsetReset envValue
	// AutoCommit is resolved only when spec.consumer.autoCommitEnv is set.
	AutoCommit envValue
}

// configMapGetter reads a ConfigMap of the workload's namespace; (nil, nil)
// when it does not exist.
type configMapGetter interface {
	get(ctx context.Context, name string) (*corev1.ConfigMap, error)
}

// configMapReader reads ConfigMaps through a client.Reader, each at most
// once per admission request.
type configMapReader struct {
	reader    client.Reader
	namespace string
	// deadline, when set, is the admission request's: reads wait within
	// it, whatever context get is given.
	deadline *requestDeadline
	memo     map[string]configMapResult
}

type configMapResult struct {
	cm  *corev1.ConfigMap
	err error
}

func (r *configMapReader) get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	if res, ok := r.memo[name]; ok {
		return res.cm, res.err
	}
	if r.deadline != nil {
		ctx = r.deadline.context()
	}
	cm := &corev1.ConfigMap{}
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm, err = nil, nil
	case err != nil:
		cm = nil
	}
	if r.memo == nil {
		r.memo = make(map[string]configMapResult, 2)
	}
	r.memo[name] = configMapResult{cm: cm, err: err}
	return cm, err
}

// resolveConsumerEnv resolves the policy's consumer variables in the pod
// template: in the named container, or in every container when
// spec.consumer.container is empty.
func resolveConsumerEnv(ctx context.Context, cms configMapGetter, spec *rgv1.ConsumerClientSpec, tmpl *corev1.PodTemplateSpec) []containerEnv {
	resolve := func(c *corev1.Container) containerEnv {
		ce := containerEnv{Container: c.Name, OffsetReset: resolveEnv(ctx, cms, c, spec.OffsetResetEnv)}
		if spec.AutoCommitEnv != "" {
			ce.AutoCommit = resolveEnv(ctx, cms, c, spec.AutoCommitEnv)
		}
		return ce
	}
	if spec.Container != "" {
		for i := range tmpl.Spec.Containers {
			if tmpl.Spec.Containers[i].Name == spec.Container {
				return []containerEnv{resolve(&tmpl.Spec.Containers[i])}
			}
		}
		return []containerEnv{{Container: spec.Container, Missing: true}}
	}
	out := make([]containerEnv, 0, len(tmpl.Spec.Containers))
	for i := range tmpl.Spec.Containers {
		out = append(out, resolve(&tmpl.Spec.Containers[i]))
	}
	return out
}

// resolveEnv finds what the variable name is set to in container c, the way
// the kubelet builds a container's environment: envFrom sources first (a
// later source wins), then env entries in order (a later entry wins; an
// optional reference to a missing ConfigMap or key sets nothing).
func resolveEnv(ctx context.Context, cms configMapGetter, c *corev1.Container, name string) envValue {
	for i := len(c.Env) - 1; i >= 0; i-- {
		e := &c.Env[i]
		if e.Name != name {
			continue
		}
		if e.ValueFrom == nil {
			if strings.Contains(e.Value, "$(") {
				return envValue{Declared: true, From: "env", Unresolvable: fmt.Sprintf(
					"%s=%q refers to another variable; write the value literally", name, e.Value)}
			}
			return envValue{Declared: true, Value: e.Value, From: "env"}
		}
		switch ref := e.ValueFrom; {
		case ref.ConfigMapKeyRef != nil:
			r := ref.ConfigMapKeyRef
			from := fmt.Sprintf("ConfigMap %s key %s", r.Name, r.Key)
			optional := r.Optional != nil && *r.Optional
			cm, err := cms.get(ctx, r.Name)
			if err != nil {
				return envValue{Declared: true, From: from, Unresolvable: fmt.Sprintf("reading ConfigMap %s: %v", r.Name, err)}
			}
			if cm == nil {
				if optional {
					continue // the kubelet sets nothing; an earlier entry or envFrom may
				}
				return envValue{Declared: true, From: from, Unresolvable: fmt.Sprintf(
					"ConfigMap %s does not exist (the pods could not start either)", r.Name)}
			}
			v, ok := configMapValue(cm, r.Key)
			if !ok {
				if optional {
					continue
				}
				return envValue{Declared: true, From: from, Unresolvable: fmt.Sprintf(
					"ConfigMap %s has no key %s", r.Name, r.Key)}
			}
			return envValue{Declared: true, Value: v, From: from}
		case ref.SecretKeyRef != nil:
			return envValue{Declared: true, From: "Secret " + ref.SecretKeyRef.Name, Unresolvable: fmt.Sprintf(
				"%s comes from Secret %s, which retention-guard does not read; set it under env or in a ConfigMap",
				name, ref.SecretKeyRef.Name)}
		default:
			return envValue{Declared: true, From: "valueFrom", Unresolvable: fmt.Sprintf(
				"%s comes from a field or resource reference; set it under env or in a ConfigMap", name)}
		}
	}
	for i := len(c.EnvFrom) - 1; i >= 0; i-- {
		src := &c.EnvFrom[i]
		key, ok := strings.CutPrefix(name, src.Prefix)
		if !ok {
			continue
		}
		switch {
		case src.ConfigMapRef != nil:
			r := src.ConfigMapRef
			from := "envFrom ConfigMap " + r.Name
			cm, err := cms.get(ctx, r.Name)
			if err != nil {
				return envValue{From: from, Unresolvable: fmt.Sprintf("reading ConfigMap %s: %v", r.Name, err)}
			}
			if cm == nil {
				if r.Optional != nil && *r.Optional {
					continue
				}
				return envValue{From: from, Unresolvable: fmt.Sprintf(
					"ConfigMap %s (envFrom) does not exist (the pods could not start either)", r.Name)}
			}
			if v, ok := cm.Data[key]; ok {
				return envValue{Declared: true, Value: v, From: from}
			}
		case src.SecretRef != nil:
			return envValue{From: "envFrom Secret " + src.SecretRef.Name, Unresolvable: fmt.Sprintf(
				"%s may come from Secret %s (envFrom), which retention-guard does not read; set it under env",
				name, src.SecretRef.Name)}
		}
	}
	return envValue{}
}

// configMapValue reads a key the way the kubelet does for
// configMapKeyRef: from data only.
func configMapValue(cm *corev1.ConfigMap, key string) (string, bool) {
	v, ok := cm.Data[key]
	return v, ok
}
