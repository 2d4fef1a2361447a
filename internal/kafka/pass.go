package kafka

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/groupmemory"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// pass is one observation of one connection for a set of targets. Every
// request is sent once for the union of what the targets need, batched the
// way Kafka allows (per broker, per partition leader, per group
// coordinator), then each target takes its share of the answers and of the
// failures.
type pass struct {
	o       *Observer
	cl      *kgo.Client
	sasl    *saslWatch
	conn    Connection
	targets []Target
	now     time.Time

	mu       sync.Mutex // guards failures and the maps the phases fill
	failures []failure

	// From metadata.
	clusterID string
	brokers   []int32
	topics    map[string]*topicState
	topicIDs  map[[16]byte]string

	// From DescribeConfigs.
	offsetsRetention proof.ConfigValue
	brokerRetention  map[int32]proof.ConfigValue
	// migrationPossible: a broker would convert a classic group to a
	// consumer group (configs.go).
	migrationPossible bool
	// features: each broker's ApiVersions answer (features.go), read once.
	apiVersionsOnce sync.Once
	features        map[int32]brokerFeatures
	// transactions: the brokers' transaction timeouts (txnconfigs.go).
	transactions proof.TransactionConfig

	// Discovery (discovery.go), when asked.
	discover   *Discovery
	discovered []discoveredGroup

	// Per group.
	groups      []string            // unique, sorted
	groupTopics map[string][]string // union of the group's targets' topics
	groupInfo   map[string]*groupState
	recall      map[string]groupmemory.Recall

	// From __consumer_offsets, for targets that ask (offsetstopic.go).
	offsetsTopic offsetsTopicResult

	// Where the leader epochs of committed offsets end (epochs.go).
	epochEnds map[epochAt]epochEnd

	// Business cursors, by target index (cursor.go).
	cursors []cursorRead
	// answered: metadata was read and the offsets asked (run got past
	// metadata); cursors are read only then.
	answered bool

	// ListOffsets by timestamp for undated committed records (unread.go).
	byTimestamp map[timestampTarget]offsetForTimestamp
}

type topicState struct {
	name     string
	id       [16]byte
	answered bool // metadata answered for it without error

	retentionMs              proof.ConfigValue
	retentionBytes           proof.ConfigValue
	cleanupPolicy            proof.ConfigValue
	deleteRetentionMs        proof.ConfigValue
	timestampType            proof.ConfigValue
	timestampBeforeMaxMs     proof.ConfigValue
	timestampAfterMaxMs      proof.ConfigValue
	timestampDifferenceMaxMs proof.ConfigValue
	remoteStorageEnable      proof.ConfigValue

	partitions map[int32]*partitionState
}

type partitionState struct {
	leader   int32
	usable   bool  // metadata gave it a leader and no error
	logStart int64 // -1 until read
	logEnd   int64 // -1 until read
	// endEpoch is the leader epoch ListOffsets answered with the log end
	// (v4+; -1 when not said): the group memory's witness
	// (internal/groupmemory, Witness).
	endEpoch int32
}

type groupState struct {
	stateKnown        bool
	state             string
	protocol          string
	protocolType      string
	subscribed        []string
	subscriptionKnown bool
	members           []proof.GroupMember
	// migrationPossible: the brokers would convert this classic group to
	// a consumer group (set once configs and kinds are read).
	migrationPossible bool
	// committed holds the offsets read (NoOffset for none); a partition
	// whose offset could not be read is absent and has a failure.
	committed map[topicPartition]int64
	// epochs: the leader epoch a committed offset carries (OffsetFetch
	// v5+), for the offsets that carry one.
	epochs map[topicPartition]int32
	// witnesses: for offsets committed without an epoch, the epoch the
	// group memory first saw them in (epochs.go); made when first needed.
	witnesses  map[topicPartition]groupmemory.Witness
	timestamps map[topicPartition]time.Time // of the record at the committed offset
	preceding  map[topicPartition]time.Time // of the records before it (dates the commit)
	// precedingMarker: of the transaction markers before it (dates the
	// commit by the leader's clock); made when first needed.
	precedingMarker map[topicPartition]time.Time
	// rewind: of the record at the end of the committed offset's leader
	// epoch, where a diverged consumer rewinds to (rewind.go); made when
	// first needed.
	rewind map[topicPartition]time.Time
	// tombstones: what the fetch at a lagging committed offset of a
	// compacting topic showed of its tombstones (timestamps.go).
	tombstones map[topicPartition]*proof.TombstoneScan
	// unread: why the record at a lagging committed offset was not dated
	// (proof.Timestamp…; unread.go).
	unread map[topicPartition]string
	// shareLag: a share group's unacknowledged records per partition
	// (DescribeShareGroupOffsets v1+).
	shareLag map[topicPartition]int64
	// shareReset: a share group's share.auto.offset.reset, and why it was
	// not read (sharereset.go).
	shareReset        proof.ConfigValue
	shareResetProblem string
	// shareNewAtZero: the brokers start a share group's new partitions of
	// a known topic at 0 (sharereset.go).
	shareNewAtZero bool
}

