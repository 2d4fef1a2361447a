// Package kafkatest starts real, in-process Kafka clusters for tests and
// drives them the way applications do: it creates topics, produces records,
// commits offsets, deletes records and joins consumer groups through
// franz-go's kgo and kadm clients.
//
// The broker is franz-go's kfake, a Kafka protocol implementation that
// enforces retention.ms and retention.bytes (on Cluster.ApplyRetention),
// group offset expiry (kfake's offset.retention.ms knob, see
// WithOffsetExpiry), ACLs, SASL and TLS. Nothing here fakes an answer: tests
// make retention real by shortening it.
//
// A typical test:
//
//	c := kafkatest.NewCluster(t)
//	c.CreateTopic(t, "orders", 3, nil)
//	c.Produce(t, "orders", 30)                 // 10 records per partition
//	c.Commit(t, "billing", "orders", 0, 4)
//	conn := kafka.Connection{BootstrapServers: c.Addrs}
//
// Every helper fails the test (t.Fatal) on error and bounds its own work
// with a timeout; every client and cluster is closed by t.Cleanup.
package kafkatest

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Timeout bounds each helper's work.
const Timeout = 15 * time.Second

// Cluster is a running kfake cluster and how helpers reach it.
type Cluster struct {
	// Cluster is the kfake cluster: ApplyRetention, Fault, ControlKey,
	// LeaderFor, CoordinatorFor and the rest are available.
	*kfake.Cluster
	// Addrs are the brokers' host:port, one per broker, for bootstrap.
	Addrs []string

	clientOpts []kgo.Opt    // how helpers authenticate (SASL, TLS)
	shared     *kgo.Client  // the helpers' own client
	admin      *kadm.Client // over shared
}

// Option configures NewCluster.
type Option func(*settings)

type settings struct {
	brokers       int
	kfakeOpts     []kfake.Opt
	brokerConfigs map[string]string
	clientOpts    []kgo.Opt
}

// WithBrokers sets the number of brokers (default 1).
func WithBrokers(n int) Option {
	return func(s *settings) { s.brokers = n }
}

// WithBrokerConfigs sets broker configs at start (kfake keeps one set for
// the whole cluster).
func WithBrokerConfigs(configs map[string]string) Option {
	return func(s *settings) {
		for k, v := range configs {
			s.brokerConfigs[k] = v
		}
	}
}

// WithOffsetExpiry makes committed offsets expire after retention, checked
// every interval, using kfake's own test knob offset.retention.ms (real
// brokers only have offsets.retention.minutes, which this does not change:
// the cluster still reports the default 10080).
func WithOffsetExpiry(retention, interval time.Duration) Option {
	return WithBrokerConfigs(map[string]string{
		"offset.retention.ms":                 strconv.FormatInt(retention.Milliseconds(), 10),
		"offsets.retention.check.interval.ms": strconv.FormatInt(interval.Milliseconds(), 10),
	})
}

