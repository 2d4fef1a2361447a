package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The objects the manager does not own are shaped like a busy platform's:
// Deployments and CronJobs with full pod templates (probes, resources,
// environment), Secrets of the usual types, a quarter of them applied with
// kubectl (a last-applied-configuration annotation that repeats their
// data). They are created with a field manager, so they carry
// managedFields as every object in a real cluster does.

const fieldManager = "scale-bench"

var offsetResetEnv = "KAFKA_AUTO_OFFSET_RESET"

// podTemplate is a production-like pod template: one app container with
// probes, resources and environment, one sidecar.
func podTemplate(app string, consumer bool) corev1.PodTemplateSpec {
	env := []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability:4317"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: app + "-db"}, Key: "password"}}},
	}
	if consumer {
		env = append(env,
			corev1.EnvVar{Name: "KAFKA_BOOTSTRAP_SERVERS", Value: "kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092"},
			corev1.EnvVar{Name: offsetResetEnv, Value: "none"},
			corev1.EnvVar{Name: "KAFKA_ENABLE_AUTO_COMMIT", Value: "false"},
		)
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds:    10,
			FailureThreshold: 3,
		}
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "platform",
				"tier": "backend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: app,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/platform/" + app + "@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
				Args:  []string{"--config=/etc/app/config.yaml", "--listen=:8080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Env:   env,
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				ReadinessProbe: probe("/readyz"),
				LivenessProbe:  probe("/healthz"),
				VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}, {
				Name:  "proxy",
				Image: "registry.example.com/platform/proxy:1.31.2",
				Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
		},
	}
}

// deployment g runs the consumers of policy g when g < consumers, else a
// web app.
func (s shape) deployment(g, consumers int) *appsv1.Deployment {
	app, consumer := fmt.Sprintf("web-%05d", g), false
	if g < consumers {
		app, consumer = policyName(g), true
	}
	labels := map[string]string{"app": app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: s.namespace(g), Labels: map[string]string{"app": app, "team": s.namespace(g)},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(app, consumer),
		},
	}
}

var schedules = []string{"0 2 * * *", "*/15 * * * *", "30 3 * * 1", "0 */6 * * *", "15 1 1 * *"}

// cronJob g: every fifth runs as the group of policy g (a batch consumer
// beside the Deployment), the others are unrelated jobs.
func (s shape) cronJob(g int) *batchv1.CronJob {
	name, app := fmt.Sprintf("batch-%05d", g), fmt.Sprintf("batch-%05d", g)
	if g%5 == 0 {
		app = policyName(g)
	}
	tmpl := podTemplate(app, app != name)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace(g), Labels: map[string]string{"team": s.namespace(g)}},
		Spec: batchv1.CronJobSpec{
			Schedule:                   schedules[(g/5)%len(schedules)],
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr.To[int64](300),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			JobTemplate: batchv1.JobTemplateSpec{
				Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: tmpl},
			},
		},
	}
}

// secret g: TLS material, registry credentials, application settings or
// a Helm release record, by turns.
func (s shape) secret(g int) *corev1.Secret {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(g), Labels: map[string]string{"team": s.namespace(g)}}}
	switch g % 4 {
	case 0:
		sec.Name, sec.Type = fmt.Sprintf("tls-%05d", g), corev1.SecretTypeTLS
		sec.Data = map[string][]byte{"tls.crt": filler("CERTIFICATE", 1200, g), "tls.key": filler("PRIVATE KEY", 1700, g)}
	case 1:
		sec.Name, sec.Type = fmt.Sprintf("registry-%05d", g), corev1.SecretTypeDockerConfigJson
		sec.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"registry.example.com":{"auth":"` +
			string(filler("AUTH", 120, g)) + `"}}}`)}
	case 2:
		sec.Name, sec.Type = fmt.Sprintf("settings-%05d", g), corev1.SecretTypeOpaque
		sec.Data = map[string][]byte{"password": filler("PW", 32, g), "username": []byte("svc-" + strconv.Itoa(g)),
			"dsn": filler("DSN", 200, g)}
		// Applied with kubectl: the annotation repeats the whole object.
		applied, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": sec.Name, "namespace": sec.Namespace}, "data": sec.Data, "type": sec.Type})
		sec.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(applied)}
	default:
		sec.Name, sec.Type = fmt.Sprintf("sh.helm.release.v1.app-%05d.v7", g), "helm.sh/release.v1"
		sec.Labels = map[string]string{"owner": "helm", "name": fmt.Sprintf("app-%05d", g), "status": "deployed", "version": "7"}
		sec.Data = map[string][]byte{"release": filler("RELEASE", 6000, g)}
	}
	return sec
}

// filler is n bytes of printable, object-specific data.
func filler(kind string, n, g int) []byte {
	seed := kind + "-" + strconv.Itoa(g) + "-"
	return []byte(strings.Repeat(seed, n/len(seed)+1)[:n])
}

// policy g guards the consumers of Deployment g: its group on its
// cluster's two topics; half of them also prove the client fails loud.
func (s shape) policy(g int, bootstrap []string, interval time.Duration) *rgv1.ConsumerRetentionPolicy {
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName(g), Namespace: s.namespace(g)},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        groupName(g),
			Topics:         s.topics(g),
			RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": policyName(g)}},
			Enforcement:    rgv1.EnforcementDeny,
			CheckInterval:  &metav1.Duration{Duration: interval},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: bootstrap},
		},
	}
	if g%2 == 0 {
		p.Spec.Consumer = &rgv1.ConsumerClientSpec{Container: "app", OffsetResetEnv: offsetResetEnv}
	}
	return p
}

// createAll creates objects with workers (forAll), treating AlreadyExists
// as done, and reports progress every 10 seconds.
func createAll(ctx context.Context, c client.Client, what string, n int, obj func(i int) client.Object, logf func(string, ...any)) error {
	var done atomic.Int64
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				logf("  %s: %d of %d", what, done.Load(), n)
			}
		}
	}()
	err := forAll(ctx, n, func(ctx context.Context, i int) error {
		if err := c.Create(ctx, obj(i), client.FieldOwner(fieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s #%d: %w", what, i, err)
		}
		done.Add(1)
		return nil
	})
	close(stop)
	if err != nil {
		return err
	}
	logf("  %d %s in %s", n, what, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// forAll runs fn on 0..n-1 with workers; the first error stops it.
func forAll(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	const workers = 24
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
