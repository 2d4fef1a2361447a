package workloads

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Confidence is how sure a match is; a higher value is surer.
type Confidence int

const (
	// Possible: a variable or property whose name contains GROUP is the
	// group ID.
	Possible Confidence = iota + 1
	// Likely: a variable or property the Kafka clients or frameworks read
	// the group ID from is the group ID (wellknown.go).
	Likely
	// Declared: a KEDA ScaledObject or ScaledJob scales the workload on
	// the group's lag (a kafka or apache-kafka trigger whose
	// consumerGroup is the group, on this cluster's bootstrap servers).
	// Surer than any variable's name — the operator wrote the group
	// down for this workload — and below Certain: a trigger declares
	// what KEDA scales on, a live member's address proves what runs
	// now (the application may read another group ID than its trigger
	// names). It holds for a workload parked at zero with no member.
	Declared
	// Certain: a live member of the group connects from a pod of the
	// workload.
	Certain
)

func (c Confidence) String() string {
	switch c {
	case Possible:
		return "Possible"
	case Likely:
		return "Likely"
	case Declared:
		return "Declared"
	case Certain:
		return "Certain"
	}
	return "None"
}

// EvidenceKind says what matched.
type EvidenceKind string

const (
	// EvidenceMemberHost: a live member's client host is a pod's IP.
	EvidenceMemberHost EvidenceKind = "MemberHost"
	// EvidenceEnvironment: a container variable is the group ID.
	EvidenceEnvironment EvidenceKind = "Environment"
	// EvidenceConfigMap: a mounted ConfigMap holds the group ID.
	EvidenceConfigMap EvidenceKind = "ConfigMap"
	// EvidenceScaledObject: a KEDA ScaledObject's Kafka trigger declares
	// the group for the workload it scales.
	EvidenceScaledObject EvidenceKind = "ScaledObject"
	// EvidenceScaledJob: a KEDA ScaledJob's Kafka trigger declares the
	// group for the Jobs it creates.
	EvidenceScaledJob EvidenceKind = "ScaledJob"
)

// Evidence is one fact tying a workload to a group.
type Evidence struct {
	Kind       EvidenceKind
	Confidence Confidence
	// MemberHost: the member's address, client ID, and the pod with that
	// IP.
	Host     netip.Addr
	ClientID string
	Pod      string
	// Environment: the container and variable; ConfigMap and Key when the
	// value comes from a ConfigMap (configMapKeyRef, envFrom).
	Container string
	Variable  string
	// ConfigMap (also Environment from a ConfigMap): the ConfigMap and
	// key; Property when the key is a configuration file holding the group
	// ID under that property.
	ConfigMap string
	Key       string
	Property  string
	// ScaledObject, ScaledJob: the scaler's name, its trigger (type and
	// name), the topics it declares (comma-separated; empty: every topic
	// the group committed on), and what could not be checked. Container,
	// Variable (and ConfigMap, Key) say where a consumerGroupFromEnv
	// value came from.
	Scaler  string
	Trigger string
	Topics  string
	Note    string
}

// String says the evidence in a line, e.g. "member client settle-1 at
// 10.1.2.3 is pod settle-7d9f-abcde", "container app sets
// SPRING_KAFKA_CONSUMER_GROUP_ID to the group ID".
func (e Evidence) String() string {
	switch e.Kind {
	case EvidenceMemberHost:
		return fmt.Sprintf("member %s at %s is pod %s", clientText(e.ClientID), e.Host, e.Pod)
	case EvidenceEnvironment:
		s := fmt.Sprintf("container %s sets %s to the group ID", e.Container, e.Variable)
		if e.Property != "" {
			s = fmt.Sprintf("container %s sets %s with %s the group ID", e.Container, e.Variable, e.Property)
		}
		if e.ConfigMap != "" {
			s += fmt.Sprintf(" (ConfigMap %s key %s)", e.ConfigMap, e.Key)
		}
		return s
	case EvidenceScaledObject, EvidenceScaledJob:
		s := fmt.Sprintf("%s %s scales it on the group's lag (trigger %s", e.Kind, e.Scaler, e.Trigger)
		if e.Variable != "" {
			s += fmt.Sprintf(", consumerGroupFromEnv %s of container %s", e.Variable, e.Container)
			if e.ConfigMap != "" {
				s += fmt.Sprintf(", ConfigMap %s key %s", e.ConfigMap, e.Key)
			}
		}
		if e.Topics != "" {
			s += ", topics " + e.Topics
		}
		s += ")"
		if e.Note != "" {
			s += "; " + e.Note
		}
		return s
	case EvidenceConfigMap:
		if e.Property != "" {
			return fmt.Sprintf("mounted ConfigMap %s key %s sets %s to the group ID", e.ConfigMap, e.Key, e.Property)
		}
		return fmt.Sprintf("mounted ConfigMap %s key %s is the group ID", e.ConfigMap, e.Key)
	}
	return string(e.Kind)
}

