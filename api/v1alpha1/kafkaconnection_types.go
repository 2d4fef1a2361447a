package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Kafka cluster belongs to the platform team: it declares the cluster
// once, as a ClusterKafkaConnection (cluster-scoped, its Secrets in the
// manager's namespace, usable by the namespaces it allows) or a
// KafkaConnection (namespaced, usable by policies of its namespace), and
// policies name it with spec.kafka.connectionRef. The pattern is
// cert-manager's ClusterIssuer and Issuer, with Gateway API's
// allowedRoutes for the namespaces.

// RequestedAtAnnotation asks for a fresh observation now, on a policy or a
// connection: set it to any new value (a timestamp, as `kubectl annotate
// ... retentionguard.io/requestedAt="$(date +%s)" --overwrite`). The
// value is copied to status.lastHandledRequestedAt once an observation
// that started after the request has been written (Flux's
// reconcile.fluxcd.io/requestedAt pattern).
const RequestedAtAnnotation = "retentionguard.io/requestedAt"

// FromNamespaces says which namespaces may use a ClusterKafkaConnection.
// +kubebuilder:validation:Enum=All;Same;Selector
type FromNamespaces string

const (
	// NamespacesFromAll: policies in every namespace.
	NamespacesFromAll FromNamespaces = "All"
	// NamespacesFromSame: only policies in the manager's namespace.
	NamespacesFromSame FromNamespaces = "Same"
	// NamespacesFromSelector: policies in namespaces whose labels match
	// the selector.
	NamespacesFromSelector FromNamespaces = "Selector"
)

