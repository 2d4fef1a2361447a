// Package apachekafka starts real Apache Kafka brokers for tests: KRaft
// nodes (combined broker and controller) run as JVM processes from the jars
// hack/build-kafka.sh assembles from Maven Central, one folder per test, on
// loopback. It stands beside kafkatest, whose kfake model serves the fast
// tests; the tests here pin what the proof relies on to the broker itself.
//
// A typical test:
//
//	for _, d := range apachekafka.Dists(t) {
//		t.Run(d.Line(), func(t *testing.T) {
//			b := apachekafka.Start(t, d, apachekafka.WithOffsetsRetention(time.Minute))
//			b.CreateTopic(t, "orders", 3, nil) // kafkatest's helpers, on the real broker
//			...
//		})
//	}
//
// The broker's clocks run in seconds where Kafka allows it (the retention
// and offset-expiry checks every second, no initial delay); what a test
// wants shorter still (offsets.retention.minutes, a topic's retention.ms) it
// sets itself. A broker is stopped, and its folder removed, when the test
// ends; when the test failed its log's tail is printed first.
//
// The brokers are found through RETENTION_GUARD_KAFKA_DISTS, which `make
// test` sets from hack/build-kafka.sh. Without it a test fails and says
// how to assemble them: a real-broker test never passes by not running.
package apachekafka

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// DistsEnv names the variable listing the assembled broker folders
// (colon-separated), each holding libs/ and VERSION.
const DistsEnv = "RETENTION_GUARD_KAFKA_DISTS"

// StartTimeout bounds a node's start, from format to ready: generous, a
// JVM restarted beside two busy ones on a loaded machine has taken more
// than 90 s.
const StartTimeout = 3 * time.Minute

// Dist is one assembled Apache Kafka version.
type Dist struct {
	Version string // e.g. 3.9.2, 4.4.0
	Dir     string // holds libs/
}

// Line is the version's major.minor: "3.9", "4.4".
func (d Dist) Line() string {
	parts := strings.SplitN(d.Version, ".", 3)
	if len(parts) < 2 {
		return d.Version
	}
	return parts[0] + "." + parts[1]
}

