package groups

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// The brokers are shared: every test of a variant runs on one broker,
// side by side (t.Parallel), so the minute-long expiry waits overlap. The
// test binary runs up to 32 tests at once unless -parallel says otherwise
// (the default, GOMAXPROCS, is 2 here: the waits would queue).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "32")
	}
	code := m.Run()
	closeBrokers()
	os.Exit(code)
}

// Principals of the shared brokers (SASL PLAIN; passwords only for the
// test brokers on loopback).
const (
	adminUser     = "admin"
	adminPassword = "Adm1n-groups-pa55"
	// reader may describe and read every topic and group and describe
	// the brokers' configs: what the guard's documented ACLs grant, Read on
	// __consumer_offsets included.
	reader = "reader"
	// noOffsetsTopic is reader denied Read on __consumer_offsets.
	noOffsetsTopic = "no-offsets-topic"
	// noSecret is reader denied everything on topics named secret-*.
	noSecret     = "no-secret"
	userPassword = "Us3r-groups-pa55"
	secretPrefix = "secret-"
)

// variant is one broker setup a test runs on.
type variant struct {
	// Name is the subtest's: the line, and "-scala" for 3.9 with the Scala
	// group coordinator.
	Name string
	Dist apachekafka.Dist
	// KIP848: the broker serves consumer-protocol groups (the Java group
	// coordinator: 4.x, or 3.9 with group.coordinator.rebalance.protocols
	// including consumer, as the harness sets it).
	KIP848 bool
	opts   []apachekafka.Option
}

// variants are the broker setups of the assembled lines: each 3.x line
// twice, with the Java group coordinator (the harness turns KIP-848 on, and
// with it, in 3.9, the new coordinator for every group:
// KafkaConfig.isNewGroupCoordinatorEnabled) and with the Scala one (only
// classic groups: what 3.x brokers ran unless KIP-848 was asked for, seed
// 003's 3.5.1 among them); each 4.x line once (the Java coordinator only).
func variants(t *testing.T) []variant {
	t.Helper()
	var out []variant
	for _, d := range apachekafka.Dists(t) {
		if d.AtLeast(4, 0) {
			out = append(out, variant{Name: d.Line(), Dist: d, KIP848: true})
			continue
		}
		out = append(out,
			variant{Name: d.Line(), Dist: d, KIP848: true},
			variant{Name: d.Line() + "-scala", Dist: d,
				opts: []apachekafka.Option{apachekafka.WithBrokerConfig("group.coordinator.rebalance.protocols", "classic")}})
	}
	return out
}

// forEach runs f on every variant (keep(v) false leaves a variant out: a
// feature it does not have), each a parallel subtest.
func forEach(t *testing.T, keep func(variant) bool, f func(t *testing.T, e *env)) {
	t.Helper()
	ran := 0
	for _, v := range variants(t) {
		if keep != nil && !keep(v) {
			continue
		}
		ran++
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			f(t, setup(t, v))
		})
	}
	if ran == 0 {
		t.Fatal("no assembled broker line has what this test needs")
	}
}

func kip848(v variant) bool { return v.KIP848 }

// offsetsPartitions is offsets.topic.num.partitions of the shared brokers:
// more than one, so that partitionFor decides where a group's records go.
const offsetsPartitions = 10

type sharedBroker struct {
	once sync.Once
	b    *apachekafka.Broker
	dir  string
	err  error
}

var (
	startMu   sync.Mutex
	brokersMu sync.Mutex
	brokers   = map[string]*sharedBroker{}
)

func brokerFor(v variant) (*apachekafka.Broker, error) {
	brokersMu.Lock()
	s := brokers[v.Name]
	if s == nil {
		s = &sharedBroker{}
		brokers[v.Name] = s
	}
	brokersMu.Unlock()
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", "realkafka-groups-")
		if s.err != nil {
			return
		}
		opts := append([]apachekafka.Option{
			apachekafka.WithOffsetsRetention(time.Minute),
			apachekafka.WithBrokerConfig("offsets.topic.num.partitions", strconv.Itoa(offsetsPartitions)),
			apachekafka.WithSASL(apachekafka.SASL{AdminUser: adminUser, AdminPassword: adminPassword, Users: map[string]string{
				reader: userPassword, noOffsetsTopic: userPassword, noSecret: userPassword,
			}}),
		}, v.opts...)
		// One broker starts at a time: JVMs starting side by side on a
		// loaded machine can miss the harness's start timeout.
		startMu.Lock()
		s.b, s.err = apachekafka.StartCluster(v.Dist, s.dir, opts...)
		startMu.Unlock()
		if s.err == nil {
			s.err = grantACLs(s.b)
		}
	})
	return s.b, s.err
}

func closeBrokers() {
	brokersMu.Lock()
	defer brokersMu.Unlock()
	var wg sync.WaitGroup
	for _, s := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.b != nil {
				s.b.Close()
			}
			if s.dir != "" {
				os.RemoveAll(s.dir)
			}
		}()
	}
	wg.Wait()
}

