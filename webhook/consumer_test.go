package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// fakeConfigMaps serves ConfigMaps from a map; errs fails named reads.
type fakeConfigMaps struct {
	cms   map[string]map[string]string
	errs  map[string]error
	reads int
}

func (f *fakeConfigMaps) get(_ context.Context, name string) (*corev1.ConfigMap, error) {
	f.reads++
	if err := f.errs[name]; err != nil {
		return nil, err
	}
	data, ok := f.cms[name]
	if !ok {
		return nil, nil
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, nil
}

const resetEnv, commitEnv = "KAFKA_AUTO_OFFSET_RESET", "KAFKA_ENABLE_AUTO_COMMIT"

func cmKey(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func envFromCM(name, prefix string, optional bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: &optional}}
}

// Admission contract, "consumer clause": how a container's variable
// resolves, the way the kubelet would set it.
func TestResolveEnv(t *testing.T) {
	cms := &fakeConfigMaps{
		cms: map[string]map[string]string{
			"settle-config": {"reset": "none", resetEnv: "earliest"},
			"prefixed":      {"AUTO_OFFSET_RESET": "error"},
			"late":          {resetEnv: "none"},
		},
		errs: map[string]error{"forbidden": errors.New(`configmaps "forbidden" is forbidden`)},
	}
	cases := []struct {
		name   string
		c      corev1.Container
		want   envValue
		wantIn string // substring of Unresolvable
	}{
		{"literal", container("settle", resetEnv, "none"), envValue{Declared: true, Value: "none", From: "env"}, ""},
		{"absent", container("settle", "OTHER", "x"), envValue{}, ""},
		{"last literal wins", container("settle", resetEnv, "latest", resetEnv, "none"), envValue{Declared: true, Value: "none", From: "env"}, ""},
		{"$(VAR) reference", container("settle", resetEnv, "$(RESET)"), envValue{Declared: true, From: "env"}, "refers to another variable"},
		{"configMapKeyRef", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: cmKey("settle-config", "reset", false)}}},
			envValue{Declared: true, Value: "none", From: "ConfigMap settle-config key reset"}, ""},
		{"configMapKeyRef to a missing ConfigMap", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: cmKey("gone", "reset", false)}}},
			envValue{Declared: true, From: "ConfigMap gone key reset"}, "ConfigMap gone does not exist"},
		{"configMapKeyRef to a missing key", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: cmKey("settle-config", "nope", false)}}},
			envValue{Declared: true, From: "ConfigMap settle-config key nope"}, "has no key nope"},
		{"optional configMapKeyRef to a missing ConfigMap sets nothing", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: cmKey("gone", "reset", true)}}},
			envValue{}, ""},
		{"optional and missing falls back to an earlier entry", corev1.Container{Env: []corev1.EnvVar{
			{Name: resetEnv, Value: "none"}, {Name: resetEnv, ValueFrom: cmKey("settle-config", "nope", true)}}},
			envValue{Declared: true, Value: "none", From: "env"}, ""},
		{"unreadable ConfigMap", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: cmKey("forbidden", "reset", false)}}},
			envValue{Declared: true, From: "ConfigMap forbidden key reset"}, "forbidden"},
		{"secretKeyRef", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "reset"}}}}},
			envValue{Declared: true, From: "Secret creds"}, "does not read"},
		{"fieldRef", corev1.Container{Env: []corev1.EnvVar{{Name: resetEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			envValue{Declared: true, From: "valueFrom"}, "field or resource reference"},
		{"envFrom ConfigMap", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("late", "", false)}},
			envValue{Declared: true, Value: "none", From: "envFrom ConfigMap late"}, ""},
		{"envFrom: a later source wins", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("late", "", false), envFromCM("settle-config", "", false)}},
			envValue{Declared: true, Value: "earliest", From: "envFrom ConfigMap settle-config"}, ""},
		{"envFrom with a prefix", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("prefixed", "KAFKA_", false)}},
			envValue{Declared: true, Value: "error", From: "envFrom ConfigMap prefixed"}, ""},
		{"env beats envFrom", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("settle-config", "", false)},
			Env: []corev1.EnvVar{{Name: resetEnv, Value: "none"}}}, envValue{Declared: true, Value: "none", From: "env"}, ""},
		{"envFrom missing ConfigMap", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("gone", "", false)}},
			envValue{From: "envFrom ConfigMap gone"}, "does not exist"},
		{"envFrom optional missing ConfigMap", corev1.Container{EnvFrom: []corev1.EnvFromSource{envFromCM("gone", "", true)}}, envValue{}, ""},
		{"envFrom Secret after the ConfigMap may override it", corev1.Container{EnvFrom: []corev1.EnvFromSource{
			envFromCM("late", "", false), {SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}},
			envValue{From: "envFrom Secret creds"}, "may come from Secret creds"},
		{"envFrom Secret before the ConfigMap is overridden by it", corev1.Container{EnvFrom: []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}, envFromCM("late", "", false)}},
			envValue{Declared: true, Value: "none", From: "envFrom ConfigMap late"}, ""},
		{"envFrom Secret with another prefix cannot set it", corev1.Container{EnvFrom: []corev1.EnvFromSource{
			{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}, envValue{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveEnv(context.Background(), cms, &tc.c, resetEnv)
			unresolvable := got.Unresolvable
			got.Unresolvable = ""
			if got != tc.want {
				t.Errorf("resolved %+v, want %+v", got, tc.want)
			}
			if (tc.wantIn == "") != (unresolvable == "") || !strings.Contains(unresolvable, tc.wantIn) {
				t.Errorf("unresolvable %q, want it to say %q", unresolvable, tc.wantIn)
			}
		})
	}
}