// AtLeast reports whether the version is major.minor or newer.
func (d Dist) AtLeast(major, minor int) bool {
	parts := strings.SplitN(d.Version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Dists returns every assembled broker line, oldest first, or fails the
// test saying how to assemble them.
func Dists(t testing.TB) []Dist {
	t.Helper()
	ds, err := LoadDists()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// LoadDists reads DistsEnv (for TestMain, which has no testing.TB).
func LoadDists() ([]Dist, error) {
	v := os.Getenv(DistsEnv)
	if v == "" {
		return nil, fmt.Errorf("apachekafka: %s is not set: these tests run real Apache Kafka brokers; run them with `make test` (or `make test-kafka`), or export $(hack/build-kafka.sh) first", DistsEnv)
	}
	var ds []Dist
	for _, dir := range filepath.SplitList(v) {
		b, err := os.ReadFile(filepath.Join(dir, "VERSION"))
		if err != nil {
			return nil, fmt.Errorf("apachekafka: %s names %s, which is not an assembled broker (%v): run hack/build-kafka.sh", DistsEnv, dir, err)
		}
		ds = append(ds, Dist{Version: strings.TrimSpace(string(b)), Dir: dir})
	}
	slices.SortFunc(ds, func(a, b Dist) int {
		switch {
		case a.AtLeast(versionParts(b.Version)) && !b.AtLeast(versionParts(a.Version)):
			return 1
		case b.AtLeast(versionParts(a.Version)) && !a.AtLeast(versionParts(b.Version)):
			return -1
		}
		return strings.Compare(a.Version, b.Version)
	})
	return ds, nil
}

func versionParts(v string) (int, int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	a, _ := strconv.Atoi(parts[0])
	b, _ := strconv.Atoi(parts[1])
	return a, b
}

// Newest returns the newest line, for tests of features only it has.
func Newest(t testing.TB) Dist {
	ds := Dists(t)
	return ds[len(ds)-1]
}

// Option configures Start.
type Option func(*config)

type config struct {
	nodes     int
	props     map[string]string
	nodeProps map[int32]map[string]string
	features  []string
	sasl      *SASL
	// asDeployed: Kafka's own default group protocols (AsDeployed).
	asDeployed bool
	// tiered: remote storage on LocalTieredStorage (WithTieredStorage).
	tiered bool
}

// WithNodes starts a cluster of n combined nodes (a quorum of n
// controllers), for faults; internal topics then replicate to min(n, 3).
func WithNodes(n int) Option { return func(c *config) { c.nodes = n } }

// WithBrokerConfig sets one server.properties entry on every node.
func WithBrokerConfig(key, value string) Option {
	return func(c *config) { c.props[key] = value }
}

// WithNodeConfig sets one server.properties entry on node id only (ids
// count from 1), over WithBrokerConfig: brokers that disagree, as a
// cluster mid-way through a rolling change of its server.properties does.
func WithNodeConfig(id int32, key, value string) Option {
	return func(c *config) {
		if c.nodeProps == nil {
			c.nodeProps = map[int32]map[string]string{}
		}
		if c.nodeProps[id] == nil {
			c.nodeProps[id] = map[string]string{}
		}
		c.nodeProps[id][key] = value
	}
}

// AsDeployed runs the line with Kafka's own default group protocols: on
// 3.x classic groups only (the Scala coordinator, as seed 003's 3.5.1 ran),
// where the harness otherwise turns the KIP-848 preview on
// (classic,consumer, the Java coordinator). A classic group there cannot be
// converted to a consumer group, so its offsets stay on the Empty clock. On
// 4.x it changes nothing.
func AsDeployed() Option {
	return func(c *config) { c.asDeployed = true }
}

// WithTieredStorage turns tiered storage (KIP-405) on, with Kafka's own
// LocalTieredStorage as the RemoteStorageManager: the "remote" tier is a
// folder of each node's (remote/kafka-tiered-storage), so a topic created
// with remote.storage.enable=true copies its closed segments there and
// reads them back as a broker with S3 behind it does. LocalTieredStorage
// ships in the storage module's test jar (3.9, classifier "test") or test
// fixtures (4.4, "test-fixtures"); hack/kafka/*/pom.xml put it in libs/.
//
// The defaults it changes, and why:
//   - remote.log.storage.system.enable=true (default false): tiered storage
//     is off unless the broker turns it on;
//   - remote.log.storage.manager.class.name=LocalTieredStorage (no default)
//     and rsm.config.dir, its folder (without one it makes a temporary
//     folder the test would not clean up);
//   - remote.log.metadata.manager.listener.name (no default): the listener
//     the metadata manager's clients reach the broker on, as the SASL
//     admin when WithSASL;
//   - rlmm.config.remote.log.metadata.topic.replication.factor and min.isr
//     (default 3 and 2) to the cluster's replication, and num.partitions
//     (default 50) to 1: __remote_log_metadata on one node, created fast;
//   - remote.log.manager.task.interval.ms=1000 (default 30000): segments
//     are copied to and expired from the remote tier every second, as the
//     local retention check runs (the package's clocks in seconds).
//
// What a test wants moved quickly (segment.ms, local.retention.ms) it sets
// on its topic.
func WithTieredStorage() Option {
	return func(c *config) { c.tiered = true }
}

// WithOffsetsRetention sets offsets.retention.minutes (Kafka's floor is one
// minute) on every node; the expiry check already runs every second.
func WithOffsetsRetention(d time.Duration) Option {
	return WithBrokerConfig("offsets.retention.minutes", strconv.Itoa(int(d/time.Minute)))
}

// WithFeature formats the cluster with a feature level, e.g.
// "share.version=1" or "streams.version=1" (StorageTool -f; 4.x only).
func WithFeature(f string) Option {
	return func(c *config) { c.features = append(c.features, f) }
}

// SASL makes the client listener SASL_PLAINTEXT with PLAIN and SCRAM-SHA-512
// and turns on the StandardAuthorizer: only Admin is a super user, every
// other principal needs ACLs. Users authenticate with PLAIN (their password
// in the JAAS config) or SCRAM (credentials created after start).
type SASL struct {
	AdminUser, AdminPassword string
	// Users are the other principals and their passwords (PLAIN and
	// SCRAM-SHA-512 alike).
	Users map[string]string
	// OAuthBearer enables OAUTHBEARER too, with Apache Kafka's own
	// unsecured validator (OAuthBearerUnsecuredValidatorCallbackHandler,
	// the default when no callback handler is configured): a token is an
	// unsigned JWT (alg "none") whose "sub" claim is the principal, with
	// "exp" (and "iat") in seconds. For tests only: anyone can mint one.
	OAuthBearer bool
}

// WithSASL turns authentication and authorization on.
func WithSASL(s SASL) Option { return func(c *config) { c.sasl = &s } }

// Broker is a running Apache Kafka cluster (one node unless WithNodes) and
// kafkatest's helpers connected to it (as the SASL admin when WithSASL).
type Broker struct {
	*kafkatest.Cluster
	Dist  Dist
	Dir   string
	Nodes []*Node

	clusterID string
	cfg       config
}

// Node is one JVM process.
type Node struct {
	ID             int32
	Addr           string // the client listener, host:port
	ControllerAddr string
	dir            string
	cmd            *exec.Cmd
	done           chan struct{}
	logPath        string
	mu             sync.Mutex
}

// Start formats and starts a cluster in a folder of the test's, waits until
// every node serves clients, and stops it when the test ends (showing the
// broker log's tail first when the test failed).
func Start(t testing.TB, d Dist, opts ...Option) *Broker {
	t.Helper()
	start := time.Now()
	b, err := StartCluster(d, t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Apache Kafka %s: %d node(s) ready in %s", d.Version, len(b.Nodes), time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka %s log (last 60 lines of each node):\n%s", d.Version, b.LogTail(60))
		}
		b.Close()
	})
	b.Cluster = kafkatest.Dial(t, b.Addrs(), b.ClientOpts()...)
	return b
}