// WithSASL enables SASL and ACLs with a superuser that helpers
// authenticate as. mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Add
// ordinary users with WithKfake(kfake.User(...)).
func WithSASL(mechanism, user, password string) Option {
	return func(s *settings) {
		s.kfakeOpts = append(s.kfakeOpts, kfake.EnableSASL(), kfake.EnableACLs(),
			kfake.Superuser(mechanism, user, password))
		switch mechanism {
		case "PLAIN":
			s.clientOpts = append(s.clientOpts, kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()))
		case "SCRAM-SHA-256":
			s.clientOpts = append(s.clientOpts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			s.clientOpts = append(s.clientOpts, kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
		default:
			panic("kafkatest: unknown SASL mechanism " + mechanism)
		}
	}
}

// WithTLS serves TLS with server; helpers dial with client.
func WithTLS(server, client *tls.Config) Option {
	return func(s *settings) {
		s.kfakeOpts = append(s.kfakeOpts, kfake.TLS(server))
		s.clientOpts = append(s.clientOpts, kgo.DialTLSConfig(client))
	}
}

// WithKfake passes options to kfake as they are (users with ACLs,
// kfake.SeedTopics, ...).
func WithKfake(opts ...kfake.Opt) Option {
	return func(s *settings) { s.kfakeOpts = append(s.kfakeOpts, opts...) }
}

var clusterSeq atomic.Uint64

// NewCluster starts a cluster, one broker unless WithBrokers says
// otherwise, and closes it when the test ends. KIP-848 consumer group
// heartbeats default to 100ms so groups settle quickly.
func NewCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	s := &settings{
		brokers: 1,
		brokerConfigs: map[string]string{
			"group.consumer.heartbeat.interval.ms": "100",
		},
	}
	for _, opt := range opts {
		opt(s)
	}
	kopts := append([]kfake.Opt{
		kfake.NumBrokers(s.brokers),
		kfake.BrokerConfigs(s.brokerConfigs),
		// Each cluster its own ID, as real clusters have (kfake's default
		// is one name for all): the proof's facts carry it.
		kfake.ClusterID("kfake-" + strconv.FormatUint(clusterSeq.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)),
	}, s.kfakeOpts...)
	kc, err := kfake.NewCluster(kopts...)
	if err != nil {
		t.Fatalf("kafkatest: starting kfake: %v", err)
	}
	t.Cleanup(kc.Close)
	c := Dial(t, kc.ListenAddrs(), s.clientOpts...) // its client closes before kc
	c.Cluster = kc
	return c
}

// Dial returns a Cluster whose helpers drive an already running cluster at
// addrs (a kfake process, a real broker in an end-to-end test), connecting
// with opts (SASL, TLS). The embedded *kfake.Cluster is nil: only the
// helpers that speak the Kafka protocol work (CreateTopic, Produce, Commit,
// DeleteRecords, JoinGroup, ...), not kfake's in-process controls.
func Dial(t testing.TB, addrs []string, opts ...kgo.Opt) *Cluster {
	t.Helper()
	c := &Cluster{Addrs: addrs, clientOpts: opts}
	shared, err := kgo.NewClient(append(c.ClientOpts(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)...)
	if err != nil {
		t.Fatalf("kafkatest: new client: %v", err)
	}
	t.Cleanup(shared.Close)
	c.shared, c.admin = shared, kadm.NewClient(shared)
	return c
}

// ClientOpts are the options helpers connect with (seed brokers, SASL
// superuser, TLS), for tests that build their own kgo client.
func (c *Cluster) ClientOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(c.Addrs...)}, c.clientOpts...)
}

// Client returns a kgo client connected as the helpers are, closed when the
// test ends. opts are added after the cluster's own.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(c.ClientOpts(), opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns the helpers' kadm client (superuser when WithSASL).
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return c.admin
}

// bounded returns the context bounding one helper call.
func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}

// CreateTopic creates a topic with the given partitions and topic configs
// (nil for none), e.g. {"retention.ms": "20"}, and returns once every
// partition has a leader.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	// LeaderTimeout, not Timeout: a loaded real broker's controller can
	// take longer than 15 s to answer.
	cx, cancel := context.WithTimeout(context.Background(), LeaderTimeout)
	defer cancel()
	var cfg map[string]*string
	if len(configs) > 0 {
		cfg = make(map[string]*string, len(configs))
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
	}
	resp, err := c.Admin(t).CreateTopic(cx, partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: creating topic %s: %v", topic, err)
	}
	c.waitForLeaders(t, topic, partitions)
}

// LeaderTimeout bounds how long CreateTopic waits for a new topic's
// partitions to have leaders: a real broker under load (two cores, a
// parallel test tier) takes seconds where kfake takes none.
const LeaderTimeout = 2 * time.Minute