// configMapReader reads each ConfigMap once per request, and tells a
// missing ConfigMap (nil, nil) from a failed read.
func TestConfigMapReader(t *testing.T) {
	gets := 0
	c := fake.NewClientBuilder().
		WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "settlement"}, Data: map[string]string{"r": "none", "c": "false"}}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			if key.Name == "forbidden" {
				return apierrors.NewForbidden(corev1.Resource("configmaps"), key.Name, errors.New("no"))
			}
			return cl.Get(ctx, key, obj, opts...)
		}}).Build()
	r := &configMapReader{reader: c, namespace: "settlement"}
	ct := corev1.Container{Name: "settle", Env: []corev1.EnvVar{
		{Name: resetEnv, ValueFrom: cmKey("cfg", "r", false)}, {Name: commitEnv, ValueFrom: cmKey("cfg", "c", false)}}}
	tmpl := template(nil, ct, ct)
	tmpl.Spec.Containers[1].Name = "sidecar"
	envs := resolveConsumerEnv(context.Background(), r, &rgv1.ConsumerClientSpec{OffsetResetEnv: resetEnv, AutoCommitEnv: commitEnv}, &tmpl)
	if len(envs) != 2 || envs[1].AutoCommit.Value != "false" || envs[0].OffsetReset.Value != "none" {
		t.Fatalf("resolved %+v", envs)
	}
	if gets != 1 {
		t.Errorf("ConfigMap read %d times for one request, want 1", gets)
	}
	if cm, err := r.get(context.Background(), "gone"); cm != nil || err != nil {
		t.Errorf("missing ConfigMap: %v, %v; want nil, nil", cm, err)
	}
	if _, err := r.get(context.Background(), "forbidden"); !apierrors.IsForbidden(err) {
		t.Errorf("forbidden read: %v", err)
	}
}