// observation is the group's kind as the proof sees it.
func (gs *groupState) observation() proof.GroupObservation {
	if !gs.stateKnown {
		return proof.GroupObservation{}
	}
	return proof.GroupObservation{
		State: gs.state, Protocol: gs.protocol, ProtocolType: gs.protocolType,
		Subscribed: gs.subscribed, SubscriptionKnown: gs.subscriptionKnown,
		MigrationPossible:    gs.protocol == proof.ProtocolClassic && gs.migrationPossible,
		Members:              slices.Clone(gs.members),
		ShareAutoOffsetReset: gs.shareReset, ShareAutoOffsetResetProblem: gs.shareResetProblem,
		ShareNewPartitionsStartAtZero: gs.shareNewAtZero,
	}
}

func newPass(o *Observer, cl *kgo.Client, conn Connection, targets []Target, now time.Time) *pass {
	p := &pass{
		o:           o,
		cl:          cl,
		conn:        conn,
		targets:     targets,
		now:         now,
		topics:      make(map[string]*topicState),
		topicIDs:    make(map[[16]byte]string),
		groupTopics: make(map[string][]string),
		groupInfo:   make(map[string]*groupState),
		recall:      make(map[string]groupmemory.Recall),
		epochEnds:   make(map[epochAt]epochEnd),
		cursors:     make([]cursorRead, len(targets)),
	}
	for _, t := range targets {
		p.addTarget(t)
	}
	p.sortGroups()
	return p
}

// addTarget adds a target's group and topics to what the pass reads.
func (p *pass) addTarget(t Target) {
	if _, ok := p.groupInfo[t.Group]; !ok {
		p.groups = append(p.groups, t.Group)
		p.groupInfo[t.Group] = &groupState{
			committed:  make(map[topicPartition]int64),
			epochs:     make(map[topicPartition]int32),
			timestamps: make(map[topicPartition]time.Time),
			preceding:  make(map[topicPartition]time.Time),
			shareLag:   make(map[topicPartition]int64),
		}
	}
	for _, name := range t.Topics {
		if _, ok := p.topics[name]; !ok {
			p.topics[name] = &topicState{name: name, partitions: make(map[int32]*partitionState)}
		}
		if !slices.Contains(p.groupTopics[t.Group], name) {
			p.groupTopics[t.Group] = append(p.groupTopics[t.Group], name)
		}
	}
}

func (p *pass) sortGroups() {
	slices.Sort(p.groups)
	p.groups = slices.Compact(p.groups)
	for g := range p.groupTopics {
		slices.Sort(p.groupTopics[g])
	}
}

// fail records a failure, its message redacted.
func (p *pass) fail(f failure) {
	f.Message = p.conn.redact(f.Message)
	p.mu.Lock()
	p.failures = append(p.failures, f)
	p.mu.Unlock()
}

// failErr records err as a failure of api for the given scope.
func (p *pass) failErr(api, group, topic string, partition int32, what string, err error) {
	p.fail(errFailure(api, group, topic, partition, what, err))
}

// errFailure is err as a failure of api for the given scope.
func errFailure(api, group, topic string, partition int32, what string, err error) failure {
	return failure{group: group, Failure: proof.Failure{
		Reason:    reasonForError(err),
		API:       api,
		Topic:     topic,
		Partition: partition,
		Message:   fmt.Sprintf("%s: %s", what, describeError(err)),
	}}
}

