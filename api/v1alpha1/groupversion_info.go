// Package v1alpha1 contains the retentionguard.io/v1alpha1 API: the
// ConsumerRetentionPolicy, which declares that a Kafka consumer group must be
// able to stay down for its recovery window without losing records to topic
// retention or to the expiry of its committed offsets.
//
// +kubebuilder:object:generate=true
// +groupName=retentionguard.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "retentionguard.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