// waitForLeaders polls until every partition of a new topic has a leader
// that answers ListOffsets, and every broker's metadata names the topic
// with all its partitions: on a real broker CreateTopic returns before
// the controller has elected them, and a produce or a commit right after
// it can meet UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER. The
// commit is answered by the group's coordinator, from its own metadata
// cache (KafkaApis.handleOffsetCommitRequest: metadataCache.contains), which
// learns the topic from the controller after the leader does: on a
// three-node 3.9 cluster a commit right after the leaders answered was
// refused with UNKNOWN_TOPIC_OR_PARTITION by a coordinator on another node.
func (c *Cluster) waitForLeaders(t testing.TB, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(LeaderTimeout)
	for {
		cx, cancel := bounded()
		ends, err := c.Admin(t).ListEndOffsets(cx, topic)
		if err == nil && ends.Error() == nil && len(ends[topic]) == int(partitions) {
			err = c.everyBrokerKnows(cx, topic, partitions)
			if err == nil {
				cancel()
				return
			}
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: topic %s: partitions without a leader, or a broker without its metadata, after %s: %v %v", topic, LeaderTimeout, err, ends.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// everyBrokerKnows asks each broker of the cluster, directly, for topic's
// metadata: nil once every one names all its partitions.
func (c *Cluster) everyBrokerKnows(ctx context.Context, topic string, partitions int32) error {
	brokers, err := c.admin.ListBrokers(ctx)
	if err != nil {
		return err
	}
	for _, b := range brokers {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c.shared.Broker(int(b.NodeID)))
		if err != nil {
			return fmt.Errorf("broker %d: %w", b.NodeID, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != int(partitions) {
			return fmt.Errorf("broker %d does not know %s's %d partitions yet", b.NodeID, topic, partitions)
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			return fmt.Errorf("broker %d: %s: %w", b.NodeID, topic, err)
		}
	}
	return nil
}

// SetTopicConfig sets one topic config (IncrementalAlterConfigs).
func (c *Cluster) SetTopicConfig(t testing.TB, topic, key, value string) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	rs, err := c.Admin(t).AlterTopicConfigs(cx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, topic)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("kafkatest: setting %s=%s on topic %s: %v", key, value, topic, err)
	}
}

// SetBrokerConfig sets one dynamic broker config, asked of broker (kfake
// applies it cluster-wide).
func (c *Cluster) SetBrokerConfig(t testing.TB, broker int32, key, value string) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	rs, err := c.Admin(t).AlterBrokerConfigs(cx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, broker)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("kafkatest: setting broker %d %s=%s: %v", broker, key, value, err)
	}
}

// Produce writes n records to topic, spread round-robin over its
// partitions: record i goes to partition i mod partitions, so each
// partition gets n/partitions records (the first ones one more when n does
// not divide evenly).
func (c *Cluster) Produce(t testing.TB, topic string, n int) {
	t.Helper()
	partitions := c.partitions(t, topic)
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{
			Topic:     topic,
			Partition: int32(i % partitions),
			Value:     []byte(fmt.Sprintf("record-%d", i)),
		})
	}
	c.ProduceRecords(t, recs...)
}

// ProduceTo writes n records to one partition of topic.
func (c *Cluster) ProduceTo(t testing.TB, topic string, partition int32, n int) {
	t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("record-%d", i))})
	}
	c.ProduceRecords(t, recs...)
}

// ProduceRecords writes records as given: each to its Topic and Partition,
// with its Timestamp when set. Records for one partition in one call form
// one batch.
func (c *Cluster) ProduceRecords(t testing.TB, records ...*kgo.Record) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	if err := c.shared.ProduceSync(cx, records...).FirstErr(); err != nil {
		t.Fatalf("kafkatest: producing: %v", err)
	}
}

func (c *Cluster) partitions(t testing.TB, topic string) int {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	tds, err := c.Admin(t).ListTopics(cx, topic)
	if err == nil {
		err = tds.Error()
	}
	if err != nil {
		t.Fatalf("kafkatest: describing topic %s: %v", topic, err)
	}
	return len(tds[topic].Partitions)
}

// Commit commits offset for group on one partition, as an admin does
// (OffsetCommit without group membership; the group must have no active
// members).
func (c *Cluster) Commit(t testing.TB, group, topic string, partition int32, offset int64) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	if err := c.Admin(t).CommitAllOffsets(cx, group, os); err != nil {
		t.Fatalf("kafkatest: committing %s %s/%d@%d: %v", group, topic, partition, offset, err)
	}
}

// CommitOffsets commits several partitions of a topic for group at once:
// offsets maps partition to offset.
func (c *Cluster) CommitOffsets(t testing.TB, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if err := c.Admin(t).CommitAllOffsets(cx, group, os); err != nil {
		t.Fatalf("kafkatest: committing %s on %s: %v", group, topic, err)
	}
}

