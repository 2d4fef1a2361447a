package workloads

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KEDA's kinds (keda.sh/v1alpha1).
const (
	// ScaledObject scales a workload (spec.scaleTargetRef) on its
	// triggers. It is evidence, never a workload of a match: the match is
	// its target.
	ScaledObject Kind = "ScaledObject"
	// ScaledJob creates a Job from spec.jobTargetRef per unit of its
	// triggers' lag. It is both the evidence and the workload: its Jobs
	// are matched as the ScaledJob, as a CronJob's are as the CronJob.
	ScaledJob Kind = "ScaledJob"
)

// KafkaTriggerTypes are the trigger types of KEDA's Kafka scalers: kafka
// (the Sarama scaler) and apache-kafka (the franz-go one). Both read
// bootstrapServers, consumerGroup and topic, each from the trigger's
// metadata or, through NAMEFromEnv, from the scale target's container
// environment.
var KafkaTriggerTypes = []string{"kafka", "apache-kafka"}

// Scaler is a KEDA ScaledObject or ScaledJob: what it scales and its
// triggers. TriggerAuthentications are not read: they hold the
// triggers' credentials (sasl, tls, username, password), never the
// group, topics or servers.
type Scaler struct {
	// Ref is the ScaledObject or ScaledJob.
	Ref Ref
	// Target is the workload it scales: a ScaledObject's
	// spec.scaleTargetRef (kind Deployment when unset; Deployment,
	// StatefulSet and Argo Rollout are the kinds the snapshot holds), a
	// ScaledJob itself.
	Target Ref
	// EnvSourceContainerName is the container whose environment KEDA
	// resolves NAMEFromEnv from; the first container when empty.
	EnvSourceContainerName string
	Triggers               []Trigger
	// LastActive is KEDA's status.lastActiveTime: the last time one of
	// its triggers was active (KEDA scales a ScaledObject's target to
	// zero cooldownPeriod after it); zero when KEDA wrote none.
	LastActive time.Time
}

// Trigger is one of spec.triggers.
type Trigger struct {
	Type     string
	Name     string
	Metadata map[string]string
}

// Kafka: the trigger is one of KEDA's Kafka scalers.
func (t Trigger) Kafka() bool { return slices.Contains(KafkaTriggerTypes, t.Type) }

// Unresolved is a Kafka trigger the matcher could not read a group from,
// or whose target it could not find: it maps no group, and says why.
type Unresolved struct {
	Scaler  Ref
	Trigger string
	// OtherCluster: the trigger resolves, on another cluster's servers
	// (nothing to fix here).
	OtherCluster bool
	Reason       string
}

func (u Unresolved) String() string {
	return fmt.Sprintf("%s (namespace %s) trigger %s: %s", u.Scaler, u.Scaler.Namespace, u.Trigger, u.Reason)
}

// triggerText names a trigger: its type, and its name when it has one.
func triggerText(t Trigger) string {
	if t.Name != "" {
		return fmt.Sprintf("%s %q", t.Type, t.Name)
	}
	return t.Type
}

