package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Enforcement says what the admission webhook does when a policy's proof
// fails.
// +kubebuilder:validation:Enum=Deny;Warn;Audit
type Enforcement string

const (
	// EnforcementDeny refuses rollouts of matching workloads while the proof
	// is Violated or Unknown (fail closed) or the consumer clause fails,
	// unless the workload's override annotation names the proofID. One
	// exception: a proof failing only by risks (every violation, the
	// omitted ones counted too, is RecoveryHeadroomShorterThanWindow,
	// TombstoneHeadroomShorterThanWindow,
	// EmptyGroupOffsetsExpireBeforeWindow,
	// EmptyGroupOffsetsMayExpireBeforeWindow: nothing lost yet, or
	// CommittedEpochDiverged: a restart rewinds and re-reads) with no
	// consumer clause finding lets the rollout through with a warning, since
	// starting or fixing the consumer is the way out, or harmless.
	EnforcementDeny Enforcement = "Deny"
	// EnforcementWarn allows the rollout and returns a warning the client
	// shows to the person deploying.
	EnforcementWarn Enforcement = "Warn"
	// EnforcementAudit allows the rollout and only records an event and a
	// metric.
	EnforcementAudit Enforcement = "Audit"
)

// SASLMechanism is a SASL mechanism supported for Kafka authentication.
// +kubebuilder:validation:Enum=PLAIN;SCRAM-SHA-256;SCRAM-SHA-512;OAUTHBEARER;AWS_MSK_IAM
type SASLMechanism string

const (
	SASLPlain       SASLMechanism = "PLAIN"
	SASLScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLScramSHA512 SASLMechanism = "SCRAM-SHA-512"
	// SASLOAuthBearer authenticates with an OAuth 2 bearer token (KIP-255):
	// from a token endpoint (client credentials) or from a file.
	SASLOAuthBearer SASLMechanism = "OAUTHBEARER"
	// SASLAWSMSKIAM authenticates to Amazon MSK with AWS IAM credentials.
	SASLAWSMSKIAM SASLMechanism = "AWS_MSK_IAM"
)

// Verdict is the outcome of a retention proof.
// +kubebuilder:validation:Enum=Proven;Violated;Unknown
type Verdict string

const (
	VerdictProven   Verdict = "Proven"
	VerdictViolated Verdict = "Violated"
	VerdictUnknown  Verdict = "Unknown"
)

// ResumeFrom is where a consumer with a business cursor restarts from.
// +kubebuilder:validation:Enum=Cursor;GroupOffsets
type ResumeFrom string

const (
	// ResumeFromCursor: the consumer seeks to its business cursor on
	// start; the group's offsets are a cache and do not decide.
	ResumeFromCursor ResumeFrom = "Cursor"
	// ResumeFromGroupOffsets: the consumer resumes from the group's
	// committed offsets; the cursor says what was really processed.
	ResumeFromGroupOffsets ResumeFrom = "GroupOffsets"
)

// CursorDriver is the database a business cursor lives in.
// +kubebuilder:validation:Enum=postgres;mysql
type CursorDriver string

const (
	CursorDriverPostgres CursorDriver = "postgres"
	// CursorDriverMySQL is MySQL or MariaDB.
	CursorDriverMySQL CursorDriver = "mysql"
)

