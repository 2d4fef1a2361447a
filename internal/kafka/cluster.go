package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// ClusterRequest is what one pass over a connection serves: targets (the
// policies' groups and topics) and, optionally, the discovery of every
// group on the cluster.
type ClusterRequest struct {
	Targets  []Target
	Discover *Discovery
	// Deliver, when set, is given each target's observation (by its index
	// in Targets) as soon as it is complete, from any goroutine: the
	// targets without a business cursor once Kafka has answered, a target
	// with one after its cursor (and the log end read after it), so one
	// tenant's slow database never holds back its neighbours. An Observed
	// builds its observation when read, from the pass it keeps; a
	// ClusterObservation then carries no Observations (each went here).
	Deliver func(i int, obs Observed)
}

// ClusterObservation is one pass's answer: an observation per target, what
// the pass learned of the cluster itself, and the groups discovery found.
type ClusterObservation struct {
	ObservedAt time.Time
	// ClusterID is the cluster ID the brokers report (Metadata v2+), as
	// each observation carries it; empty when unreachable or unreported.
	ClusterID string
	// Observations, one per request target, in order; nil when the request
	// had Deliver (every target's went there).
	Observations []proof.Observation
	// Brokers are the node ids metadata listed, sorted; empty when the
	// cluster could not be reached.
	Brokers []int32
	// BrokerOffsetsRetention is each broker's offsets.retention.minutes
	// (Present=false when it could not be read).
	BrokerOffsetsRetention map[int32]proof.ConfigValue
	// OffsetsRetentionMinutes is the smallest, as the proof uses it.
	OffsetsRetentionMinutes proof.ConfigValue
	// Failures concern the whole connection (unreachable, authentication,
	// broker configs); the targets' observations carry them too.
	Failures []proof.Failure
	// Discovered are the groups discovery found, sorted by id; nil when
	// discovery was not asked. DiscoveryFailures say what it missed (a
	// broker that did not answer ListGroups).
	Discovered        []DiscoveredGroup
	DiscoveryFailures []proof.Failure
}

// ObserveCluster observes req's targets, and discovers groups when asked,
// in one pass over conn. Like Observe it never returns an error: what
// could not be read is a failure where it belongs.
func (o *Observer) ObserveCluster(ctx context.Context, conn Connection, req ClusterRequest) ClusterObservation {
	now := o.opts.now()
	pc, err := o.acquire(conn)
	if err != nil {
		f := failure{global: true, Failure: proof.Failure{
			Reason:    reasonForConfigError(conn, err),
			Partition: -1,
			Message:   conn.redact(fmt.Sprintf("cannot use %s: %s", conn, err)),
		}}
		p := &pass{o: o, conn: conn, targets: req.Targets, now: now, cursors: make([]cursorRead, len(req.Targets))}
		p.fail(f)
		// Not answered: every target is delivered as it is, none waits for
		// a cursor.
		return p.clusterObservation(req, p.observeTargets(ctx, req.Deliver))
	}
	defer o.release(pc)

	p := newPass(o, pc.cl, conn, req.Targets, now)
	p.sasl = pc.sasl
	p.discover = req.Discover
	p.run(ctx)
	return p.clusterObservation(req, p.observeTargets(ctx, req.Deliver))
}

// Observed is one target's share of a pass: its proof.Observation, built
// when read (Observation) from the pass it keeps. A cache of a pass's
// targets then holds what the pass read once — a partition's offsets and
// times in the pass's maps, about 400 bytes — rather than an observation
// per target, about 650 bytes a partition (BenchmarkPassKeptForItsTargets):
// at 20,000 policies those observations, waiting for reconciles the status
// writes pace, were the first proofs' peak (docs/benchmarks.md, "Two
// shards of 10,000"). Nothing writes a pass once it has delivered, so an
// Observed may be read from any goroutine, any number of times: each read
// builds an equal observation, which the reader owns (its slices are its
// own, or shared read-only with other reads, as a built observation's
// always were). The zero Observed reads as the zero Observation.
type Observed struct {
	build func() proof.Observation
}

// ObservedBy is an Observed that build reads: it must return equal
// observations on every call, from any goroutine.
func ObservedBy(build func() proof.Observation) Observed { return Observed{build: build} }

// ObservedAs is an Observed of an observation already built (a one-group
// live check's).
func ObservedAs(obs proof.Observation) Observed {
	return Observed{build: func() proof.Observation { return obs }}
}

// observed is target i's Observed of pass p.
func (p *pass) observed(i int) Observed {
	return Observed{build: func() proof.Observation { return p.observation(i, p.targets[i]) }}
}

// Observation builds the target's observation.
func (o Observed) Observation() proof.Observation {
	if o.build == nil {
		return proof.Observation{}
	}
	return o.build()
}

func (p *pass) clusterObservation(req ClusterRequest, observed []Observed) ClusterObservation {
	var observations []proof.Observation
	if req.Deliver == nil {
		observations = make([]proof.Observation, len(observed))
		for i, o := range observed {
			observations[i] = o.Observation()
		}
	}
	out := ClusterObservation{
		ObservedAt:              p.now,
		ClusterID:               p.clusterID,
		Observations:            observations,
		Brokers:                 slices.Clone(p.brokers),
		BrokerOffsetsRetention:  make(map[int32]proof.ConfigValue, len(p.brokers)),
		OffsetsRetentionMinutes: p.offsetsRetention,
	}
	for _, id := range p.brokers {
		out.BrokerOffsetsRetention[id] = p.brokerRetention[id]
	}
	p.mu.Lock()
	for _, f := range p.failures {
		switch {
		case f.global:
			out.Failures = append(out.Failures, f.Failure)
		case f.discovery:
			out.DiscoveryFailures = append(out.DiscoveryFailures, f.Failure)
		}
	}
	p.mu.Unlock()
	if req.Discover == nil {
		return out
	}
	out.Discovered = make([]DiscoveredGroup, 0, len(p.discovered))
	for _, d := range p.discovered {
		dg := DiscoveredGroup{
			Group: d.group, State: d.state, ProtocolType: d.protocolType, Type: d.typ,
			Topics: slices.Clone(d.topics), Failure: d.failure,
		}
		if len(d.topics) > 0 {
			// -1: not a target, no cursor.
			dg.Observation = p.observation(-1, Target{Group: d.group, Topics: d.topics, ReadOffsetsTopic: req.Discover.ReadOffsetsTopic,
				RecoveryWindow: req.Discover.RecoveryWindow})
		} else {
			// Not described (no topics to read): as ListGroups said.
			dg.Observation = p.observation(-1, Target{Group: d.group})
			dg.Observation.Group.State, dg.Observation.Group.Protocol, dg.Observation.Group.ProtocolType = d.state, d.typ, d.protocolType
		}
		if d.failure != nil {
			dg.Observation.Failures = append(dg.Observation.Failures, *d.failure)
		}
		out.Discovered = append(out.Discovered, dg)
	}
	return out
}