func clientText(id string) string {
	if id == "" {
		return "(no client ID)"
	}
	return "client " + id
}

// Match is one workload that consumes a group, by the evidence found.
type Match struct {
	Workload   Ref
	Confidence Confidence
	// Parked: the workload runs no pods by its spec (0 replicas,
	// suspended): only its configuration can match.
	Parked   bool
	Evidence []Evidence
}

// Summary says the match in a line: its confidence, whether the workload
// is parked, and its strongest evidence (and how many more).
func (m Match) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (namespace %s): %s", m.Confidence, m.Workload, m.Workload.Namespace, m.Evidence[0])
	if n := len(m.Evidence) - 1; n > 0 {
		fmt.Fprintf(&b, ", and %d more", n)
	}
	if m.Parked && m.Confidence < Certain {
		b.WriteString("; parked (no pods by its spec): matched by its configuration only")
	}
	return b.String()
}

// GroupMatch is what the matcher found for one group.
type GroupMatch struct {
	Group string
	// Workloads, surest first, then by namespace, kind and name.
	Workloads []Match
	// Unplaced are live members whose host is no pod of a workload in the
	// snapshot: consumers outside the namespaces read or the cluster,
	// behind NAT (the broker sees a node's or a gateway's address), bare
	// pods, or in host-network pods.
	Unplaced []proof.GroupMember
}

// Index is a snapshot prepared for matching many groups.
type Index struct {
	workloads []Workload
	byRef     map[Ref]int
	// podsByIP: pods with an IP of their own (not host-network, not
	// terminated), by IP.
	podsByIP map[netip.Addr][]podAt
	// byValue: each candidate value, the workloads that set it.
	byValue map[string][]valueAt
	// declared: each group a KEDA trigger declares, the workloads it
	// scales; unresolved: the Kafka triggers that declare none.
	declared   map[string][]valueAt
	unresolved []Unresolved
	// lastActive: each scaler's status.lastActiveTime, where KEDA wrote
	// one.
	lastActive map[Ref]time.Time
}

type podAt struct {
	name     string
	workload int // index in workloads; -1 when the pod resolves to none
}

type valueAt struct {
	workload int
	evidence Evidence
}

// NewIndex prepares snap: pods resolved through their owners to the
// workloads, and every workload's configuration read for candidate
// values. A Job owned by a CronJob of the snapshot is matched as the
// CronJob.
func NewIndex(snap Snapshot) *Index {
	idx := &Index{
		byRef:      make(map[Ref]int, len(snap.Workloads)),
		podsByIP:   make(map[netip.Addr][]podAt),
		byValue:    make(map[string][]valueAt),
		declared:   make(map[string][]valueAt),
		lastActive: make(map[Ref]time.Time),
	}
	owners := make(map[Ref]*Owner, len(snap.Owned))
	for _, o := range snap.Owned {
		owners[o.Ref] = o.Owner
	}
	for _, w := range snap.Workloads {
		if w.Owner != nil {
			owners[w.Ref] = w.Owner
		}
	}
	present := make(map[Ref]bool, len(snap.Workloads))
	for _, w := range snap.Workloads {
		present[w.Ref] = true
	}
	for _, w := range snap.Workloads {
		if w.Ref.Kind == Job && w.Owner != nil && jobOwner(w.Owner.Kind) && present[Ref{w.Owner.Kind, w.Ref.Namespace, w.Owner.Name}] {
			continue // matched as its CronJob or ScaledJob
		}
		idx.byRef[w.Ref] = len(idx.workloads)
		idx.workloads = append(idx.workloads, w)
	}
	cms := make(configMaps, len(snap.ConfigMaps))
	for _, cm := range snap.ConfigMaps {
		cms[[2]string{cm.Namespace, cm.Name}] = cm.Data
	}
	for i := range idx.workloads {
		for _, c := range candidates(&idx.workloads[i], cms) {
			if c.value != "" {
				idx.byValue[c.value] = append(idx.byValue[c.value], valueAt{workload: i, evidence: c.evidence})
			}
		}
	}
	idx.declare(snap.Scalers, snap.Servers, cms)
	for _, p := range snap.Pods {
		if p.HostNetwork || p.Terminated {
			continue
		}
		at := podAt{name: p.Name, workload: idx.resolve(p, owners)}
		for _, ip := range p.IPs {
			if ip.IsValid() {
				ip = ip.Unmap()
				idx.podsByIP[ip] = append(idx.podsByIP[ip], at)
			}
		}
	}
	return idx
}

