package controllers

// The manager's permissions, generated into config/rbac/role.yaml by
// controller-gen (`make manifests`).
//
// +kubebuilder:rbac:groups=retentionguard.io,resources=consumerretentionpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=retentionguard.io,resources=consumerretentionpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=retentionguard.io,resources=clusterkafkaconnections;kafkaconnections,verbs=get;list;watch
// +kubebuilder:rbac:groups=retentionguard.io,resources=clusterkafkaconnections/status;kafkaconnections/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=kafka.strimzi.io,resources=kafkas,verbs=get
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get;list;watch
// Mapping unguarded groups to the workloads that consume them
// (internal/workloadread, uncached): pods by IP, the ReplicaSets and Jobs
// that own them, the workloads (ConfigMaps and CronJobs as above).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=argoproj.io,resources=rollouts,verbs=get;list
// KEDA's ScaledObjects and ScaledJobs, where KEDA is installed: their
// kafka triggers declare a group's consumer (TriggerAuthentications are
// never read).
// +kubebuilder:rbac:groups=keda.sh,resources=scaledobjects;scaledjobs,verbs=get;list
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
