package controllers

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// A connection's status is computed, like a policy's, by a pure function of
// the current status and what one reconcile gathered.

// Reasons of a connection's Ready condition, besides the spec problems
// (SecretNotFound, StrimziKafkaNotFound, ...) and the observer's
// (BrokerUnreachable, AuthenticationFailed, AuthorizationFailed).
const (
	// ReasonConnected: the cluster answered the last observation.
	ReasonConnected = "Connected"
	// ReasonObservationPending: the first observation of the current spec
	// is on its way (Reconciling).
	ReasonObservationPending = "ObservationPending"
	// ReasonInvalidDiscoveryPattern: spec.discovery.groupPattern is not a
	// regular expression.
	ReasonInvalidDiscoveryPattern = "InvalidDiscoveryPattern"
)

// maxUnguardedGroups is how many unguarded groups status lists.
const maxUnguardedGroups = 50

// connectionInput is what one connection reconcile learned.
type connectionInput struct {
	Generation int64
	Now        time.Time
	// Servers are the bootstrap servers in use (resolved).
	Servers []string
	// Policies are the policies naming the connection; their group ids
	// are guarded.
	Policies []*rgv1.ConsumerRetentionPolicy
	// SameCluster are the policies whose last proof was on the cluster
	// this connection observed (the same cluster ID), however they name
	// it: their group ids are guarded too.
	SameCluster []*rgv1.ConsumerRetentionPolicy
	// Problem: the spec cannot be used (Stalled).
	Problem *SpecProblem
	// Cluster: a fresh observation (nil while pending).
	Cluster *kafka.ClusterObservation
	// Discovery, when enabled, judges the discovered groups.
	Discovery *proof.DiscoveryPolicy
	// HandledRequestedAt is the requestedAt value this reconcile answers.
	HandledRequestedAt string
	// Consumers, when the workloads were read, maps the unguarded groups
	// to the workloads that consume them; nil otherwise.
	Consumers *workloads.Index
}

// connectionOutcome is the next status and the judgements of the
// unguarded groups (for metrics), nil while pending.
type connectionOutcome struct {
	Status    rgv1.KafkaConnectionStatus
	Unguarded []proof.Judgement
	Observed  bool
}

// guardedGroups are the group ids some policy guards.
func guardedGroups(lists ...[]*rgv1.ConsumerRetentionPolicy) map[string]bool {
	guarded := map[string]bool{}
	for _, ps := range lists {
		for _, p := range ps {
			guarded[p.Spec.GroupID] = true
		}
	}
	return guarded
}

// computeConnectionStatus returns the connection's next status: a spec
// problem (Stalled, Ready False with its reason), an observation
// (observedConnectionStatus), or neither: while the status holds an
// observation of this generation nothing changes, else the first
// observation is pending (Reconciling, Ready Unknown).
func computeConnectionStatus(cur rgv1.KafkaConnectionStatus, in connectionInput) connectionOutcome {
	st := *cur.DeepCopy()
	now := metav1.NewTime(in.Now.UTC().Truncate(time.Second))
	st.Policies = int32(len(in.Policies))
	if in.HandledRequestedAt != "" && (in.Problem != nil || in.Cluster != nil) {
		st.LastHandledRequestedAt = in.HandledRequestedAt
	}
	switch {
	case in.Problem != nil:
		setCondition(&st.Conditions, metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionFalse,
			Reason: in.Problem.Reason, Message: in.Problem.Message}, in.Generation, now)
		setCondition(&st.Conditions, metav1.Condition{Type: ConditionStalled, Status: metav1.ConditionTrue,
			Reason: in.Problem.Reason, Message: in.Problem.Message}, in.Generation, now)
		meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
		st.ObservedGeneration = in.Generation
		return connectionOutcome{Status: st}

	case in.Cluster != nil:
		return observedConnectionStatus(st, in, now)
	}

	if st.LastObservedAt != nil && cur.ObservedGeneration == in.Generation &&
		!meta.IsStatusConditionTrue(cur.Conditions, ConditionStalled) {
		return connectionOutcome{Status: st}
	}
	msg := "observing the cluster for the first time at generation " + strconv.FormatInt(in.Generation, 10)
	setCondition(&st.Conditions, metav1.Condition{Type: ConditionReconciling, Status: metav1.ConditionTrue,
		Reason: ReasonObservationPending, Message: msg}, in.Generation, now)
	setCondition(&st.Conditions, metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionUnknown,
		Reason: ReasonObservationPending, Message: msg}, in.Generation, now)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	return connectionOutcome{Status: st}
}