// StartCluster is Start without a test: for TestMain and tools. Close stops
// it; dir is the caller's to remove.
//
// The ports are the kernel's free ones when asked, and free no longer once
// the listeners close: until the JVM binds them (seconds later, on a loaded
// machine) another process may take one, a client's outgoing connection
// among them (same ephemeral range). A node that then fails to bind
// ("Address already in use" in its log) is not the broker's fault: the
// cluster is started again on fresh ports, in a fresh folder, up to
// startAttempts times.
func StartCluster(d Dist, dir string, opts ...Option) (*Broker, error) {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		adir := dir
		if attempt > 1 {
			adir = filepath.Join(dir, fmt.Sprintf("attempt-%d", attempt))
		}
		var b *Broker
		var portTaken bool
		b, portTaken, err = startCluster(d, adir, opts...)
		if err == nil || !portTaken {
			return b, err
		}
	}
	return nil, err
}

// startAttempts bounds StartCluster's retries after a port was taken.
const startAttempts = 3

// addressInUse is what a node that could not bind its port logs.
var addressInUse = []byte("Address already in use")

func startCluster(d Dist, dir string, opts ...Option) (*Broker, bool, error) {
	b, err := startOnce(d, dir, opts...)
	if err == nil {
		return b, false, nil
	}
	if b == nil {
		return nil, false, err
	}
	taken := false
	for _, n := range b.Nodes {
		if n.logPath != "" && bytes.Contains(readFile(n.logPath), addressInUse) {
			taken = true
		}
	}
	return nil, taken, err
}

