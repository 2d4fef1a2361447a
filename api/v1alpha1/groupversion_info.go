// Package v1alpha1 contains the retentionguard.io/v1alpha1 API: the
// ConsumerRetentionPolicy, which declares that a Kafka consumer group must be
// able to stay down for its recovery window without losing records to topic
// retention or to the expiry of its committed offsets; and the
// ClusterKafkaConnection and KafkaConnection, which declare a Kafka cluster
// once for the policies that name it.
//
// The package depends only on the standard library and k8s.io/apimachinery,
// so other projects can import it cheaply.
//
// +kubebuilder:object:generate=true
// +groupName=retentionguard.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "retentionguard.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ConsumerRetentionPolicy{}, &ConsumerRetentionPolicyList{},
		&ClusterKafkaConnection{}, &ClusterKafkaConnectionList{},
		&KafkaConnection{}, &KafkaConnectionList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