// DeleteRecords moves the log start of one partition to before (kadm
// DeleteRecords), as an operator truncating a topic does.
func (c *Cluster) DeleteRecords(t testing.TB, topic string, partition int32, before int64) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: before, LeaderEpoch: -1})
	rs, err := c.Admin(t).DeleteRecords(cx, os)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatalf("kafkatest: deleting records of %s/%d before %d: %v", topic, partition, before, err)
	}
}

// Protocols a consumer can join a group with.
const (
	Classic  = "classic"
	Consumer = "consumer" // KIP-848, kgo.ServerSideBalancer
)

// JoinGroup starts a consumer in group with the given protocol, subscribed
// to topics, and returns once it has been assigned partitions (the group is
// then Stable). Auto-commit is off: commit through the returned client.
// Close the client to leave the group; the test's end closes it anyway.
func (c *Cluster) JoinGroup(t testing.TB, group, protocol string, topics ...string) *kgo.Client {
	t.Helper()
	return c.JoinGroupWith(t, group, protocol, nil, topics...)
}

// JoinGroupWith is JoinGroup with more client options (kgo.ClientID, a
// kgo.Dialer binding another local address), added after its own.
func (c *Cluster) JoinGroupWith(t testing.TB, group, protocol string, extra []kgo.Opt, topics ...string) *kgo.Client {
	t.Helper()
	assigned := make(chan struct{}, 1)
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	}
	if protocol == Consumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl := c.Client(t, append(opts, extra...)...)
	deadline := time.After(Timeout)
	for {
		pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		cl.PollFetches(pctx)
		cancel()
		select {
		case <-assigned:
			return cl
		case <-deadline:
			t.Fatalf("kafkatest: consumer in group %s (%s) was not assigned within %s", group, protocol, Timeout)
		default:
		}
	}
}

// RunConsumer is a consumer that keeps running: it joins group as a
// classic consumer of topic, commits offsets (partition to offset) as its
// member, and stays in the group (Stable, no Empty clock running) until the
// returned client is closed or the test ends. A healthy group is one whose
// consumer runs: an Empty group's offsets expire offsets.retention.minutes
// after it became Empty, a time no one-shot observation can know, so it is
// never Proven without it (docs/concepts.md).
func (c *Cluster) RunConsumer(t testing.TB, group, topic string, offsets map[int32]int64) *kgo.Client {
	t.Helper()
	cl := c.JoinGroup(t, group, Classic, topic)
	cx, cancel := bounded()
	defer cancel()
	if err := CommitSync(cx, cl, topic, offsets); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return cl
}

// CommitAsMember commits offsets for group the way a consumer that joined
// the group does (a classic group member with the "consumer" protocol
// type, like seed 003's batch consumer), then leaves: the group is Empty
// on return, its offsets on the Empty clock. offsets maps partition to
// offset on topic.
func (c *Cluster) CommitAsMember(t testing.TB, group, topic string, offsets map[int32]int64) {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	if err := CommitAsMember(cx, c.ClientOpts(), group, topic, offsets); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	c.WaitGroupState(t, group, "Empty")
}

// CommitAsMember joins group as a classic consumer of topic with a client
// built from opts, commits offsets (partition to offset) as its member,
// and leaves. Shared by the in-process helpers and the end-to-end stack.
func CommitAsMember(ctx context.Context, opts []kgo.Opt, group, topic string, offsets map[int32]int64) error {
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(append(slices.Clone(opts),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	)...)
	if err != nil {
		return fmt.Errorf("joining group %s: %w", group, err)
	}
	defer cl.Close()
	for joined := false; !joined; {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		cl.PollFetches(pctx)
		cancel()
		select {
		case <-assigned:
			joined = true
		case <-ctx.Done():
			return fmt.Errorf("joining group %s: not assigned partitions: %w", group, ctx.Err())
		default:
		}
	}
	return CommitSync(ctx, cl, topic, offsets)
}

// CommitSync commits offsets (partition to offset) of topic through a
// group member's client, as the member itself does, and returns the first
// error, partition errors included.
func CommitSync(ctx context.Context, cl *kgo.Client, topic string, offsets map[int32]int64) error {
	return CommitSyncEpochs(ctx, cl, topic, offsets, nil)
}