// AllowedNamespaces says which namespaces' policies may use a
// ClusterKafkaConnection.
//
// +kubebuilder:validation:XValidation:rule="(self.from == 'Selector') == has(self.selector)",message="allowedNamespaces: selector is required with from: Selector, and only with it"
type AllowedNamespaces struct {
	// from is All (every namespace), Same (the manager's namespace only,
	// the default) or Selector (namespaces whose labels match selector).
	// +optional
	// +kubebuilder:default=Same
	From FromNamespaces `json:"from,omitempty"`

	// selector matches the labels of the namespaces allowed, with from:
	// Selector. A namespace's labels are read when a policy is proven: a
	// namespace that loses its label loses the connection.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// StrimziSource reads a connection's bootstrap address and cluster CA from
// a Strimzi Kafka resource's status.listeners.
type StrimziSource struct {
	// kafkaRef names the Strimzi Kafka resource (kafka.strimzi.io).
	// +required
	KafkaRef StrimziKafkaReference `json:"kafkaRef"`

	// listener is the name of the listener in the Kafka resource's
	// spec.kafka.listeners (and status.listeners) to connect through,
	// e.g. tls. A listener whose status lists certificates is TLS, and
	// those certificates (the cluster CA) verify the brokers.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Listener string `json:"listener"`
}

// StrimziKafkaReference names a Strimzi Kafka resource.
type StrimziKafkaReference struct {
	// namespace of the Kafka resource. Required for a
	// ClusterKafkaConnection; a KafkaConnection may only name its own
	// namespace (the default).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// name of the Kafka resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// DiscoverySpec judges every consumer group on the cluster, guarded by a
// policy or not, in the connection's own batched observation.
//
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.recoveryWindow)",message="discovery: recoveryWindow is required when enabled, e.g. 168h"
type DiscoverySpec struct {
	// enabled lists every group (ListGroups) at each check and proves it
	// against recoveryWindow.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// recoveryWindow is the downtime every group on the cluster is judged
	// against, as a Go duration such as "168h".
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="discovery.recoveryWindow must be a positive duration, e.g. 168h"
	RecoveryWindow *metav1.Duration `json:"recoveryWindow,omitempty"`

	// groupPattern, a regular expression (RE2, unanchored), limits
	// discovery to the groups whose id it matches.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	GroupPattern string `json:"groupPattern,omitempty"`

	// allowInfiniteRetention accepts topics with retention.ms = -1, as a
	// policy's field of the same name.
	// +optional
	AllowInfiniteRetention bool `json:"allowInfiniteRetention,omitempty"`

	// allowSizeBoundedRetention accepts topics whose retention.bytes is
	// not -1, as a policy's field of the same name.
	// +optional
	AllowSizeBoundedRetention bool `json:"allowSizeBoundedRetention,omitempty"`
}

// KafkaConnectionSpec is how to reach and authenticate to one Kafka
// cluster. It is the spec of a KafkaConnection, and the inline part of a
// ClusterKafkaConnection's.
type KafkaConnectionSpec struct {
	// bootstrapServers are host:port addresses of brokers, e.g.
	// "kafka-0.kafka.kafka.svc:9093". Instead: strimzi.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.matches('^(\\\\[[0-9a-fA-F:.]+\\\\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):[0-9]{1,5}$'))",message="spec.bootstrapServers: each entry must be host:port, e.g. kafka-0.kafka:9092"
	BootstrapServers []string `json:"bootstrapServers,omitempty"`

	// strimzi reads the bootstrap address, and for a TLS listener the
	// cluster CA, from a Strimzi Kafka resource's status. Instead of
	// bootstrapServers; tls.secretRef may still add a client certificate.
	// +optional
	Strimzi *StrimziSource `json:"strimzi,omitempty"`

	// tls enables TLS, with a Secret holding ca.crt and optionally tls.crt
	// and tls.key (mutual TLS).
	// +optional
	TLS *KafkaTLS `json:"tls,omitempty"`

	// sasl enables SASL authentication: PLAIN, SCRAM-SHA-256/512,
	// OAUTHBEARER or AWS_MSK_IAM.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`

	// discovery judges every group on the cluster, and lists those no
	// policy guards in status.unguardedGroups.
	// +optional
	Discovery *DiscoverySpec `json:"discovery,omitempty"`

	// checkInterval is how often the connection observes the cluster for
	// its own status (brokers, offsets.retention.minutes, discovery).
	// Default 1m, minimum 10s. Policies keep their own intervals; passes
	// that come due together are shared.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.checkInterval must be at least 10s"
	CheckInterval *metav1.Duration `json:"checkInterval,omitempty"`
}

// ClusterKafkaConnectionSpec is a KafkaConnectionSpec plus the namespaces
// allowed to use it. Its Secrets live in the manager's namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.bootstrapServers) != has(self.strimzi)",message="spec: set exactly one of bootstrapServers and strimzi"
// +kubebuilder:validation:XValidation:rule="!has(self.strimzi) || has(self.strimzi.kafkaRef.namespace)",message="spec.strimzi.kafkaRef.namespace is required on a ClusterKafkaConnection"
type ClusterKafkaConnectionSpec struct {
	KafkaConnectionSpec `json:",inline"`

	// allowedNamespaces says which namespaces' policies may use this
	// connection: All, Same (the manager's namespace; the default) or
	// Selector (namespaces whose labels match). A policy in another
	// namespace is Stalled with reason NamespaceNotAllowed.
	// +optional
	// +kubebuilder:default={from: Same}
	AllowedNamespaces AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// BrokerOffsetsRetention is one broker's offsets.retention.minutes.
type BrokerOffsetsRetention struct {
	// broker is the broker's node id.
	Broker int32 `json:"broker"`
	// minutes is the broker's effective offsets.retention.minutes; absent
	// when it could not be read.
	// +optional
	Minutes *int64 `json:"minutes,omitempty"`
}

// UnguardedGroup is a group on the cluster that no policy using the
// connection guards, as discovery judged it.
type UnguardedGroup struct {
	// group is the consumer group id.
	Group string `json:"group"`
	// verdict against discovery.recoveryWindow.
	Verdict Verdict `json:"verdict"`
	// reason is the reason that decided the verdict (Ready's), e.g.
	// CommittedOffsetExpired.
	// +optional
	Reason string `json:"reason,omitempty"`
	// state is the group's state (Empty, Stable, ...).
	// +optional
	State string `json:"state,omitempty"`
	// topics the group has committed offsets on (or subscribes to).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Topics []string `json:"topics,omitempty"`
	// expiredRecords is how many records expired before the group read
	// them.
	// +optional
	ExpiredRecords int64 `json:"expiredRecords,omitempty"`
	// recoveryHeadroom is how long the group could go down now without
	// losing records.
	// +optional
	RecoveryHeadroom *metav1.Duration `json:"recoveryHeadroom,omitempty"`
	// workloads are the workloads whose pods consume the group, surest
	// first: the ones a policy for it should select.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Workloads []GroupWorkload `json:"workloads,omitempty"`
}

// GroupWorkload is a workload that consumes a group, with the evidence
// that says so and how sure it is.
type GroupWorkload struct {
	// kind of the workload: a KEDA ScaledJob stands for the Jobs it
	// creates.
	// +kubebuilder:validation:Enum=Deployment;StatefulSet;Job;CronJob;Rollout;ScaledJob
	Kind string `json:"kind"`
	// namespace of the workload.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the workload.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// confidence: Certain when a live member of the group connects from
	// a pod of the workload (its client host is the pod's IP); Declared
	// when a KEDA ScaledObject scales the workload (or a ScaledJob creates
	// its Jobs) on a kafka or apache-kafka trigger naming the group on
	// this cluster's servers (below Certain: a trigger declares what KEDA
	// scales on, a member proves what runs); Likely when
	// a variable or mounted ConfigMap sets the group ID under a name
	// Kafka clients read it from (SPRING_KAFKA_CONSUMER_GROUP_ID,
	// KAFKA_GROUP_ID, GROUP_ID, group.id, ...); Possible when a variable
	// or property whose name contains GROUP is the group ID.
	// +kubebuilder:validation:Enum=Certain;Declared;Likely;Possible
	Confidence string `json:"confidence"`
	// evidence lists the kinds of evidence that matched: MemberHost,
	// Environment, ConfigMap, ScaledObject, ScaledJob.
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:items:Enum=MemberHost;Environment;ConfigMap;ScaledObject;ScaledJob
	Evidence []string `json:"evidence"`
	// message says the strongest evidence, e.g. "member client settle-1
	// at 10.1.2.3 is pod settle-7d9f-abcde".
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
	// parked: the workload runs no pods by its spec (0 replicas, a
	// suspended Job or CronJob, a paused ScaledJob), so it matched by its
	// configuration or its KEDA trigger only.
	// +optional
	Parked bool `json:"parked,omitempty"`
}

// GroupVerdictCounts counts groups by verdict.
type GroupVerdictCounts struct {
	Proven   int32 `json:"proven"`
	Violated int32 `json:"violated"`
	Unknown  int32 `json:"unknown"`
}

// KafkaConnectionStatus is what the connection last saw of its cluster.
type KafkaConnectionStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the cluster answered the connection's last
	// observation), Reconciling while the first observation is pending,
	// Stalled while the spec or what it references must be fixed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// bootstrapServers are the servers in use (from spec, or read from the
	// Strimzi Kafka resource).
	// +optional
	// +listType=atomic
	BootstrapServers []string `json:"bootstrapServers,omitempty"`

	// brokers is how many brokers the cluster's metadata lists.
	// +optional
	Brokers int32 `json:"brokers,omitempty"`

	// brokerOffsetsRetention is each broker's offsets.retention.minutes.
	// +optional
	// +listType=map
	// +listMapKey=broker
	BrokerOffsetsRetention []BrokerOffsetsRetention `json:"brokerOffsetsRetention,omitempty"`

	// offsetsRetentionMinutes is the smallest of the brokers'
	// offsets.retention.minutes: it governs (any broker may coordinate a
	// group).
	// +optional
	OffsetsRetentionMinutes *int64 `json:"offsetsRetentionMinutes,omitempty"`

	// policies is how many policies name this connection.
	// +optional
	Policies int32 `json:"policies"`

	// lastObservedAt is when the cluster was last observed for this
	// connection.
	// +optional
	LastObservedAt *metav1.Time `json:"lastObservedAt,omitempty"`

	// lastHandledRequestedAt is the value of the
	// retentionguard.io/requestedAt annotation the last fresh observation
	// answered.
	// +optional
	LastHandledRequestedAt string `json:"lastHandledRequestedAt,omitempty"`

	// discoveredGroups is how many groups discovery judged.
	// +optional
	DiscoveredGroups int32 `json:"discoveredGroups,omitempty"`

	// unguardedVerdicts counts the groups no policy guards, by verdict.
	// +optional
	UnguardedVerdicts *GroupVerdictCounts `json:"unguardedVerdicts,omitempty"`

	// unguardedGroups are groups no policy using this connection guards,
	// worst first (Violated, then Unknown, then Proven; more expired
	// records, then less headroom, first), at most 50.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	UnguardedGroups []UnguardedGroup `json:"unguardedGroups,omitempty"`

	// unguardedGroupCount is how many groups no policy guards (listed or
	// not).
	// +optional
	UnguardedGroupCount int32 `json:"unguardedGroupCount,omitempty"`

	// unresolvedScalers are KEDA Kafka triggers (of ScaledObjects and
	// ScaledJobs) discovery could not map to a group on this cluster: the
	// group comes from a Secret (never read) or is not set, or the
	// scaled target is not a workload read. Their consumers are missing
	// from unguardedGroups[].workloads. Triggers that name another
	// cluster's servers are not listed. At most 20, sorted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	UnresolvedScalers []UnresolvedScaler `json:"unresolvedScalers,omitempty"`
}

// UnresolvedScaler is a KEDA Kafka trigger that maps no group, and why.
type UnresolvedScaler struct {
	// kind is ScaledObject or ScaledJob.
	// +kubebuilder:validation:Enum=ScaledObject;ScaledJob
	Kind string `json:"kind"`
	// namespace of the scaler.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the scaler.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// trigger is the trigger's type, and its name when it has one.
	// +kubebuilder:validation:MaxLength=300
	Trigger string `json:"trigger"`
	// message says why it maps no group.
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message"`
}

// ClusterKafkaConnection declares a Kafka cluster once for the whole
// Kubernetes cluster: how to reach and authenticate to it (its Secrets in
// the manager's namespace, out of the app teams' reach), which namespaces'
// policies may use it, and whether to judge every consumer group on it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ckc,categories=retentionguard
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Brokers",type=integer,JSONPath=`.status.brokers`
// +kubebuilder:printcolumn:name="Offsets-Retention",type=integer,JSONPath=`.status.offsetsRetentionMinutes`,description="offsets.retention.minutes, the smallest of the brokers'"
// +kubebuilder:printcolumn:name="Policies",type=integer,JSONPath=`.status.policies`
// +kubebuilder:printcolumn:name="Unguarded",type=integer,JSONPath=`.status.unguardedGroupCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Observed",type=date,JSONPath=`.status.lastObservedAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterKafkaConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the cluster, its credentials and who may use it.
	// +required
	Spec ClusterKafkaConnectionSpec `json:"spec"`

	// status is what the connection last saw of its cluster.
	// +optional
	Status KafkaConnectionStatus `json:"status,omitempty"`
}