// kedaEnv is one variable of KEDA's resolved environment, or why it has
// none we may read.
type kedaEnv struct {
	value     string
	configMap string
	key       string
	// secret: the value is a Secret's (secretKeyRef, or a Secret envFrom
	// may set it), which is never read.
	secret string
	// missing: why the value cannot be read otherwise.
	missing string
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// resolveKEDAEnv resolves a container's environment as KEDA does
// (pkg/scaling/resolver ResolveContainerEnv): the container named, else
// the first (never an init container); envFrom ConfigMaps first, each key
// under its prefix, then env entries in order — literal values with their
// $(VAR) references to earlier variables expanded, configMapKeyRef
// values — where fieldRef and resourceFieldRef are skipped. Secrets
// (secretKeyRef, envFrom secretRef) are never read: such a variable is
// said to come from a Secret.
func resolveKEDAEnv(spec *corev1.PodSpec, name, ns string, cms configMaps) (map[string]kedaEnv, []string, error) {
	var c *corev1.Container
	for i := range spec.Containers {
		if (name == "" && i == 0) || spec.Containers[i].Name == name {
			c = &spec.Containers[i]
			break
		}
	}
	if c == nil {
		if name == "" {
			return nil, nil, fmt.Errorf("the target's pod template has no container")
		}
		return nil, nil, fmt.Errorf("the target has no container %s (envSourceContainerName)", name)
	}
	env := map[string]kedaEnv{}
	var secretEnvFrom []string
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			data, ok := cms.get(ns, src.ConfigMapRef.Name)
			if !ok {
				continue
			}
			for k, v := range data {
				env[src.Prefix+k] = kedaEnv{value: v, configMap: src.ConfigMapRef.Name, key: k}
			}
		case src.SecretRef != nil:
			secretEnvFrom = append(secretEnvFrom, src.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			v := envRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
				if d, ok := env[ref[2:len(ref)-1]]; ok && d.secret == "" && d.missing == "" {
					return d.value
				}
				return ref
			})
			env[e.Name] = kedaEnv{value: v}
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			env[e.Name] = kedaEnv{secret: fmt.Sprintf("Secret %s key %s", r.Name, r.Key)}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			data, ok := cms.get(ns, r.Name)
			v, has := data[r.Key]
			switch {
			case ok && has:
				env[e.Name] = kedaEnv{value: v, configMap: r.Name, key: r.Key}
			case r.Optional != nil && *r.Optional:
			default:
				env[e.Name] = kedaEnv{missing: fmt.Sprintf("ConfigMap %s key %s is not there", r.Name, r.Key)}
			}
		}
	}
	return env, secretEnvFrom, nil
}

// kedaParam is a trigger parameter as KEDA reads it: the metadata's value
// first, else the variable NAMEFromEnv names in the resolved environment.
type kedaParam struct {
	value string
	// fromEnv: the variable; configMap and key when the variable is a
	// ConfigMap's.
	fromEnv, configMap, key string
	// unresolvable says why the value cannot be known without a Secret
	// (or at all); empty when resolved or absent.
	unresolvable string
}

func kedaParamOf(md map[string]string, name string, env map[string]kedaEnv, secretEnvFrom []string, envErr error) kedaParam {
	if v := strings.TrimSpace(md[name]); v != "" {
		return kedaParam{value: v}
	}
	variable := md[name+"FromEnv"]
	if variable == "" {
		return kedaParam{}
	}
	p := kedaParam{fromEnv: variable}
	if envErr != nil {
		p.unresolvable = fmt.Sprintf("%sFromEnv %s: %v", name, variable, envErr)
		return p
	}
	e, ok := env[variable]
	switch {
	case ok && e.secret != "":
		p.unresolvable = fmt.Sprintf("%sFromEnv %s comes from %s, and Secrets are never read", name, variable, e.secret)
	case ok && e.missing != "":
		p.unresolvable = fmt.Sprintf("%sFromEnv %s: %s", name, variable, e.missing)
	case ok && strings.TrimSpace(e.value) != "":
		p.value, p.configMap, p.key = strings.TrimSpace(e.value), e.configMap, e.key
	case !ok && len(secretEnvFrom) > 0:
		p.unresolvable = fmt.Sprintf("%sFromEnv %s may come from Secret %s (envFrom), and Secrets are never read",
			name, variable, strings.Join(secretEnvFrom, ", "))
	default:
		p.unresolvable = fmt.Sprintf("%sFromEnv %s is not set in the container", name, variable)
	}
	return p
}