// ConsumerRetentionPolicySpec declares one consumer group, the topics it
// reads, how long it must be able to stay down, and which workloads consume
// as that group.
// +kubebuilder:validation:XValidation:rule="!has(self.cursor) || size(self.topics) == 1 || (has(self.cursor.sql.query) && self.cursor.sql.query.contains('topic'))",message="spec.cursor.sql.query is required with several topics, and must return a topic column: the default query reads seed 003's table, which has no topic to tell their partitions apart"
type ConsumerRetentionPolicySpec struct {
	// groupID is the Kafka consumer group id (group.id) whose committed
	// offsets are proven, exactly as the consumers configure it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	GroupID string `json:"groupID"`

	// topics are the Kafka topics the group consumes. Every partition of
	// every topic is checked. Names must be unique.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=249
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9._-]+$`
	Topics []string `json:"topics"`

	// recoveryWindow is the longest downtime this consumer must survive
	// without losing records, as a Go duration such as "72h" or "240h"
	// (days are written in hours). The proof fails when a topic's
	// retention.ms, or the brokers' offsets.retention.minutes, is shorter
	// than this window: a consumer down that long would restart from a
	// position that no longer proves anything.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.recoveryWindow must be a positive duration, e.g. 72h"
	RecoveryWindow metav1.Duration `json:"recoveryWindow"`

	// selector matches the pod template labels of the Deployments and
	// StatefulSets that consume as this group. Their rollouts are refused
	// (or warned about, see enforcement) while the proof fails.
	// An operator Kubernetes does not know (they are case-sensitive: In,
	// NotIn, Exists, DoesNotExist), In or NotIn without values, and Exists
	// or DoesNotExist with values are refused: such a selector matches no
	// workload, and the policy would guard nothing. Keys and values that
	// are no label keys or values make the policy Stalled, reason
	// InvalidSelector (CEL cannot check them within the API server's cost
	// budget: metav1.LabelSelector declares no maxItems or maxLength).
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.selector must select the consumer's pods: set matchLabels or matchExpressions (an empty selector would match every workload in the namespace)"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="spec.selector.matchExpressions: operator must be In, NotIn, Exists or DoesNotExist (case-sensitive): any other selects no workload"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? (has(e.values) && size(e.values) > 0) : (!has(e.values) || size(e.values) == 0))",message="spec.selector.matchExpressions: In and NotIn need at least one value, Exists and DoesNotExist take none"
	Selector metav1.LabelSelector `json:"selector"`

	// enforcement is what the admission webhook does with a rollout of a
	// matching workload while the proof is Violated or Unknown (or the
	// consumer clause fails): Deny refuses it (the default), except when
	// the proof fails only by risks (the unread records or the offsets
	// expire before the window ends, none lost yet) and the consumer clause
	// passes, which is allowed with a warning; Warn allows it with a
	// warning shown to the client, Audit allows it and records an event and
	// a metric.
	// +optional
	// +kubebuilder:default=Deny
	Enforcement Enforcement `json:"enforcement,omitempty"`

	// checkInterval is how often the brokers are observed and the proof
	// re-evaluated, as a Go duration. Default 1m, minimum 10s.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.checkInterval must be at least 10s"
	CheckInterval *metav1.Duration `json:"checkInterval,omitempty"`

	// allowInfiniteRetention accepts topics with retention.ms = -1
	// (records never expire by time). Off by default: -1 is often a
	// misconfiguration, and size-based deletion may still apply.
	// +optional
	AllowInfiniteRetention bool `json:"allowInfiniteRetention,omitempty"`

	// allowSizeBoundedRetention accepts topics whose retention.bytes is not
	// -1. Off by default: size-bounded retention can delete records well
	// before retention.ms when traffic spikes, so no time window is proven.
	// +optional
	AllowSizeBoundedRetention bool `json:"allowSizeBoundedRetention,omitempty"`

	// consumer, when set, also proves the client fails loudly instead of
	// skipping: the matching pod templates must set the offset-reset
	// environment variable to none/error (and auto commit off, if named).
	// +optional
	Consumer *ConsumerClientSpec `json:"consumer,omitempty"`

	// kafka is how to reach the cluster that holds the group and topics.
	// +required
	Kafka PolicyKafka `json:"kafka"`

	// cursor, when set, also proves the consumer's own record of progress:
	// a business cursor table in its database, written in the same
	// transaction as the effect (the authority on what was processed;
	// __consumer_offsets is a cache with a TTL). Every partition's cursor
	// must lie inside the retained log (condition CursorInRange), and the
	// group's committed offsets are compared with it: records a restart
	// from the group would skip, or replay, are reported.
	// +optional
	Cursor *CursorSpec `json:"cursor,omitempty"`
}

// CursorSpec declares where the consumer keeps its business cursor and
// where it restarts from.
type CursorSpec struct {
	// resumeFrom is where the consumer restarts: GroupOffsets (the
	// default: it resumes from the group's committed offsets, so a group
	// offset ahead of the cursor is a violation, GroupAheadOfCursor) or
	// Cursor (it seeks to its cursor on start: the group's offsets then do
	// not decide the verdict, retention still does, and recoveryHeadroom
	// is measured from the cursor).
	// +optional
	// +kubebuilder:default=GroupOffsets
	ResumeFrom ResumeFrom `json:"resumeFrom,omitempty"`

	// sql is the database and query the cursor is read with.
	// +required
	SQL CursorSQL `json:"sql"`
}

// CursorSQL reads a business cursor from PostgreSQL, MySQL or MariaDB.
// +kubebuilder:validation:XValidation:rule="!has(self.query) || size(self.query) == 0 || (self.driver == 'postgres' ? self.query.contains('$1') : self.query.contains('?'))",message="spec.cursor.sql.query must take the group ID as its one parameter: $1 for postgres, ? for mysql"
// +kubebuilder:validation:XValidation:rule="!has(self.query) || size(self.query) == 0 || self.query.trim().lowerAscii().startsWith('select') || self.query.trim().lowerAscii().startsWith('with')",message="spec.cursor.sql.query must be a SELECT (it runs in a read-only transaction)"
type CursorSQL struct {
	// driver is postgres, or mysql (MySQL and MariaDB).
	// +required
	Driver CursorDriver `json:"driver"`

	// secretRef names the key of a Secret in the policy's namespace that
	// holds the connection string: a postgres URL
	// (postgres://user:password@host:5432/db?sslmode=require) or key=value
	// string, or a MySQL DSN (user:password@tcp(host:3306)/db). The manager
	// connects only to hosts its --allowed-cursor-hosts allows (none by
	// default). It never appears in status, events, logs or metrics.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`

	// query reads the cursor, with the group ID as its one parameter ($1
	// for postgres, ? for mysql), one row per partition, in columns named
	// partition (integer), next_offset (integer: the next offset the
	// consumer will process, a Kafka committed offset's meaning),
	// optionally topic (required with several topics) and updated_at
	// (timestamp). It runs in a read-only transaction with a statement
	// timeout and a row limit. Default: seed 003's table,
	// SELECT partition_id AS partition, last_offset + 1 AS next_offset,
	// updated_at FROM consumer_cursor WHERE group_id = $1 (partition
	// quoted with backticks for mysql).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query,omitempty"`
}