func (p *pass) run(ctx context.Context) {
	start := time.Now()
	if p.discover != nil && !p.discoverGroups(ctx) {
		p.log(start)
		return
	}
	if !p.metadata(ctx) {
		p.log(start)
		return
	}

	// Configs and group states are read beside the offsets. The offsets are
	// read in order: log start, then committed offsets, then log end. A
	// partition leader and a group coordinator answer at different
	// instants, and a live consumer commits past a log end read a moment
	// earlier; read after the commit, the log end can only be at or past
	// it (it never moves back but by truncation), so a busy topic never
	// reads as "committed beyond log end". Log start read first can only
	// be lower than the truth when the committed offset is read: never a
	// false "expired" either. Business cursors are read between the
	// committed offsets and a log end of their own, for the same reasons,
	// after this pass (observeTargets): a slow database never holds back
	// the targets without a cursor. A share group's progress (its
	// share-partition start offsets) is read once the group kinds are
	// known, still before the log end.
	p.answered = true
	var wg, groups sync.WaitGroup
	wg.Add(1)
	groups.Add(1)
	go func() { defer wg.Done(); p.describeConfigs(ctx) }()
	go func() { defer groups.Done(); p.describeGroups(ctx) }()
	p.listStartOffsets(ctx)
	p.fetchCommittedOffsets(ctx)
	groups.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); p.readShareReset(ctx) }()
	p.readShareStartOffsets(ctx)
	p.listEndOffsets(ctx)
	wg.Wait()
	for _, gs := range p.groupInfo {
		gs.migrationPossible = p.migrationPossible
	}

	// Timestamps need committed offsets, watermarks and the group's kind
	// (which offsets expire per commit and need dating); exact commit
	// times, when asked, are read beside them.
	wg.Add(2)
	go func() { defer wg.Done(); p.readOffsetsTopic(ctx) }()
	go func() { defer wg.Done(); p.fetchEpochEnds(ctx) }()
	p.fetchCommittedTimestamps(ctx)
	p.listOffsetsForUnread(ctx)
	wg.Wait()
	// The records diverged consumers rewind to need the epochs' ends.
	p.fetchRewindTimestamps(ctx)

	for _, g := range p.groups {
		gs := p.groupInfo[g]
		ends, endEpochs := p.logEnds(g)
		p.recall[g] = p.o.memory.Record(p.conn.clusterKey(), g, groupmemory.Facts{
			StateKnown: gs.stateKnown,
			State:      gs.state,
			Kind:       gs.protocol + "/" + gs.protocolType,
			Committed:  gs.committed,
			LogEnds:    ends,
			EndEpochs:  endEpochs,
		}, p.now)
	}
	p.log(start)
}

func (p *pass) log(start time.Time) {
	l := p.o.opts.logger.V(1)
	if !l.Enabled() {
		return
	}
	l.Info("observed Kafka",
		"connection", p.conn.String(),
		"targets", len(p.targets),
		"topics", len(p.topics),
		"groups", len(p.groups),
		"failures", len(p.failures),
		"took", time.Since(start).String())
}

func (p *pass) observation(i int, t Target) proof.Observation {
	obs := proof.Observation{
		ObservedAt:              p.now,
		ClusterID:               p.clusterID,
		OffsetsRetentionMinutes: p.offsetsRetention,
		Transactions:            p.transactions,
		Group:                   proof.GroupObservation{ID: t.Group},
	}
	gs := p.groupInfo[t.Group]
	if gs != nil {
		obs.Group = gs.observation()
		obs.Group.ID = t.Group
		obs.Group.Subscribed = slices.Clone(obs.Group.Subscribed)
	}
	recall := p.recall[t.Group]
	obs.Group.EmptySince, obs.Group.EmptyBy = recall.EmptySince, recall.EmptyBy

	names := slices.Clone(t.Topics)
	slices.Sort(names)
	names = slices.Compact(names)
	inTarget := make(map[string]bool, len(names))
	for _, name := range names {
		inTarget[name] = true
		to := proof.TopicObservation{Name: name}
		if ts := p.topics[name]; ts != nil {
			ts.configsInto(&to)
			if ts.id != ([16]byte{}) {
				to.TopicID = hex.EncodeToString(ts.id[:])
			}
			ids := slices.Sorted(maps.Keys(ts.partitions))
			to.Partitions = make([]proof.PartitionObservation, 0, len(ids))
			for _, id := range ids {
				to.Partitions = append(to.Partitions, p.partitionObservation(i, t, gs, recall, ts, id))
			}
		}
		obs.Topics = append(obs.Topics, to)
	}

	if t.Cursor != nil && p.cursors[i].read {
		obs.Cursor = p.cursors[i].obs
		obs.Cursor.Rows = slices.Clone(obs.Cursor.Rows)
	}
	if t.ReadOffsetsTopic {
		p.offsetsTopicObservation(&obs)
	}
	obs.Failures = p.failuresOf(t, inTarget)
	return obs
}