// startOnce starts the cluster once; on a failure after its nodes were
// set up it returns them (closed) with the error, for their logs.
func startOnce(d Dist, dir string, opts ...Option) (*Broker, error) {
	c := config{nodes: 1, props: map[string]string{}}
	for _, o := range opts {
		o(&c)
	}
	b := &Broker{Dist: d, Dir: dir, cfg: c}
	for i := range c.nodes {
		ports, err := portsFor(2)
		if err != nil {
			return nil, err
		}
		b.Nodes = append(b.Nodes, &Node{
			ID:             int32(i + 1),
			Addr:           net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			ControllerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
			dir:            filepath.Join(dir, fmt.Sprintf("node-%d", i+1)),
		})
	}
	id, err := b.java(context.Background(), "kafka.tools.StorageTool", "random-uuid")
	if err != nil {
		return nil, fmt.Errorf("apachekafka: StorageTool random-uuid: %w", err)
	}
	b.clusterID = strings.TrimSpace(lastLine(id))
	for _, n := range b.Nodes {
		if err := b.format(n); err != nil {
			return nil, err
		}
	}
	for _, n := range b.Nodes {
		if err := b.launch(n); err != nil {
			b.Close()
			return b, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := b.waitReady(ctx, b.Nodes...); err != nil {
		tail := b.LogTail(40)
		b.Close()
		return b, fmt.Errorf("apachekafka: %s did not become ready: %w\n%s", d.Version, err, tail)
	}
	return b, nil
}

// ClusterID is the ID the storage was formatted with (StorageTool format
// -t): every node's meta.properties cluster.id.
func (b *Broker) ClusterID() string { return b.clusterID }

// Addrs are the client listeners of every node.
func (b *Broker) Addrs() []string {
	var out []string
	for _, n := range b.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// ClientOpts are the options to connect as the helpers do (the SASL admin
// with PLAIN when WithSASL).
func (b *Broker) ClientOpts() []kgo.Opt {
	if b.cfg.sasl == nil {
		return nil
	}
	return []kgo.Opt{kgo.SASL(plain.Auth{User: b.cfg.sasl.AdminUser, Pass: b.cfg.sasl.AdminPassword}.AsMechanism())}
}

func (b *Broker) replication() int {
	return min(b.cfg.nodes, 3)
}

func (b *Broker) properties(n *Node) string {
	var voters []string
	for _, m := range b.Nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", m.ID, m.ControllerAddr))
	}
	rf := strconv.Itoa(b.replication())
	minISR := strconv.Itoa(max(1, b.replication()-1))
	p := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          strconv.Itoa(int(n.ID)),
		"controller.quorum.voters":                         strings.Join(voters, ","),
		"controller.listener.names":                        "CONTROLLER",
		"log.dirs":                                         filepath.Join(n.dir, "data"),
		"num.partitions":                                   "1",
		"default.replication.factor":                       rf,
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "1",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
		"group.initial.rebalance.delay.ms":                 "0",
		"log.cleaner.dedupe.buffer.size":                   "16777216",
		// Clocks in seconds: retention and offset expiry are checked every
		// second from the start, the cleaner wakes twice a second.
		"log.retention.check.interval.ms":          "1000",
		"log.initial.task.delay.ms":                "0",
		"offsets.retention.check.interval.ms":      "1000",
		"log.cleaner.backoff.ms":                   "500",
		"group.consumer.heartbeat.interval.ms":     "500",
		"group.consumer.session.timeout.ms":        "6000",
		"group.consumer.min.session.timeout.ms":    "6000",
		"group.consumer.min.heartbeat.interval.ms": "500",
		"auto.create.topics.enable":                "false",
	}
	if !b.Dist.AtLeast(4, 0) && !b.cfg.asDeployed {
		// 3.9 turns KIP-848 groups on only when asked (preview).
		p["group.coordinator.rebalance.protocols"] = "classic,consumer"
	}
	b.listenerProperties(p, n)
	if b.cfg.tiered {
		b.tieredProperties(p, n, rf, minISR)
	}
	for k, v := range b.cfg.props {
		p[k] = v
	}
	for k, v := range b.cfg.nodeProps[n.ID] {
		p[k] = v
	}
	return renderProperties(p)
}

// listenerProperties sets the client and controller listeners: SASL with
// the configured users and the standard authorizer, or plain text.
func (b *Broker) listenerProperties(p map[string]string, n *Node) {
	if s := b.cfg.sasl; s != nil {
		p["listeners"] = "SASL_PLAINTEXT://" + n.Addr + ",CONTROLLER://" + n.ControllerAddr
		p["advertised.listeners"] = "SASL_PLAINTEXT://" + n.Addr
		p["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
		p["inter.broker.listener.name"] = "SASL_PLAINTEXT"
		p["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-512"
		if s.OAuthBearer {
			p["sasl.enabled.mechanisms"] += ",OAUTHBEARER"
			p["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
		}
		p["sasl.mechanism.inter.broker.protocol"] = "PLAIN"
		users := []string{fmt.Sprintf("username=%q password=%q user_%s=%q", s.AdminUser, s.AdminPassword, s.AdminUser, s.AdminPassword)}
		names := make([]string, 0, len(s.Users))
		for u := range s.Users {
			names = append(names, u)
		}
		slices.Sort(names)
		for _, u := range names {
			users = append(users, fmt.Sprintf("user_%s=%q", u, s.Users[u]))
		}
		p["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = "org.apache.kafka.common.security.plain.PlainLoginModule required " + strings.Join(users, " ") + ";"
		p["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		p["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		// The broker registers with the controllers over the PLAINTEXT
		// controller listener, as ANONYMOUS.
		p["super.users"] = "User:" + s.AdminUser + ";User:ANONYMOUS"
	} else {
		p["listeners"] = "PLAINTEXT://" + n.Addr + ",CONTROLLER://" + n.ControllerAddr
		p["advertised.listeners"] = "PLAINTEXT://" + n.Addr
		p["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
		p["inter.broker.listener.name"] = "PLAINTEXT"
	}
}

// tieredProperties turns on tiered storage with Kafka's LocalTieredStorage
// under the node's directory.
func (b *Broker) tieredProperties(p map[string]string, n *Node, rf, minISR string) {
	listener := "PLAINTEXT"
	if s := b.cfg.sasl; s != nil {
		listener = "SASL_PLAINTEXT"
		const client = "rlmm.config.remote.log.metadata.common.client."
		p[client+"sasl.mechanism"] = "PLAIN"
		p[client+"sasl.jaas.config"] = fmt.Sprintf("org.apache.kafka.common.security.plain.PlainLoginModule required username=%q password=%q;", s.AdminUser, s.AdminPassword)
	}
	p["remote.log.storage.system.enable"] = "true"
	p["remote.log.storage.manager.class.name"] = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
	p["rsm.config.dir"] = filepath.Join(n.dir, "remote")
	p["remote.log.metadata.manager.listener.name"] = listener
	p["rlmm.config.remote.log.metadata.topic.replication.factor"] = rf
	p["rlmm.config.remote.log.metadata.topic.min.isr"] = minISR
	p["rlmm.config.remote.log.metadata.topic.num.partitions"] = "1"
	p["remote.log.manager.task.interval.ms"] = "1000"
}

// renderProperties writes p as a properties file, keys sorted.
func renderProperties(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s\n", k, escapeProperty(p[k]))
	}
	return sb.String()
}

// escapeProperty escapes what java.util.Properties would read otherwise.
func escapeProperty(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(v)
}

func (b *Broker) format(n *Node) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "server.properties"), []byte(b.properties(n)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j.properties"), []byte(log4j1), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "log4j2.properties"), []byte(log4j2), 0o644); err != nil {
		return err
	}
	args := []string{"kafka.tools.StorageTool", "format", "-t", b.clusterID, "-c", filepath.Join(n.dir, "server.properties")}
	for _, f := range b.cfg.features {
		args = append(args, "-f", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if out, err := b.java(ctx, args...); err != nil {
		return fmt.Errorf("apachekafka: formatting node %d of %s: %w\n%s", n.ID, b.Dist.Version, err, out)
	}
	return nil
}

// jvmArgs are the JVM's: a small heap (the cleaner's dedupe buffer lives on
// it: 16 MiB), the serial collector and the C1 compiler only, which start
// fastest on two cores.
func (b *Broker) jvmArgs(n *Node) []string {
	args := []string{
		"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true",
		"-cp", filepath.Join(b.Dist.Dir, "libs") + "/*",
	}
	if n != nil {
		args = append(args,
			"-Dlog4j.configuration=file:"+filepath.Join(n.dir, "log4j.properties"),
			"-Dlog4j2.configurationFile="+filepath.Join(n.dir, "log4j2.properties"),
			"-Dkafka.logs.dir="+filepath.Join(n.dir, "logs"))
	} else {
		args = append(args, "-Dlog4j.configuration=file:/dev/null", "-Dlog4j2.level=ERROR")
	}
	return args
}

// java runs a short-lived Kafka tool and returns its output.
func (b *Broker) java(ctx context.Context, args ...string) (string, error) {
	var n *Node
	if len(b.Nodes) > 0 {
		n = b.Nodes[0]
	}
	cmd := exec.CommandContext(ctx, "java", append(b.jvmArgs(n), args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (b *Broker) launch(n *Node) error {
	n.logPath = filepath.Join(n.dir, "broker.log")
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("java", append(b.jvmArgs(n), "kafka.Kafka", filepath.Join(n.dir, "server.properties"))...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, and killed with the test process: a test
	// that dies never leaves a JVM behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("apachekafka: starting node %d: %w", n.ID, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	return nil
}

// waitReady waits until each node logged its start and answers Metadata
// listing every running node.
func (b *Broker) waitReady(ctx context.Context, nodes ...*Node) error {
	for _, n := range nodes {
		for {
			if !n.Running() {
				return fmt.Errorf("node %d exited", n.ID)
			}
			if bytes.Contains(readFile(n.logPath), []byte("Kafka Server started")) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %d: no \"Kafka Server started\" within %s", n.ID, StartTimeout)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	var want []int32
	for _, n := range b.Nodes {
		if n.Running() {
			want = append(want, n.ID)
		}
	}
	for _, n := range nodes {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.Addr)}, b.ClientOpts()...)...)
		if err != nil {
			return err
		}
		for {
			// A raw Metadata request: kadm's BrokerMetadata answers from
			// the client's cached broker list, which a client that only
			// asks for metadata never refreshes (a node that listed the
			// others while they were still fenced would never list them).
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{}
			md, err := req.RequestWith(rctx, cl)
			cancel()
			listed := 0
			if err == nil {
				listed = len(md.Brokers)
			}
			if listed >= len(want) {
				break
			}
			select {
			case <-ctx.Done():
				cl.Close()
				return fmt.Errorf("node %d: metadata lists %d of the %d running nodes (%v)", n.ID, listed, len(want), err)
			case <-time.After(200 * time.Millisecond):
			}
		}
		cl.Close()
	}
	return nil
}

// Running reports whether the node's JVM is alive.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// PID is the JVM's process ID (0 when not running).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// stop signals the node and waits for it to exit, killing it after grace.
func (n *Node) stop(sig syscall.Signal, grace time.Duration) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Kill ends a node at once (SIGKILL: no controlled shutdown), as a crash.
func (b *Broker) Kill(node int32) { b.node(node).stop(syscall.SIGKILL, 0) }

// Stop shuts a node down cleanly (SIGTERM: controlled shutdown).
func (b *Broker) Stop(node int32) { b.node(node).stop(syscall.SIGTERM, 30*time.Second) }

// Restart starts a stopped node again on its folder and ports and waits
// until it serves.
func (b *Broker) Restart(t testing.TB, node int32) {
	t.Helper()
	n := b.node(node)
	if n.Running() {
		b.Stop(node)
	}
	if err := b.launch(n); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := b.waitReady(ctx, n); err != nil {
		t.Fatalf("apachekafka: node %d did not come back: %v\n%s", node, err, b.LogTail(40))
	}
}

func (b *Broker) node(id int32) *Node {
	for _, n := range b.Nodes {
		if n.ID == id {
			return n
		}
	}
	panic(fmt.Sprintf("apachekafka: no node %d", id))
}

// Close stops every node (SIGTERM, then SIGKILL after 10 s) and waits for
// their JVMs to exit.
func (b *Broker) Close() {
	var wg sync.WaitGroup
	for _, n := range b.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.stop(syscall.SIGTERM, 10*time.Second)
		}()
	}
	wg.Wait()
}

// LogTail returns the last lines of each node's broker log.
func (b *Broker) LogTail(lines int) string {
	var sb strings.Builder
	for _, n := range b.Nodes {
		fmt.Fprintf(&sb, "--- node %d (%s) ---\n", n.ID, n.logPath)
		ls := strings.Split(strings.TrimRight(string(readFile(n.logPath)), "\n"), "\n")
		if len(ls) > lines {
			ls = ls[len(ls)-lines:]
		}
		sb.WriteString(strings.Join(ls, "\n"))
		sb.WriteString("\n")
	}
	return sb.String()
}

// Log returns a node's whole broker log.
func (b *Broker) Log(node int32) string { return string(readFile(b.node(node).logPath)) }

// CreateSCRAMUsers creates SCRAM-SHA-512 credentials for every WithSASL
// user (PLAIN needs none: its passwords are in the broker's JAAS config).
func (b *Broker) CreateSCRAMUsers(t testing.TB) {
	t.Helper()
	if b.cfg.sasl == nil {
		t.Fatal("apachekafka: CreateSCRAMUsers without WithSASL")
	}
	var ups []kadm.UpsertSCRAM
	for u, p := range b.cfg.sasl.Users {
		ups = append(ups, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: p})
	}
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	// Its own client: a Broker from StartCluster (shared by a package's
	// tests) has no helpers dialed.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, b.ClientOpts()...)...)
	if err != nil {
		t.Fatalf("apachekafka: creating SCRAM users: %v", err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, ups)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("apachekafka: creating SCRAM users: %v", err)
	}
}

func readFile(p string) []byte {
	b, _ := os.ReadFile(p)
	return b
}

func lastLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	last := ""
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

// portsFor picks a node's ports (a test takes one away).
var portsFor = freePorts

// freePorts asks the kernel for n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("apachekafka: no free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// ErrNotRunning is returned by helpers that need a running node.
var ErrNotRunning = errors.New("apachekafka: node not running")

const log4j1 = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.common.config=WARN
log4j.logger.kafka.server.KafkaConfig=WARN
`

const log4j2 = `status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.config.name = org.apache.kafka.common.config
logger.config.level = warn
`
