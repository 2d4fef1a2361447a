package resolve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Strimzi publishes, in its Kafka resource's status, each listener's
// bootstrap address and (for TLS listeners) the cluster CA certificates:
//
//	status:
//	  listeners:
//	  - name: tls
//	    bootstrapServers: prod-kafka-bootstrap.kafka.svc:9093
//	    certificates: ["-----BEGIN CERTIFICATE-----..."]
//
// A connection with spec.strimzi reads them, so the platform team names
// the Kafka resource and a listener instead of copying addresses and the
// CA (which Strimzi rotates). The resource is read with the API reader
// (no informer: Strimzi's CRD may be absent) and kept strimziTTL.

// Reasons of spec.strimzi.
const (
	// ReasonStrimziKafkaNotFound: the Kafka resource (or Strimzi's CRD)
	// does not exist.
	ReasonStrimziKafkaNotFound = "StrimziKafkaNotFound"
	// ReasonStrimziListenerNotReady: the Kafka resource's status has no
	// listener of that name, or no bootstrap address for it yet.
	ReasonStrimziListenerNotReady = "StrimziListenerNotReady"
)

// strimziTTL is how long a read of a Strimzi Kafka resource is used: the
// status changes rarely (a CA renewal, a listener added), and a policy
// reconcile should not cost an API call.
const strimziTTL = 30 * time.Second

// strimziVersions are the Kafka resource's API versions, newest first.
var strimziVersions = []string{"v1", "v1beta2"}

// strimziListener is what a connection takes from a listener.
type strimziListener struct {
	servers []string
	ca      []byte
}

// strimziReader reads Strimzi Kafka resources.
type strimziReader struct {
	reader client.Reader
	now    func() time.Time

	mu    sync.Mutex
	cache map[types.NamespacedName]strimziEntry
}

type strimziEntry struct {
	at  time.Time
	obj *unstructured.Unstructured // nil: not found
	err error                      // a SpecProblem, or nil
}

// listener returns the listener's bootstrap servers and CA. A
// *SpecProblem is returned for what a person must fix; any other error is
// transient.
func (s *strimziReader) listener(ctx context.Context, src *rgv1.StrimziSource, defaultNamespace string) (strimziListener, error) {
	key := types.NamespacedName{Namespace: src.KafkaRef.Namespace, Name: src.KafkaRef.Name}
	if key.Namespace == "" {
		key.Namespace = defaultNamespace
	}
	obj, err := s.get(ctx, key)
	if err != nil {
		return strimziListener{}, err
	}
	listeners, _, _ := unstructured.NestedSlice(obj.Object, "status", "listeners")
	var names []string
	for _, l := range listeners {
		m, ok := l.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if name == "" {
			name, _ = m["type"].(string) // Strimzi before 0.20
		}
		names = append(names, name)
		if name != src.Listener {
			continue
		}
		bootstrap, _ := m["bootstrapServers"].(string)
		var out strimziListener
		for _, s := range strings.Split(bootstrap, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out.servers = append(out.servers, s)
			}
		}
		if len(out.servers) == 0 {
			return strimziListener{}, &SpecProblem{Reason: ReasonStrimziListenerNotReady,
				Message: fmt.Sprintf("listener %q of Strimzi Kafka %s has no bootstrapServers in its status yet (is the cluster Ready?)", src.Listener, key)}
		}
		certs, _ := m["certificates"].([]any)
		for _, c := range certs {
			if pem, ok := c.(string); ok {
				out.ca = append(out.ca, []byte(strings.TrimSpace(pem)+"\n")...)
			}
		}
		return out, nil
	}
	slices.Sort(names)
	return strimziListener{}, &SpecProblem{Reason: ReasonStrimziListenerNotReady,
		Message: fmt.Sprintf("Strimzi Kafka %s has no listener %q in its status (listeners: %s)", key, src.Listener, strings.Join(names, ", "))}
}

func (s *strimziReader) get(ctx context.Context, key types.NamespacedName) (*unstructured.Unstructured, error) {
	now := s.now()
	s.mu.Lock()
	if e, ok := s.cache[key]; ok && now.Sub(e.at) < strimziTTL {
		s.mu.Unlock()
		return e.obj, e.err
	}
	s.mu.Unlock()

	var (
		obj     *unstructured.Unstructured
		problem error
		crd     bool
	)
	for _, v := range strimziVersions {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kafka.strimzi.io", Version: v, Kind: "Kafka"})
		err := s.reader.Get(ctx, key, u)
		switch {
		case err == nil:
			obj, crd = u, true
		case meta.IsNoMatchError(err):
			continue
		case apierrors.IsNotFound(err):
			crd = true
		default:
			return nil, fmt.Errorf("reading Strimzi Kafka %s: %w", key, err)
		}
		break
	}
	switch {
	case !crd:
		problem = &SpecProblem{Reason: ReasonStrimziKafkaNotFound,
			Message: fmt.Sprintf("Strimzi's Kafka API (kafka.strimzi.io) is not installed: cannot read Kafka %s", key)}
	case obj == nil:
		problem = &SpecProblem{Reason: ReasonStrimziKafkaNotFound,
			Message: fmt.Sprintf("Strimzi Kafka %s does not exist", key)}
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache = make(map[types.NamespacedName]strimziEntry)
	}
	s.cache[key] = strimziEntry{at: now, obj: obj, err: problem}
	s.mu.Unlock()
	return obj, problem
}