// ClusterKafkaConnectionList is a list of ClusterKafkaConnection.
//
// +kubebuilder:object:root=true
type ClusterKafkaConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterKafkaConnection `json:"items"`
}

// KafkaConnection declares a Kafka cluster for the policies of its own
// namespace, its Secrets in that namespace: ClusterKafkaConnection's
// namespaced twin. It may not use the manager's own identity (an
// OAUTHBEARER tokenFile, AWS_MSK_IAM without a Secret).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kc,categories=retentionguard
// +kubebuilder:validation:XValidation:rule="has(self.spec.bootstrapServers) != has(self.spec.strimzi)",message="spec: set exactly one of bootstrapServers and strimzi"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.sasl) || !has(self.spec.sasl.oauthBearer) || !has(self.spec.sasl.oauthBearer.tokenFile)",message="spec.sasl.oauthBearer.tokenFile reads a file of the manager's pod (its identity): only a ClusterKafkaConnection may use it"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.sasl) || self.spec.sasl.mechanism != 'AWS_MSK_IAM' || has(self.spec.sasl.secretRef)",message="spec.sasl: AWS_MSK_IAM without a secretRef would use the manager's own AWS identity: only a ClusterKafkaConnection may; name a Secret with accessKeyID and secretAccessKey"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Brokers",type=integer,JSONPath=`.status.brokers`
// +kubebuilder:printcolumn:name="Offsets-Retention",type=integer,JSONPath=`.status.offsetsRetentionMinutes`,description="offsets.retention.minutes, the smallest of the brokers'"
// +kubebuilder:printcolumn:name="Policies",type=integer,JSONPath=`.status.policies`
// +kubebuilder:printcolumn:name="Unguarded",type=integer,JSONPath=`.status.unguardedGroupCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Observed",type=date,JSONPath=`.status.lastObservedAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KafkaConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the cluster and its credentials.
	// +required
	Spec KafkaConnectionSpec `json:"spec"`

	// status is what the connection last saw of its cluster.
	// +optional
	Status KafkaConnectionStatus `json:"status,omitempty"`
}

// KafkaConnectionList is a list of KafkaConnection.
//
// +kubebuilder:object:root=true
type KafkaConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KafkaConnection `json:"items"`
}