// CommitSyncEpochs is CommitSync with the leader epoch each partition's
// offset is committed in, as a KIP-320 client commits the epoch of the
// last record it read; a partition absent from epochs (or nil) commits
// without one (-1), as kafka-consumer-groups --reset-offsets does.
func CommitSyncEpochs(ctx context.Context, cl *kgo.Client, topic string, offsets map[int32]int64, epochs map[int32]int32) error {
	eos := make(map[int32]kgo.EpochOffset, len(offsets))
	for p, at := range offsets {
		epoch, ok := epochs[p]
		if !ok {
			epoch = -1
		}
		eos[p] = kgo.EpochOffset{Epoch: epoch, Offset: at}
	}
	var commitErr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: eos},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if err == nil {
							err = kerr.ErrorForCode(rp.ErrorCode)
						}
					}
				}
			}
			commitErr = err
		})
	if commitErr != nil {
		if len(epochs) > 0 {
			return fmt.Errorf("committing %s with leader epochs %v as a group member: %w", topic, epochs, commitErr)
		}
		return fmt.Errorf("committing %s as a group member: %w", topic, commitErr)
	}
	return nil
}

// GroupState reads a group's state the way an operator would: classic
// groups through DescribeGroups, KIP-848 groups through
// ConsumerGroupDescribe. It returns "Dead" for a group neither knows.
func (c *Cluster) GroupState(t testing.TB, group string) string {
	t.Helper()
	cx, cancel := bounded()
	defer cancel()
	adm := c.Admin(t)
	if cgs, err := adm.DescribeConsumerGroups(cx, group); err == nil {
		if g, ok := cgs[group]; ok && g.Err == nil && g.State != "" {
			return g.State
		}
	}
	gs, err := adm.DescribeGroups(cx, group)
	if err != nil {
		t.Fatalf("kafkatest: describing group %s: %v", group, err)
	}
	return gs[group].State
}

// WaitCoordinatorReady polls until the group coordinator answers an
// OffsetFetch without a coordinator error. A new broker creates
// __consumer_offsets at the first FindCoordinator and answers
// COORDINATOR_NOT_AVAILABLE (then COORDINATOR_LOAD_IN_PROGRESS) until the
// partition is loaded: an observation in that second is honestly Unknown,
// and a test about something else waits it out first.
func (c *Cluster) WaitCoordinatorReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		cx, cancel := bounded()
		resp, err := c.admin.FetchOffsets(cx, "kafkatest-coordinator-probe")
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: the group coordinator is not ready after %s: %v", Timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// WaitGroupState polls until the group is in state, failing the test after
// Timeout.
func (c *Cluster) WaitGroupState(t testing.TB, group, state string) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		got := c.GroupState(t, group)
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: group %s is %s, want %s", group, got, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SeedGroupKinds fills the cluster with one consumer group of each kind a
// scan must tell apart, on topics orders and payments (one partition, 10
// records each):
//
//   - healthy: a classic consumer group whose running member committed 8
//     on orders (Stable; it stays until the test ends);
//   - expired: a simple group (commits without joining) at 2 on payments,
//     whose records before 6 were deleted: 4 records lost;
//   - simple: a simple group caught up on orders (10);
//   - offsetless: a classic group whose member joined orders and never
//     committed (Stable, no offsets); its member stays until the test ends.
func (c *Cluster) SeedGroupKinds(t testing.TB) {
	t.Helper()
	c.CreateTopic(t, "orders", 1, nil)
	c.CreateTopic(t, "payments", 1, nil)
	c.Produce(t, "orders", 10)
	c.Produce(t, "payments", 10)
	c.RunConsumer(t, "healthy", "orders", map[int32]int64{0: 8})
	c.CommitOffsets(t, "expired", "payments", map[int32]int64{0: 2})
	c.DeleteRecords(t, "payments", 0, 6)
	c.CommitOffsets(t, "simple", "orders", map[int32]int64{0: 10})
	c.JoinGroup(t, "offsetless", Classic, "orders")
}