// normalServer is a bootstrap address as compared: lower case, without a
// trailing dot or the cluster's service suffix (kafka.ns.svc.cluster.local
// is kafka.ns), a bare service name qualified by ns.
func normalServer(s, ns string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	host, port, ok := strings.Cut(s, ":")
	host = strings.TrimSuffix(host, ".")
	host = strings.TrimSuffix(host, ".cluster.local")
	host = strings.TrimSuffix(host, ".svc")
	if ns != "" && host != "" && !strings.Contains(host, ".") && !strings.ContainsAny(host[:1], "0123456789[") {
		host += "." + ns
	}
	if ok {
		return host + ":" + port
	}
	return host
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// declare reads the snapshot's scalers: each Kafka trigger whose group
// resolves, on the snapshot's cluster, declares its target the group's
// consumer.
func (idx *Index) declare(scalers []Scaler, servers []string, cms configMaps) {
	for _, s := range scalers {
		if !s.LastActive.IsZero() {
			idx.lastActive[s.Ref] = s.LastActive
		}
		for _, t := range s.Triggers {
			if !t.Kafka() {
				continue
			}
			unresolved := func(format string, args ...any) {
				idx.unresolved = append(idx.unresolved, Unresolved{Scaler: s.Ref, Trigger: triggerText(t), Reason: fmt.Sprintf(format, args...)})
			}
			i, ok := idx.byRef[s.Target]
			if !ok {
				unresolved("its target %s is not a workload read (Deployment, StatefulSet, Argo Rollout in the namespaces read)", s.Target)
				continue
			}
			w := &idx.workloads[i]
			env, secretEnvFrom, envErr := resolveKEDAEnv(&w.Template.Spec, s.EnvSourceContainerName, w.Ref.Namespace, cms)
			group := kedaParamOf(t.Metadata, "consumerGroup", env, secretEnvFrom, envErr)
			if group.unresolvable != "" {
				unresolved("consumerGroup unresolvable: %s", group.unresolvable)
				continue
			}
			if group.value == "" {
				unresolved("it sets no consumerGroup")
				continue
			}
			ev := Evidence{Kind: EvidenceKind(s.Ref.Kind), Confidence: Declared, Scaler: s.Ref.Name, Trigger: triggerText(t)}
			if group.fromEnv != "" {
				ev.Container, ev.Variable, ev.ConfigMap, ev.Key = w.Template.Spec.Containers[0].Name, group.fromEnv, group.configMap, group.key
				if s.EnvSourceContainerName != "" {
					ev.Container = s.EnvSourceContainerName
				}
			}
			if topic := kedaParamOf(t.Metadata, "topic", env, secretEnvFrom, envErr); topic.value != "" {
				ev.Topics = strings.Join(splitList(topic.value), ",")
			}
			bs := kedaParamOf(t.Metadata, "bootstrapServers", env, secretEnvFrom, envErr)
			switch {
			case bs.unresolvable != "":
				// The group is declared, the cluster is not known: as sure
				// as a well-known variable.
				ev.Confidence = Likely
				ev.Note = "bootstrapServers unresolvable (" + bs.unresolvable + "): its cluster is not checked"
			case bs.value != "" && len(servers) > 0 && !sameCluster(splitList(bs.value), servers, w.Ref.Namespace):
				unresolved("its bootstrapServers %s are not this cluster's (%s): another cluster's consumer", bs.value, strings.Join(servers, ","))
				idx.unresolved[len(idx.unresolved)-1].OtherCluster = true
				continue
			}
			idx.declared[group.value] = append(idx.declared[group.value], valueAt{workload: i, evidence: ev})
		}
	}
}

// sameCluster: a trigger's servers and the cluster's share an address.
func sameCluster(trigger, cluster []string, ns string) bool {
	for _, a := range trigger {
		for _, b := range cluster {
			if normalServer(a, ns) == normalServer(b, ns) || normalServer(a, ns) == normalServer(b, "") {
				return true
			}
		}
	}
	return false
}

// Unresolved lists the snapshot's Kafka triggers that map no group: the
// group comes from a Secret or is not set, the target is not read, or
// the servers are another cluster's.
func (idx *Index) Unresolved() []Unresolved { return idx.unresolved }