// SecretKeyReference names a key of a Secret in the policy's own namespace.
type SecretKeyReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// ConsumerClientSpec names the environment variables through which the
// consumer's client is configured, so the webhook can check them in the pod
// template.
type ConsumerClientSpec struct {
	// container is the name of the container in the pod template that runs
	// the consumer. Empty: every container is checked.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Container string `json:"container,omitempty"`

	// offsetResetEnv is the environment variable holding the client's
	// auto.offset.reset. Its value must be "none" in lower case (Java,
	// franz-go; the Java client rejects NONE) or "error" in any case
	// (librdkafka): other values let the client silently skip records when
	// its position has expired, or are rejected by the client. A Kafka
	// Streams application's per-topic resets beat the variable: it proves
	// nothing there. With it set, a partition without a committed offset
	// needs a seek before the consumer starts (a none client throws there).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	OffsetResetEnv string `json:"offsetResetEnv"`

	// autoCommitEnv is the environment variable holding the client's
	// enable.auto.commit. When set, its value must be "false": auto commit
	// advances offsets past records that were never processed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	AutoCommitEnv string `json:"autoCommitEnv,omitempty"`
}

// PolicyKafka is how a policy reaches its Kafka cluster: a connection
// declared once (connectionRef), or the connection written inline.
//
// +kubebuilder:validation:XValidation:rule="has(self.connectionRef) != has(self.bootstrapServers)",message="spec.kafka: set exactly one of connectionRef (a KafkaConnection or ClusterKafkaConnection) and bootstrapServers (an inline connection)"
// +kubebuilder:validation:XValidation:rule="!has(self.connectionRef) || (!has(self.tls) && !has(self.sasl))",message="spec.kafka: tls and sasl belong to the connection named by connectionRef; remove them from the policy"
// +kubebuilder:validation:XValidation:rule="!has(self.sasl) || !has(self.sasl.oauthBearer) || !has(self.sasl.oauthBearer.tokenFile)",message="spec.kafka.sasl.oauthBearer.tokenFile reads a file of the manager's pod (its identity): only a ClusterKafkaConnection may use it; use tokenEndpoint with a Secret, or a connectionRef"
// +kubebuilder:validation:XValidation:rule="!has(self.sasl) || self.sasl.mechanism != 'AWS_MSK_IAM' || has(self.sasl.secretRef)",message="spec.kafka.sasl: AWS_MSK_IAM without a secretRef would use the manager's own AWS identity: only a ClusterKafkaConnection may; name a Secret with accessKeyID and secretAccessKey, or use a connectionRef"
type PolicyKafka struct {
	// connectionRef names a ClusterKafkaConnection (declared once by the
	// platform team, its Secrets out of the policy's reach) or a
	// KafkaConnection in the policy's namespace. Instead of
	// bootstrapServers, tls and sasl.
	// +optional
	ConnectionRef *ConnectionReference `json:"connectionRef,omitempty"`

	// bootstrapServers are host:port addresses of brokers, e.g.
	// "kafka-0.kafka:9092", for a connection written inline. The manager
	// dials only servers its --allowed-bootstrap-servers allows (none by
	// default: reference a ClusterKafkaConnection instead).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.matches('^(\\\\[[0-9a-fA-F:.]+\\\\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):[0-9]{1,5}$'))",message="spec.kafka.bootstrapServers: each entry must be host:port, e.g. kafka-0.kafka:9092"
	BootstrapServers []string `json:"bootstrapServers,omitempty"`

	// tls enables TLS. The Secret, in the policy's namespace, may hold
	// ca.crt (the CA that signed the brokers' certificates; the system
	// pool when absent) and tls.crt with tls.key (a client certificate for
	// mutual TLS).
	// +optional
	TLS *KafkaTLS `json:"tls,omitempty"`

	// sasl enables SASL authentication with a Secret in the policy's
	// namespace.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`

	// readOffsetsTopic reads the exact time of each of the group's commits
	// (and when a classic group became Empty) from the internal topic
	// __consumer_offsets, where the group coordinator logs them. On by
	// default. Offsets of simple, KIP-848 and streams groups expire
	// offsets.retention.minutes after their own last commit, and an Empty
	// classic group's that long after it became Empty; without the exact
	// times the guard bounds them from record timestamps and the changes it
	// saw, and an idle partition or an Empty spell it cannot date is not
	// proven (on Kafka 3.x as deployed, whose
	// message.timestamp.after.max.ms is unbounded, few commits can be
	// dated). The principal needs Read on topic __consumer_offsets
	// (docs/install.md); where it is denied, the guard falls back to the
	// bounds and says so (status.proof.configWarnings, the
	// GroupOffsetsRetained condition, the metric
	// retentionguard_offsets_topic_readable). false turns the read off.
	// +optional
	// +kubebuilder:default=true
	ReadOffsetsTopic *bool `json:"readOffsetsTopic,omitempty"`
}

// ReadsOffsetsTopic reports whether the policy reads exact commit times
// from __consumer_offsets: unless readOffsetsTopic is false.
func (k PolicyKafka) ReadsOffsetsTopic() bool {
	return k.ReadOffsetsTopic == nil || *k.ReadOffsetsTopic
}