// observedConnectionStatus is st after a fresh observation of the cluster:
// its brokers and offsets retention, Ready (Connected, or the first
// failure), and with discovery the unguarded groups judged.
func observedConnectionStatus(st rgv1.KafkaConnectionStatus, in connectionInput, now metav1.Time) connectionOutcome {
	co := in.Cluster
	st.ObservedGeneration = in.Generation
	st.BootstrapServers = slices.Clone(in.Servers)
	at := metav1.NewTime(co.ObservedAt.UTC().Truncate(time.Second))
	st.LastObservedAt = &at
	st.Brokers = int32(len(co.Brokers))
	st.BrokerOffsetsRetention = nil
	for _, id := range co.Brokers {
		st.BrokerOffsetsRetention = append(st.BrokerOffsetsRetention,
			rgv1.BrokerOffsetsRetention{Broker: id, Minutes: proofstatus.ConfigInt(co.BrokerOffsetsRetention[id])})
	}
	st.OffsetsRetentionMinutes = proofstatus.ConfigInt(co.OffsetsRetentionMinutes)
	meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)

	ready := metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionTrue, Reason: ReasonConnected}
	if len(co.Failures) > 0 {
		f := co.Failures[0]
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, f.Reason, f.Message
		if len(co.Failures) > 1 {
			ready.Message += fmt.Sprintf(" (and %s)", proof.Plural(int64(len(co.Failures)-1), "more failure"))
		}
	} else {
		ready.Message = fmt.Sprintf("%s answered: %s", strings.Join(in.Servers, ","), proof.Plural(int64(len(co.Brokers)), "broker"))
		if st.OffsetsRetentionMinutes != nil {
			ready.Message += fmt.Sprintf(", offsets.retention.minutes %d (%s)", *st.OffsetsRetentionMinutes,
				proof.FormatDuration(time.Duration(*st.OffsetsRetentionMinutes)*time.Minute))
		}
		ready.Message += fmt.Sprintf(", %s", proof.Plural(int64(len(in.Policies)), "policy"))
	}
	out := connectionOutcome{Observed: true}
	switch {
	case in.Discovery != nil && len(co.Failures) == 0:
		out.Unguarded = discoveredStatus(&st, in)
		v := st.UnguardedVerdicts
		ready.Message += fmt.Sprintf("; discovery: %s, %d unguarded (%d Violated, %d Unknown)",
			proof.Plural(int64(len(co.Discovered)), "group"), len(out.Unguarded), v.Violated, v.Unknown)
		if n := len(co.DiscoveryFailures); n > 0 {
			ready.Message += fmt.Sprintf("; discovery incomplete: %s", co.DiscoveryFailures[0].Message)
		}
	case in.Discovery == nil:
		st.DiscoveredGroups, st.UnguardedGroupCount, st.UnguardedVerdicts, st.UnguardedGroups = 0, 0, nil, nil
		st.UnresolvedScalers = nil
	}
	setCondition(&st.Conditions, ready, in.Generation, now)
	out.Status = st
	return out
}

// discoveredStatus judges the groups discovery found that no policy
// guards, sets their counts, the first maxUnguardedGroups of them (worst
// first, with their workloads) and the unresolved KEDA triggers in st, and
// returns the judgements.
func discoveredStatus(st *rgv1.KafkaConnectionStatus, in connectionInput) []proof.Judgement {
	co := in.Cluster
	guarded := guardedGroups(in.Policies, in.SameCluster)
	counts := rgv1.GroupVerdictCounts{}
	members := make(map[string][]proof.GroupMember, len(co.Discovered))
	var unguarded []proof.Judgement
	for _, d := range co.Discovered {
		if guarded[d.Group] {
			continue
		}
		members[d.Group] = d.Observation.Group.Members
		j := proof.JudgeGroup(d.Observation, d.Topics, *in.Discovery, co.ObservedAt)
		unguarded = append(unguarded, j)
		switch j.Verdict {
		case proof.Proven:
			counts.Proven++
		case proof.Violated:
			counts.Violated++
		default:
			counts.Unknown++
		}
	}
	proof.SortWorstFirst(unguarded)
	st.DiscoveredGroups = int32(len(co.Discovered))
	st.UnguardedGroupCount = int32(len(unguarded))
	st.UnguardedVerdicts = &counts
	st.UnguardedGroups = nil
	for i, j := range unguarded {
		if i == maxUnguardedGroups {
			break
		}
		g := unguardedGroup(j)
		if in.Consumers != nil {
			g.Workloads = in.Consumers.Match(j.Group, members[j.Group]).StatusWorkloads(maxGroupWorkloads)
		}
		st.UnguardedGroups = append(st.UnguardedGroups, g)
	}
	st.UnresolvedScalers = nil
	if in.Consumers != nil {
		st.UnresolvedScalers = unresolvedScalers(in.Consumers.Unresolved())
	}
	return unguarded
}

func unguardedGroup(j proof.Judgement) rgv1.UnguardedGroup {
	g := rgv1.UnguardedGroup{
		Group: j.Group, Verdict: rgv1.Verdict(j.Verdict), State: j.State, ExpiredRecords: j.ExpiredRecords,
	}
	if j.Verdict != proof.Proven {
		g.Reason = j.Reason
	}
	g.Topics = j.Topics
	if len(g.Topics) > 20 {
		g.Topics = g.Topics[:20]
	}
	if j.HasHeadroom {
		g.RecoveryHeadroom = &metav1.Duration{Duration: j.RecoveryHeadroom.Round(time.Second)}
	}
	return g
}

// maxGroupWorkloads is how many workloads an unguarded group lists.
const maxGroupWorkloads = 10

// maxUnresolvedScalers bounds status.unresolvedScalers.
const maxUnresolvedScalers = 20

// unresolvedScalers lists the KEDA triggers that map no group on this
// cluster for a reason a person fixes (not another cluster's servers),
// sorted, at most maxUnresolvedScalers.
func unresolvedScalers(us []workloads.Unresolved) []rgv1.UnresolvedScaler {
	var out []rgv1.UnresolvedScaler
	for _, u := range us {
		if u.OtherCluster {
			continue
		}
		out = append(out, rgv1.UnresolvedScaler{Kind: string(u.Scaler.Kind), Namespace: u.Scaler.Namespace, Name: u.Scaler.Name,
			Trigger: proof.Truncate(u.Trigger, 300), Message: proof.Truncate(u.Reason, 1024)})
	}
	slices.SortFunc(out, func(a, b rgv1.UnresolvedScaler) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Trigger, b.Trigger), strings.Compare(a.Message, b.Message))
	})
	out = slices.CompactFunc(out, func(a, b rgv1.UnresolvedScaler) bool { return a == b })
	if len(out) > maxUnresolvedScalers {
		out = out[:maxUnresolvedScalers]
	}
	return out
}