// grantACLs gives the three principals what their names say.
func grantACLs(b *apachekafka.Broker) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, b.ClientOpts()...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	users := []string{"User:" + reader, "User:" + noOffsetsTopic, "User:" + noSecret}
	builders := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(users...).Topics("*").
			Operations(kadm.OpDescribe, kadm.OpDescribeConfigs, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(users...).Groups("*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(users...).Clusters().Operations(kadm.OpDescribe, kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("User:" + noOffsetsTopic).Topics(kafkatest.OffsetsTopic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("User:" + noSecret).Topics(secretPrefix).Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ab := range builders {
		ab.AllowHosts().DenyHosts()
		rs, err := adm.CreateACLs(ctx, ab)
		if err != nil {
			return fmt.Errorf("creating ACLs: %w", err)
		}
		for _, r := range rs {
			if r.Err != nil {
				return fmt.Errorf("creating ACL %+v: %w", r, r.Err)
			}
		}
	}
	return nil
}

// env is one test's view of a shared broker.
type env struct {
	*kafkatest.Cluster // helpers, as the admin
	V                  variant
	B                  *apachekafka.Broker
}

func setup(t *testing.T, v variant) *env {
	t.Helper()
	b, err := brokerFor(v)
	if err != nil {
		t.Fatalf("Apache Kafka %s (%s): %v", v.Dist.Version, v.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka %s (%s) log, last 40 lines:\n%s", v.Dist.Version, v.Name, b.LogTail(40))
		}
	})
	return &env{Cluster: kafkatest.Dial(t, b.Addrs(), b.ClientOpts()...), V: v, B: b}
}

// conn is how the observer reaches the broker as user.
func (e *env) conn(user string) kafka.Connection {
	pw := userPassword
	if user == adminUser {
		pw = adminPassword
	}
	return kafka.Connection{BootstrapServers: e.B.Addrs(), SASL: &kafka.SASL{Mechanism: kafka.MechanismPlain, Username: user, Password: pw}}
}

// newObserver is the product's observer with timeouts for a loaded machine.
func newObserver(t *testing.T) *kafka.Observer {
	t.Helper()
	o := kafka.NewObserver(kafka.WithTimeouts(5*time.Second, 15*time.Second, 20*time.Second))
	t.Cleanup(o.Close)
	return o
}

func observe(t *testing.T, o *kafka.Observer, conn kafka.Connection, targets ...kafka.Target) []proof.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	obs := o.Observe(ctx, conn, targets)
	if len(obs) != len(targets) {
		t.Fatalf("%d observations for %d targets", len(obs), len(targets))
	}
	return obs
}

// observeOne observes one target and fails on any failure.
func observeOne(t *testing.T, o *kafka.Observer, conn kafka.Connection, target kafka.Target) proof.Observation {
	t.Helper()
	obs := observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	return obs
}

func partition(t *testing.T, obs proof.Observation, topic string, p int32) proof.PartitionObservation {
	t.Helper()
	for _, to := range obs.Topics {
		for _, po := range to.Partitions {
			if to.Name == topic && po.Partition == p {
				return po
			}
		}
	}
	t.Fatalf("no partition %s/%d in the observation of %s", topic, p, obs.Group.ID)
	return proof.PartitionObservation{}
}

func requireNoFailures(t *testing.T, obs proof.Observation) {
	t.Helper()
	if len(obs.Failures) > 0 {
		t.Fatalf("observation of %s failed: %s", obs.Group.ID, describeFailures(obs.Failures))
	}
}

func findFailure(obs proof.Observation, reason, api, topic string) *proof.Failure {
	for i, f := range obs.Failures {
		if f.Reason == reason && f.API == api && (topic == "" || f.Topic == topic) {
			return &obs.Failures[i]
		}
	}
	return nil
}

func describeFailures(fs []proof.Failure) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "\n  %s api=%s topic=%s partition=%d: %s", f.Reason, f.API, f.Topic, f.Partition, f.Message)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

func findViolation(r proof.Result, reason string) *proof.Violation {
	for i := range r.Violations {
		if r.Violations[i].Reason == reason {
			return &r.Violations[i]
		}
	}
	return nil
}

// expiryWait bounds a wait for the coordinator's offset cleanup: one
// minute of offsets.retention.minutes, checked every second, on a loaded
// machine.
const expiryWait = 4 * time.Minute

// pollUntil calls f every interval until it returns true, failing the test
// with what f last said after limit.
func pollUntil(t *testing.T, limit, interval time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, last := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last: %s)", what, limit, last)
		}
		time.Sleep(interval)
	}
}

// req sends a raw request to whichever broker the client picks (for
// group requests: kgo finds the coordinator).
func req[R kmsg.Response](t *testing.T, cl *kgo.Client, r kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, r)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(r.Key()), err)
	}
	return resp.(R)
}

// userClient is a kgo client authenticated as user.
func (e *env) userClient(t *testing.T, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	pw := userPassword
	if user == adminUser {
		pw = adminPassword
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.B.Addrs()...),
		kgo.SASL(plainAuth(user, pw))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func plainAuth(user, password string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: password}.AsMechanism()
}