// Admission contract, "consumer clause": offset reset must be none or
// error, auto commit false.
func TestCheckConsumer(t *testing.T) {
	literal := func(v string) envValue { return envValue{Declared: true, Value: v, From: "env"} }
	both := &rgv1.ConsumerClientSpec{Container: "settle", OffsetResetEnv: resetEnv, AutoCommitEnv: commitEnv}
	resetOnly := &rgv1.ConsumerClientSpec{OffsetResetEnv: resetEnv}
	cases := []struct {
		name string
		spec *rgv1.ConsumerClientSpec
		envs []containerEnv
		want []string // reasons, in order
	}{
		{"none and false", both, []containerEnv{{Container: "settle", OffsetReset: literal("none"), AutoCommit: literal("false")}}, nil},
		{"error (librdkafka), any case", both, []containerEnv{{Container: "settle", OffsetReset: literal("ERROR"), AutoCommit: literal("False")}}, nil},
		// The values as the clients read them (docs/concepts.md, pinned by
		// test/realkafka/clients): the Java client trims, then accepts only
		// lower-case none; librdkafka has error in any case, and no none.
		{"none with spaces (Java trims)", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal(" none ")}}, nil},
		{"None: the Java client's ConfigException", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal(" None ")}}, []string{ReasonOffsetResetRejected}},
		{"NONE: the Java client's ConfigException", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("NONE")}}, []string{ReasonOffsetResetRejected}},
		{"error with a trailing space: librdkafka's Invalid value", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("error ")}}, []string{ReasonOffsetResetRejected}},
		{"a value no client accepts", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("fail")}}, []string{ReasonOffsetResetRejected}},
		{"smallest (librdkafka's earliest)", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("smallest")}}, []string{ReasonOffsetResetSilent}},
		{"by_duration (Java 4.x, KIP-1106)", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("by_duration:PT1H")}}, []string{ReasonOffsetResetSilent}},
		{"earliest", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("earliest")}}, []string{ReasonOffsetResetSilent}},
		{"latest", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("latest")}}, []string{ReasonOffsetResetSilent}},
		{"empty value", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("")}}, []string{ReasonOffsetResetSilent}},
		{"not declared", resetOnly, []containerEnv{{Container: "settle"}}, []string{ReasonOffsetResetNotDeclared}},
		{"unresolvable", resetOnly, []containerEnv{{Container: "settle", OffsetReset: envValue{Unresolvable: "ConfigMap gone does not exist"}}},
			[]string{ReasonOffsetResetUnresolvable}},
		{"auto commit true", both, []containerEnv{{Container: "settle", OffsetReset: literal("none"), AutoCommit: literal("true")}}, []string{ReasonAutoCommitEnabled}},
		{"auto commit not declared", both, []containerEnv{{Container: "settle", OffsetReset: literal("none")}}, []string{ReasonAutoCommitNotDeclared}},
		{"auto commit unresolvable", both, []containerEnv{{Container: "settle", OffsetReset: literal("none"), AutoCommit: envValue{Unresolvable: "Secret"}}},
			[]string{ReasonAutoCommitUnresolvable}},
		{"auto commit not required when unnamed", resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("none"), AutoCommit: literal("true")}}, nil},
		{"named container absent", both, []containerEnv{{Container: "settle", Missing: true}}, []string{ReasonConsumerContainerNotFound}},
		{"every container checked", resetOnly, []containerEnv{
			{Container: "settle", OffsetReset: literal("none")}, {Container: "metrics"}}, []string{ReasonOffsetResetNotDeclared}},
		{"both wrong", both, []containerEnv{{Container: "settle", OffsetReset: literal("latest"), AutoCommit: literal("true")}},
			[]string{ReasonOffsetResetSilent, ReasonAutoCommitEnabled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkConsumer(tc.spec, tc.envs)
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want reasons %v", got, tc.want)
			}
			for i, f := range got {
				if f.Reason != tc.want[i] {
					t.Errorf("finding %d: %v, want reason %s", i, f, tc.want[i])
				}
				if f.Subject == "" || f.Message == "" {
					t.Errorf("finding %d lacks a subject or message: %+v", i, f)
				}
			}
		})
	}
	// A rejected spelling says which client rejects it.
	f := checkConsumer(resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("NONE")}})[0]
	if !strings.Contains(f.Message, "lower-case none") || !strings.Contains(f.Message, "ConfigException") {
		t.Errorf("message %q", f.Message)
	}
	// The message quotes the value and says the fix.
	f = checkConsumer(resetOnly, []containerEnv{{Container: "settle", OffsetReset: literal("earliest")}})[0]
	if !strings.Contains(f.Message, `KAFKA_AUTO_OFFSET_RESET="earliest"`) || !strings.Contains(f.Message, "set none") {
		t.Errorf("message %q", f.Message)
	}
}

// The consumer clause looks in the named container only, or in every
// container when none is named.
func TestResolveConsumerEnvContainers(t *testing.T) {
	tmpl := template(nil, container("settle", resetEnv, "none"), container("metrics"))
	cms := &fakeConfigMaps{}
	named := resolveConsumerEnv(context.Background(), cms, &rgv1.ConsumerClientSpec{Container: "settle", OffsetResetEnv: resetEnv}, &tmpl)
	if len(named) != 1 || named[0].Container != "settle" || named[0].OffsetReset.Value != "none" {
		t.Errorf("named container: %+v", named)
	}
	every := resolveConsumerEnv(context.Background(), cms, &rgv1.ConsumerClientSpec{OffsetResetEnv: resetEnv}, &tmpl)
	if len(every) != 2 || every[1].Container != "metrics" || every[1].OffsetReset.Declared {
		t.Errorf("every container: %+v", every)
	}
	absent := resolveConsumerEnv(context.Background(), cms, &rgv1.ConsumerClientSpec{Container: "worker", OffsetResetEnv: resetEnv}, &tmpl)
	if len(absent) != 1 || !absent[0].Missing || absent[0].Container != "worker" {
		t.Errorf("absent container: %+v", absent)
	}
}