// ShardLabel is the label a manager started with --watch-label-selector
// selects policies and connections by (docs/scaling.md, "Going past one
// manager"): e.g. retentionguard.io/shard=a on a ClusterKafkaConnection and
// every policy that names it.
const ShardLabel = "retentionguard.io/shard"

// Kinds a connectionRef may name.
const (
	KindClusterKafkaConnection = "ClusterKafkaConnection"
	KindKafkaConnection        = "KafkaConnection"
)

// ConnectionReference names a ClusterKafkaConnection, or a KafkaConnection
// in the policy's own namespace.
type ConnectionReference struct {
	// kind is ClusterKafkaConnection or KafkaConnection.
	// +required
	// +kubebuilder:validation:Enum=ClusterKafkaConnection;KafkaConnection
	Kind string `json:"kind"`

	// name of the connection.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// KafkaTLS configures TLS to the brokers.
type KafkaTLS struct {
	// secretRef names a Secret with keys ca.crt, tls.crt and tls.key (each
	// optional; Strimzi's user.crt and user.key are read when tls.crt and
	// tls.key are absent).
	// +required
	SecretRef SecretReference `json:"secretRef"`

	// serverName overrides the name checked against the brokers'
	// certificates. Default: the host of each bootstrap server.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ServerName string `json:"serverName,omitempty"`
}

// KafkaSASL configures SASL authentication.
//
// +kubebuilder:validation:XValidation:rule="!(self.mechanism in ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']) || has(self.secretRef)",message="sasl: PLAIN and SCRAM need a secretRef (keys username and password)"
// +kubebuilder:validation:XValidation:rule="(self.mechanism == 'OAUTHBEARER') == has(self.oauthBearer)",message="sasl: oauthBearer is required with mechanism OAUTHBEARER, and only with it"
// +kubebuilder:validation:XValidation:rule="self.mechanism != 'OAUTHBEARER' || !has(self.oauthBearer.tokenEndpoint) || has(self.secretRef)",message="sasl: oauthBearer.tokenEndpoint needs a secretRef (keys clientID and clientSecret)"
type KafkaSASL struct {
	// mechanism is the SASL mechanism: PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM. Use PLAIN only together
	// with TLS.
	// +required
	Mechanism SASLMechanism `json:"mechanism"`

	// secretRef names a Secret holding the credentials: username and
	// password (PLAIN, SCRAM); clientID and clientSecret (OAUTHBEARER with
	// a tokenEndpoint); accessKeyID, secretAccessKey and optionally
	// sessionToken (AWS_MSK_IAM with static keys; without a secretRef, a
	// ClusterKafkaConnection uses the AWS SDK's default credential chain:
	// IRSA, EKS Pod Identity, environment). The Secret lives in the
	// policy's or KafkaConnection's namespace, or in the manager's
	// namespace for a ClusterKafkaConnection.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// oauthBearer says where OAUTHBEARER tokens come from.
	// +optional
	OAuthBearer *OAuthBearer `json:"oauthBearer,omitempty"`
}

// OAuthBearer says where OAUTHBEARER tokens come from: a token endpoint
// (the OAuth 2 client credentials grant, RFC 6749 section 4.4) or a file
// the manager's pod holds, such as a projected ServiceAccount token.
//
// +kubebuilder:validation:XValidation:rule="has(self.tokenEndpoint) != has(self.tokenFile)",message="oauthBearer: set exactly one of tokenEndpoint and tokenFile"
type OAuthBearer struct {
	// tokenEndpoint is the identity provider's token URL, e.g.
	// https://login.example.com/oauth2/token. Tokens are requested with
	// the client credentials grant (clientID and clientSecret from the
	// secretRef), kept until they expire, and sent to the brokers.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^ ]+$`
	TokenEndpoint string `json:"tokenEndpoint,omitempty"`

	// scopes are requested from the token endpoint.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Scopes []string `json:"scopes,omitempty"`

	// audience, when set, is sent to the token endpoint as the audience
	// parameter (some identity providers require it).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Audience string `json:"audience,omitempty"`

	// tokenFile is an absolute path, in the manager's pod, to a file
	// holding the token (a projected ServiceAccount token, or one written
	// by a sidecar). It is read again for every authentication, so
	// rotations take effect. Only ClusterKafkaConnections may use it: the
	// file is the manager's own identity.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	TokenFile string `json:"tokenFile,omitempty"`

	// extensions are SASL extensions sent with the token (KIP-342), e.g.
	// Confluent Cloud's logicalCluster and identityPoolId.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Extensions map[string]string `json:"extensions,omitempty"`
}

// SecretReference names a Secret: in the policy's own namespace for an
// inline connection, in the connection's namespace for a KafkaConnection,
// in the manager's namespace for a ClusterKafkaConnection.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ConsumerRetentionPolicyStatus is the proof as last observed.
type ConsumerRetentionPolicyStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: one per clause of the proof (KafkaReachable,
	// RetentionCoversWindow, GroupOffsetsRetained, OffsetsInRange, and
	// CursorInRange with spec.cursor) and Ready, which is True only when
	// the proof holds. With spec.cursor.resumeFrom Cursor the group offset
	// clauses keep the facts but do not decide (their message says so).
	// Reconciling is present while the first proof is pending; Stalled
	// while a person must fix the spec or a Secret.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// proof is the last proof: the verdict and the facts behind it.
	// +optional
	Proof *ProofStatus `json:"proof,omitempty"`

	// heartbeat names the Lease that confirms the proof between writes.
	// The status is written when the proof changes, not on every check:
	// the manager's leader re-proves every policy each checkInterval and,
	// once every policy naming this Lease has been re-proved (its status
	// written when it changed), sets the Lease's spec.renewTime to the
	// oldest of those observations. A proof is as recent as the later of
	// proof.checkedAt and that renewTime; the admission webhook judges
	// freshness by it on every replica. Absent while the proof is not
	// confirmed this way (a spec problem, or a manager without a
	// namespace for its Leases, which then writes the status on every
	// check).
	// +optional
	Heartbeat *HeartbeatReference `json:"heartbeat,omitempty"`

	// lastHandledRequestedAt is the value of the
	// retentionguard.io/requestedAt annotation the last fresh observation
	// answered.
	// +optional
	LastHandledRequestedAt string `json:"lastHandledRequestedAt,omitempty"`
}

// HeartbeatReference names a coordination.k8s.io/v1 Lease in the
// manager's namespace.
type HeartbeatReference struct {
	// namespace of the Lease: the manager's.
	Namespace string `json:"namespace"`
	// name of the Lease: one per Kafka cluster and checkInterval.
	Name string `json:"name"`
}

// ProofStatus is the outcome of one check against the brokers.
type ProofStatus struct {
	// verdict is Proven (the group survives its recovery window), Violated
	// (a clause fails) or Unknown (a fact could not be read; treated like
	// Violated by Deny policies).
	Verdict Verdict `json:"verdict"`

	// proofID identifies the failing facts. The same gap keeps the same ID;
	// a new gap gets a new one. Put it in the retentionguard.io/override-proof
	// annotation of a workload to roll out anyway, knowingly.
	// +optional
	ProofID string `json:"proofID,omitempty"`

	// checkedAt is when the brokers were observed for this proof. Later
	// checks that find the same facts leave the status as it is (see
	// status.heartbeat for when it was last confirmed) for up to ten
	// checkIntervals, at least an hour; durations below (recoveryHeadroom,
	// groupOffsetsExpireIn) are as of checkedAt, and are rewritten once
	// they drift from the current value by more than 1% (at least a
	// minute). The "Proof Age" printer column shows how long ago: a proof
	// much older than that is stale (no manager is updating it) whatever
	// its verdict says.
	CheckedAt metav1.Time `json:"checkedAt"`

	// clusterID is the ID of the Kafka cluster observed (its brokers'
	// Metadata answer). What an earlier proof saw of the group (its state,
	// groupEmptySince) counts for the next only on the same cluster.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// groupState is the consumer group's state as Kafka reports it
	// (Empty, Stable, Dead, ...).
	// +optional
	GroupState string `json:"groupState,omitempty"`

	// groupProtocol is classic, consumer (KIP-848), streams (KIP-1071) or
	// share (KIP-932: a share group, judged on its share-partition start
	// offset); empty when the group was not found.
	// +optional
	GroupProtocol string `json:"groupProtocol,omitempty"`

	// groupProtocolType is a classic group's protocol type: consumer,
	// connect, or empty for a simple group (one that commits without
	// joining: Flink, Spark, assign()).
	// +optional
	GroupProtocolType string `json:"groupProtocolType,omitempty"`

	// groupEmptySince is when the group became Empty: exact when read from
	// __consumer_offsets, else the last time the guard saw it in another
	// state (it became Empty after that). A classic group's offsets expire
	// offsets.retention.minutes later.
	// +optional
	GroupEmptySince *metav1.Time `json:"groupEmptySince,omitempty"`

	// offsetExpiry is the clock the group coordinator expires this group's
	// offsets on, and the soonest expiry.
	// +optional
	OffsetExpiry *OffsetExpiryStatus `json:"offsetExpiry,omitempty"`

	// offsetsRetentionMinutes is the brokers' offsets.retention.minutes
	// (the smallest, when brokers disagree).
	// +optional
	OffsetsRetentionMinutes *int64 `json:"offsetsRetentionMinutes,omitempty"`

	// topics are the retention settings read from each topic.
	// +optional
	// +listType=map
	// +listMapKey=name
	Topics []TopicRetentionStatus `json:"topics,omitempty"`

	// partitionSummary counts partitions by outcome.
	// +optional
	PartitionSummary PartitionSummary `json:"partitionSummary,omitempty"`

	// expiredRecords is how many records were deleted by retention before
	// the group read them (sum of log start minus committed offset).
	// +optional
	ExpiredRecords int64 `json:"expiredRecords,omitempty"`

	// recoveryHeadroom is how long the group could go down now without
	// losing records: the smallest, over partitions, of the timestamp of
	// the record at the committed offset plus retention.ms minus now, and
	// on a compacted topic where the group lags, of the earliest the log
	// cleaner may drop a tombstone it has not read (that timestamp, less
	// message.timestamp.after.max.ms with CreateTime, plus
	// delete.retention.ms) minus now.
	// +optional
	RecoveryHeadroom *metav1.Duration `json:"recoveryHeadroom,omitempty"`

	// groupOffsetsExpireIn is how long until the group's soonest committed
	// offset may expire (offsetExpiry.soonestAt minus checkedAt), while a
	// clock runs.
	// +optional
	GroupOffsetsExpireIn *metav1.Duration `json:"groupOffsetsExpireIn,omitempty"`

	// violations are the failing facts, at most 20.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Violations []ViolationStatus `json:"violations,omitempty"`

	// violationsOmitted counts the violations beyond the 20 listed.
	// +optional
	ViolationsOmitted int32 `json:"violationsOmitted,omitempty"`

	// violationsOmittedByReason counts the violations left out of
	// violations by their reason, counted over the proof's every violation
	// before the list is cut: one entry per reason, loss first as
	// violations lists them, the counts summing to violationsOmitted. It
	// is absent when nothing is omitted. Admission reads it to tell a
	// proof failing only by risks (every reason, listed or omitted, a
	// risk such as RecoveryHeadroomShorterThanWindow,
	// EmptyGroupOffsetsExpireBeforeWindow or CommittedEpochDiverged: a
	// lagging topic's many partitions, nothing skipped yet) from one that
	// lost records; a status
	// whose counts do not account for every omitted violation (written
	// before this field existed) is read as not only risks.
	// +optional
	// +listType=map
	// +listMapKey=reason
	// +kubebuilder:validation:MaxItems=64
	ViolationsOmittedByReason []ReasonCount `json:"violationsOmittedByReason,omitempty"`

	// warnings are reported and never deny on their own (low recovery
	// headroom, group offsets expiring soon, selected CronJobs whose
	// schedule lets the group's offsets expire between runs or that are
	// suspended). Admission responses repeat them.
	// +optional
	// +listType=atomic
	Warnings []string `json:"warnings,omitempty"`

	// cursor is the business cursor against the group's offsets, with
	// spec.cursor (per-partition cursors: retention-guard check --output
	// json).
	// +optional
	Cursor *CursorStatus `json:"cursor,omitempty"`

	// configWarnings are configuration advice that never denies and is not
	// repeated on admission: topics that accept record timestamps old
	// enough to be deleted sooner than the window, exact commit times that
	// could not be read from __consumer_offsets.
	// +optional
	// +listType=atomic
	ConfigWarnings []string `json:"configWarnings,omitempty"`

	// warningFacts are what warnings and configWarnings say, as data: one
	// per warning, warnings first and then configWarnings, each in the
	// order of its list (the prose of both lists is rendered from these).
	// Read these rather than the prose; the operator judges whether a
	// proof changed by them, with the time they measure from checkedAt
	// (in) compared within 1%.
	// +optional
	// +listType=atomic
	WarningFacts []WarningFact `json:"warningFacts,omitempty"`

	// scaledToZero are the workloads the policy selects that KEDA holds
	// at zero while the group has no member: a ScaledObject's target at 0
	// replicas, or a ScaledJob, whose Kafka trigger declares the group.
	// KEDA starts them again only on new lag; the group is Empty meanwhile
	// and its committed offsets expire offsetsRetentionMinutes after it
	// emptied (seed 003 under KEDA). Absent while the group has a member.
	// The GroupOffsetsRetained condition's message and a scaledToZero
	// warning say the same in words.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	ScaledToZero []ScaledToZeroStatus `json:"scaledToZero,omitempty"`
}

// KindName names an object of the policy's namespace by kind and name.
type KindName struct {
	// kind of the object, e.g. Deployment, StatefulSet, Rollout,
	// ScaledObject, ScaledJob.
	Kind string `json:"kind"`
	// name of the object.
	Name string `json:"name"`
}

// ScaledToZeroStatus is a workload KEDA holds at zero, the KEDA object
// holding it, and when the group's offsets may expire.
type ScaledToZeroStatus struct {
	// workload is the workload held at zero: a Deployment, StatefulSet or
	// Argo Rollout at 0 replicas, or a ScaledJob (its Jobs are the
	// workload, as a CronJob's are).
	Workload KindName `json:"workload"`
	// scaler is the KEDA object (keda.sh) holding it: a ScaledObject or
	// the ScaledJob itself.
	Scaler KindName `json:"scaler"`
	// lastActiveTime is the scaler's status.lastActiveTime as KEDA wrote
	// it: the last time one of its triggers was active. KEDA scales a
	// ScaledObject's target to zero cooldownPeriod after it. Absent when
	// KEDA has not written one.
	// +optional
	LastActiveTime *metav1.Time `json:"lastActiveTime,omitempty"`
	// offsetsExpireAt is when the group's committed offsets may expire
	// while nothing starts the consumer: offsetExpiry.soonestAt (exact or
	// a lower bound, as offsetExpiry.exact says). Absent when that is not
	// known (the guard did not see the group go Empty and could not read
	// __consumer_offsets); once past, the offsets may already be gone.
	// +optional
	OffsetsExpireAt *metav1.Time `json:"offsetsExpireAt,omitempty"`
}

// ReasonCount is how many violations of one reason a list leaves out.
type ReasonCount struct {
	// reason is the violations' reason, as in violations[].reason
	// (CommittedOffsetExpired, RecoveryHeadroomShorterThanWindow, ...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`
	// count is how many violations of that reason are omitted.
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// WarningFact is what one warning says, as data.
type WarningFact struct {
	// type is the kind of warning: recoveryHeadroom, groupOffsetsExpireIn,
	// groupOffsets, seekRequired, cronJobSchedule, scaledToZero (a
	// selected workload KEDA holds at zero while the group is Empty;
	// subject names the workload and its ScaledObject or ScaledJob)
	// (warnings);
	// recordTimestamps, offsetsTopic, consumerWorkload (configWarnings:
	// a live member of the group runs in a workload the policy does not
	// select, reason NotSelected, or in another namespace, OtherNamespace).
	Type string `json:"type"`
	// reason tells warnings of one type apart, a stable CamelCase word,
	// e.g. PastRetention or ShorterThanWindow (recoveryHeadroom),
	// Suspended or GapReachesRecoveryWindow (cronJobSchedule), HeldByKEDA
	// or HeldByKEDAExpiryUnknown (scaledToZero).
	// +optional
	Reason string `json:"reason,omitempty"`
	// subject is what the warning is about: a partition (orders[3]), a
	// topic, a consumer group, a clause, a CronJob and its schedule, the
	// partitions without a committed offset.
	// +optional
	Subject string `json:"subject,omitempty"`
	// detail is the problem the warning reports, when it reports one (the
	// reason __consumer_offsets was not read, a schedule's parse error).
	// +optional
	Detail string `json:"detail,omitempty"`
	// offset is the committed offset the warning speaks of.
	// +optional
	Offset *int64 `json:"offset,omitempty"`
	// in is how far from checkedAt what the warning foresees happens (the
	// recovery headroom, the time left before an Empty group's offsets
	// expire, also for a workload KEDA holds at zero; negative once past).
	// It moves with the clock.
	// +optional
	In *metav1.Duration `json:"in,omitempty"`
	// span is a duration the warning states that does not move with the
	// clock: a CronJob's longest gap between runs, a topic's
	// retention.ms − recoveryWindow.
	// +optional
	Span *metav1.Duration `json:"span,omitempty"`
	// limit is the duration the warning measures against:
	// recoveryWindow, offsets.retention.minutes, a topic's
	// message.timestamp.before.max.ms.
	// +optional
	Limit *metav1.Duration `json:"limit,omitempty"`
}

// CursorStatus sums the business cursor against the group's committed
// offsets, over the partitions whose cursor lies in the retained log.
type CursorStatus struct {
	// resumeFrom is Cursor or GroupOffsets (spec.cursor.resumeFrom).
	ResumeFrom ResumeFrom `json:"resumeFrom"`
	// replayRecords: records a restart from the group's offsets reads
	// again (the group behind the cursor, seed 002: harmless with an
	// idempotent inbox).
	ReplayRecords int64 `json:"replayRecords"`
	// aheadRecords: records a restart from the group's offsets skips (the
	// group ahead of the cursor, auto commit, seed 003).
	AheadRecords int64 `json:"aheadRecords"`
}

// Offset expiry clocks (OffsetExpiryStatus.clock).
const (
	// ExpiryClockGroupEmpty: the classic group's offsets expire
	// offsets.retention.minutes after it becomes Empty.
	ExpiryClockGroupEmpty = "GroupEmpty"
	// ExpiryClockLastCommit: some offsets expire offsets.retention.minutes
	// after their own last commit (simple, KIP-848 and streams groups,
	// topics no member subscribes to).
	ExpiryClockLastCommit = "LastCommit"
)

// OffsetExpiryStatus says when the group coordinator may delete the
// group's committed offsets.
type OffsetExpiryStatus struct {
	// clock is GroupEmpty or LastCommit.
	// +kubebuilder:validation:Enum=GroupEmpty;LastCommit
	Clock string `json:"clock"`

	// soonestAt is the earliest time an offset of the group may expire:
	// exact when exact is true, else a lower bound. Absent while no clock
	// runs (a classic group with members) or no commit can be dated.
	// +optional
	SoonestAt *metav1.Time `json:"soonestAt,omitempty"`

	// soonestPartition is the offset that expires first, as topic[partition];
	// absent when the whole group expires at once (GroupEmpty).
	// +optional
	SoonestPartition string `json:"soonestPartition,omitempty"`

	// exact: soonestAt comes from times read from __consumer_offsets.
	// +optional
	Exact bool `json:"exact,omitempty"`
}

// TopicRetentionStatus is one topic's retention settings.
type TopicRetentionStatus struct {
	// name of the topic.
	Name string `json:"name"`
	// retentionMs is the topic's retention.ms (-1: infinite).
	// +optional
	RetentionMs *int64 `json:"retentionMs,omitempty"`
	// retentionBytes is the topic's retention.bytes (-1: unbounded).
	// +optional
	RetentionBytes *int64 `json:"retentionBytes,omitempty"`
	// cleanupPolicy is the topic's cleanup.policy (delete, compact or both).
	// +optional
	CleanupPolicy string `json:"cleanupPolicy,omitempty"`
	// deleteRetentionMs is how long a compacting topic keeps tombstones
	// (delete.retention.ms).
	// +optional
	DeleteRetentionMs *int64 `json:"deleteRetentionMs,omitempty"`
	// source says where the values come from when they are not the
	// topic's own overrides, e.g. "broker default log.retention.hours, the
	// strictest of 3 brokers that disagree".
	// +optional
	Source string `json:"source,omitempty"`
}

// PartitionSummary counts partitions by outcome.
type PartitionSummary struct {
	// total partitions checked.
	Total int32 `json:"total"`
	// inRange: committed offset within [log start, log end], or a fresh
	// group on a log that starts at 0.
	InRange int32 `json:"inRange"`
	// expired: committed offset below log start; records were lost.
	Expired int32 `json:"expired"`
	// missing: no committed offset while the log no longer starts at 0.
	Missing int32 `json:"missing"`
	// beyondEnd: committed offset above log end (topic recreated or
	// truncated).
	BeyondEnd int32 `json:"beyondEnd"`
}

// ViolationStatus is one failing fact.
type ViolationStatus struct {
	// reason is a stable CamelCase reason, e.g. CommittedOffsetExpired.
	Reason string `json:"reason"`
	// topic the violation concerns, when it concerns one.
	// +optional
	Topic string `json:"topic,omitempty"`
	// partition the violation concerns, when it concerns one.
	// +optional
	Partition *int32 `json:"partition,omitempty"`
	// message says what is wrong, with the numbers.
	Message string `json:"message"`

	// The numbers the message speaks of, as data (read these, never the
	// message). Each is absent when it does not apply to the violation's
	// reason or the proof does not know it: a partition without a
	// committed offset has no committed, a violation about a topic's
	// configuration has no offsets at all.

	// committed is the group's committed offset on the partition (for a
	// share group, its share-partition start offset).
	// +optional
	Committed *int64 `json:"committed,omitempty"`
	// logStart is the partition's log start offset (low watermark).
	// +optional
	LogStart *int64 `json:"logStart,omitempty"`
	// logEnd is the partition's log end offset (high watermark) when the
	// proof was made; it moves with every write, so a change of logEnd
	// alone does not rewrite the status, except for a position beyond log
	// end (CommittedOffsetBeyondLogEnd, CursorBeyondLogEnd).
	// +optional
	LogEnd *int64 `json:"logEnd,omitempty"`
	// expiredRecords counts the records this violation says were lost to
	// retention before they were read (CommittedOffsetExpired,
	// CursorExpired; ShareRecordsExpired: a lower bound); absent when it
	// counts none.
	// +optional
	ExpiredRecords *int64 `json:"expiredRecords,omitempty"`
	// skippedRecords counts the records the consumers skip when they start
	// a partition without a committed offset at the log end (a reset to
	// latest: ResetToLatestSkipsRecords; OffsetResetMaySkipRecords, when
	// the reset is not known): logEnd minus logStart when proven; absent
	// otherwise.
	// +optional
	SkippedRecords *int64 `json:"skippedRecords,omitempty"`

	// divergedRecords counts the records the group read that the
	// partition's log no longer holds: it was truncated below the group's
	// position and grew back (CommittedEpochDiverged: the committed offset
	// less the end of the leader epoch it was committed in;
	// CommittedOffsetDiverged: of the epoch the guard first saw an
	// epoch-less commit in); absent when it counts none.
	// +optional
	DivergedRecords *int64 `json:"divergedRecords,omitempty"`
	// cursor is the business cursor on the partition (spec.cursor), for
	// CursorInRange violations.
	// +optional
	Cursor *int64 `json:"cursor,omitempty"`
	// expiresAt is when what the violation is about expires:
	// the record at the group's position is deleted by retention
	// (RecoveryHeadroomShorterThanWindow), a tombstone the group has not
	// read may be dropped by the log cleaner, at the earliest
	// (TombstoneHeadroomShorterThanWindow), the committed offset expires
	// (OffsetsExpireBeforeWindow exactly, OffsetsMayExpireBeforeWindow at
	// the earliest, ExplicitOffsetExpiryBeforeWindow), the Empty group's
	// offsets expire (EmptyGroupOffsetsExpireBeforeWindow, at the latest).
	// Absent for other reasons and for an offset whose commit time is
	// unknown.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// ConsumerRetentionPolicy proves that a Kafka consumer group can stay down
// for its recoveryWindow without silently losing records: topic retention
// covers the window, the group's committed offsets outlive it, and every
// committed offset still lies inside the retained log. Rollouts of the
// workloads it selects are refused while the proof fails.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=crp,categories=retentionguard
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.groupID`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.proof.verdict`
// +kubebuilder:printcolumn:name="Proof Age",type=date,JSONPath=`.status.proof.checkedAt`,description="How long ago the brokers were observed for this verdict. An unchanged proof is rewritten every 10 checkIntervals (at least every hour) and confirmed by its heartbeat Lease between: far beyond that means nothing is proving it any more (manager down or uninstalled), the verdict is stale."
// +kubebuilder:printcolumn:name="Headroom",type=string,JSONPath=`.status.proof.recoveryHeadroom`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.spec.recoveryWindow`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConsumerRetentionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the group, its topics, its recovery window, its
	// consumers and its Kafka connection.
	// +required
	Spec ConsumerRetentionPolicySpec `json:"spec"`

	// status is the proof as last observed by the controller.
	// +optional
	Status ConsumerRetentionPolicyStatus `json:"status,omitempty"`
}

// ConsumerRetentionPolicyList is a list of ConsumerRetentionPolicy.
//
// +kubebuilder:object:root=true
type ConsumerRetentionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsumerRetentionPolicy `json:"items"`
}