// resolve follows a pod's controllers up to the workload the guard
// protects: Deployment or Rollout through a ReplicaSet, StatefulSet,
// CronJob through a Job, a Job. -1 when it reaches none in the snapshot.
func (idx *Index) resolve(p Pod, owners map[Ref]*Owner) int {
	o := p.Owner
	for range 4 { // pod → ReplicaSet/Job → Deployment/Rollout/CronJob
		if o == nil {
			return -1
		}
		ref := Ref{Kind: o.Kind, Namespace: p.Namespace, Name: o.Name}
		up, hasUp := owners[ref]
		if ref.Kind == Job && hasUp && up != nil && jobOwner(up.Kind) {
			if i, ok := idx.byRef[Ref{up.Kind, p.Namespace, up.Name}]; ok {
				return i
			}
		}
		if i, ok := idx.byRef[ref]; ok {
			return i
		}
		if !hasUp {
			return -1
		}
		o = up
	}
	return -1
}

// Workload returns the snapshot's workload named by ref.
func (idx *Index) Workload(ref Ref) (*Workload, bool) {
	i, ok := idx.byRef[ref]
	if !ok {
		return nil, false
	}
	return &idx.workloads[i], true
}

// Match finds the workloads that consume group: those with a pod at a
// live member's host (Certain), those a KEDA trigger scales on the
// group's lag (Declared), and those configured with the group ID
// (Likely or Possible, see wellknown.go).
func (idx *Index) Match(group string, members []proof.GroupMember) GroupMatch {
	out := GroupMatch{Group: group}
	found := make(map[int]*Match)
	add := func(i int, ev Evidence) {
		m := found[i]
		if m == nil {
			w := &idx.workloads[i]
			m = &Match{Workload: w.Ref, Parked: w.Parked()}
			found[i] = m
		}
		if !slices.Contains(m.Evidence, ev) {
			m.Evidence = append(m.Evidence, ev)
		}
		m.Confidence = max(m.Confidence, ev.Confidence)
	}
	for _, mem := range members {
		placed := false
		for _, p := range idx.podsByIP[mem.Host] {
			if p.workload < 0 {
				continue
			}
			placed = true
			add(p.workload, Evidence{Kind: EvidenceMemberHost, Confidence: Certain, Host: mem.Host, ClientID: mem.ClientID, Pod: p.name})
		}
		if !placed {
			out.Unplaced = append(out.Unplaced, mem)
		}
	}
	if group != "" {
		for _, v := range idx.byValue[group] {
			add(v.workload, v.evidence)
		}
		for _, v := range idx.declared[group] {
			add(v.workload, v.evidence)
		}
	}
	for _, m := range found {
		slices.SortStableFunc(m.Evidence, func(a, b Evidence) int { return cmp.Compare(b.Confidence, a.Confidence) })
		out.Workloads = append(out.Workloads, *m)
	}
	slices.SortFunc(out.Workloads, func(a, b Match) int {
		return cmp.Or(
			cmp.Compare(b.Confidence, a.Confidence),
			cmp.Compare(a.Workload.Namespace, b.Workload.Namespace),
			cmp.Compare(a.Workload.Kind, b.Workload.Kind),
			cmp.Compare(a.Workload.Name, b.Workload.Name),
		)
	})
	return out
}

// jobOwner: a Job this kind owns is matched as its owner.
func jobOwner(k Kind) bool { return k == CronJob || k == ScaledJob }