// configsInto puts the topic's configs, as read, into its observation.
func (ts *topicState) configsInto(to *proof.TopicObservation) {
	to.RetentionMs = ts.retentionMs
	to.RetentionBytes = ts.retentionBytes
	to.CleanupPolicy = ts.cleanupPolicy
	to.DeleteRetentionMs = ts.deleteRetentionMs
	to.TimestampType = ts.timestampType
	to.TimestampBeforeMaxMs = ts.timestampBeforeMaxMs
	to.TimestampAfterMaxMs = ts.timestampAfterMaxMs
	to.TimestampDifferenceMaxMs = ts.timestampDifferenceMaxMs
	to.RemoteStorageEnable = ts.remoteStorageEnable
}

// partitionObservation is what target i's observation says of one
// partition: its log, the group's commit and what dates it (gs nil: the
// group was not described), what the group memory recalls, the cursor.
func (p *pass) partitionObservation(i int, t Target, gs *groupState, recall groupmemory.Recall, ts *topicState, id int32) proof.PartitionObservation {
	ps := ts.partitions[id]
	tp := topicPartition{Topic: ts.name, Partition: id}
	po := proof.PartitionObservation{
		Partition: id,
		LogStart:  ps.logStart,
		LogEnd:    ps.logEnd,
		Committed: proof.NoOffset,
	}
	if gs != nil {
		if c, ok := gs.committed[tp]; ok {
			po.Committed = c
		}
		po.CommittedTimestamp = gs.timestamps[tp]
		po.PrecedingTimestamp = gs.preceding[tp]
		po.PrecedingMarkerTimestamp = gs.precedingMarker[tp]
		if sc := gs.tombstones[tp]; sc != nil && sc.From == po.Committed {
			po.Tombstones = sc
		}
		po.ShareLag, po.ShareLagKnown = gs.shareLag[tp]
		p.unreadObservation(&po, t, gs, tp)
	}
	po.CommittedAfter = recall.CommittedAfter[tp]
	if v, ok := recall.Vanished[tp]; ok && po.Committed == proof.NoOffset {
		po.OffsetVanished, po.VanishedOffset, po.VanishedSeenAt = true, v.Offset, v.SeenAt
	}
	if d, ok := recall.Diverged[tp]; ok {
		po.LogDiverged, po.DivergedFrom, po.DivergedTo, po.DivergedSeenAt = true, d.From, d.To, d.SeenAt
	}
	if gs != nil && po.Committed >= 0 {
		po.CommitEpoch = p.commitEpoch(gs, tp)
		po.CommitWitness = p.commitWitness(gs, tp)
		po.RewindTimestamp = gs.rewind[tp]
	}
	if t.Cursor != nil {
		po.CursorTimestamp = p.cursors[i].timestamps[tp]
	}
	return po
}

// offsetsTopicObservation says what was read of __consumer_offsets for a
// target that asked for it.
func (p *pass) offsetsTopicObservation(obs *proof.Observation) {
	pr := p.offsetsTopic.problem
	obs.OffsetsTopic = proof.OffsetsTopicRead{Requested: true, Reason: pr.reason, Problem: pr.text,
		CoordinatorAhead: p.offsetsTopic.coordinatorAhead}
	switch {
	case pr.text != "":
	case p.offsetsTopic.groups == nil:
		// Asked, but the pass never got to read it (metadata failed).
		obs.OffsetsTopic.Reason, obs.OffsetsTopic.Problem = proof.OffsetsTopicNotRead,
			offsetsTopicName+" not read: the cluster's metadata was not read"
	default:
		p.offsetsTopic.exactTimes(obs)
	}
}

// failuresOf are the pass's failures that apply to target t, in a stable
// order, each once.
func (p *pass) failuresOf(t Target, inTarget map[string]bool) []proof.Failure {
	var out []proof.Failure
	p.mu.Lock()
	for _, f := range p.failures {
		if f.appliesTo(t, inTarget) {
			out = append(out, f.Failure)
		}
	}
	p.mu.Unlock()
	slices.SortStableFunc(out, func(a, b proof.Failure) int {
		return cmp.Or(
			cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.API, b.API),
			cmp.Compare(a.Reason, b.Reason),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(out)
}

// usablePartitions lists, per topic, the partitions metadata answered for
// with a leader, sorted; these are the ones offsets and records are asked
// of.
func (p *pass) usablePartitions() map[string][]int32 {
	out := make(map[string][]int32)
	for name, ts := range p.topics {
		if !ts.answered {
			continue
		}
		for id, ps := range ts.partitions {
			if ps.usable {
				out[name] = append(out[name], id)
			}
		}
		slices.Sort(out[name])
	}
	return out
}

// topicPartition keys a pass's per-partition facts; it is the group
// memory's key, so a pass hands its committed offsets over without a copy.
type topicPartition = groupmemory.TopicPartition
