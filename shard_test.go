package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/shard"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/webhook"
)

// writeCounter counts one manager's requests by method and API path
// (reads of a single object and writes; not lists and watches).
type writeCounter struct {
	mu     sync.Mutex
	writes map[string]int
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet || !strings.Contains(req.URL.RawQuery, "watch") && !strings.HasSuffix(req.URL.Path, "s") {
			w.mu.Lock()
			if w.writes == nil {
				w.writes = map[string]int{}
			}
			w.writes[req.Method+" "+req.URL.Path]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// count is how many writes went to a path containing every one of parts.
func (w *writeCounter) count(parts ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
next:
	for k, v := range w.writes {
		for _, p := range parts {
			if !strings.Contains(k, p) {
				continue next
			}
		}
		n += v
	}
	return n
}

// Issue 34, past one manager; seed 003 (the daily settlement batch
// consumer ledger-settle-consumer, whose guard must not lapse while the
// platform team rebalances its managers): two shard managers in one
// process — shard a (retentionguard.io/shard=a) and the default shard
// (retentionguard.io/shard notin (a): unlabelled objects and unknown
// shards, no gap), both without the webhook, so each caches only its
// selection — and a third replica serving the webhook from a whole cache
// (its reconcilers select a shard no object names: predicate-filtered).
// Each shard proves its connection's policy and renews its own heartbeat
// Lease. Then the connection kafka-a and its policy are relabelled to
// shard b (which the default shard takes), the connection first or the
// policy first (a platform team relabels with kubectl, in either order),
// while a Deployment of the settlement consumer is updated through the
// webhook again and again:
//   - every admission is judged by the policy (never "no policy selects")
//     and allowed (its proof is Proven, fresh or checked live);
//   - the policy's status is never seen without its Proven proof of the
//     current generation (no reset to Unknown, no pending status);
//   - the default shard names and renews a Lease of its own for it;
//   - shard a stops writing the policy's status, the connection's status
//     and its old Lease.
func TestShardsMoveAConnectionWithoutLosingItsProof(t *testing.T) {
	t.Run("connection first", func(t *testing.T) { moveShard(t, true) })
	t.Run("policy first", func(t *testing.T) { moveShard(t, false) })
}

func moveShard(t *testing.T, connectionFirst bool) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	certDir := filepath.Join(dir, "certs")
	ca := kafkatest.NewCA(t, "webhook-ca")
	cert, key := ca.Issue(t, "webhook", "127.0.0.1")
	for name, data := range map[string][]byte{"kubeconfig": env.KubeConfig, "certs/tls.crt": cert, "certs/tls.key": key} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	g := NewWithT(t)
	bg := context.Background()
	const system, ns = "rg-system", "ledger"
	for _, n := range []string{system, ns} {
		g.Expect(env.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}
	week := strconv.FormatInt(int64(7*24*time.Hour/time.Millisecond), 10)
	clusters := map[string]*kafkatest.Cluster{}
	for _, name := range []string{"kafka-a", "kafka-rest"} {
		c := kafkatest.NewCluster(t)
		c.CreateTopic(t, "settle-task", 2, map[string]string{"retention.ms": week})
		c.Produce(t, "settle-task", 20)
		clusters[name] = c
	}
	clusters["kafka-a"].CommitOffsets(t, "ledger-settle-consumer", "settle-task", map[int32]int64{0: 10, 1: 3})
	clusters["kafka-rest"].CommitOffsets(t, "ledger-report", "settle-task", map[int32]int64{0: 5, 1: 5})

	inA := map[string]string{rgv1.ShardLabel: "a"}
	for name, c := range clusters {
		conn := &rgv1.ClusterKafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rgv1.ClusterKafkaConnectionSpec{KafkaConnectionSpec: rgv1.KafkaConnectionSpec{BootstrapServers: c.Addrs},
				AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll}}}
		if name == "kafka-a" {
			conn.Labels = inA
		}
		g.Expect(env.Client.Create(bg, conn)).To(Succeed())
	}
	newPolicy := func(name, group, app, conn string, labels map[string]string) *rgv1.ConsumerRetentionPolicy {
		return &rgv1.ConsumerRetentionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: rgv1.ConsumerRetentionPolicySpec{
				GroupID: group, Topics: []string{"settle-task"}, RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
				CheckInterval: &metav1.Duration{Duration: 10 * time.Second},
				Selector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Kafka:         rgv1.PolicyKafka{ConnectionRef: &rgv1.ConnectionReference{Kind: rgv1.KindClusterKafkaConnection, Name: conn}},
			},
		}
	}
	settle := newPolicy("ledger-settle", "ledger-settle-consumer", "settle", "kafka-a", inA)
	report := newPolicy("ledger-report", "ledger-report", "report", "kafka-rest", nil)
	g.Expect(env.Client.Create(bg, settle)).To(Succeed())
	g.Expect(env.Client.Create(bg, report)).To(Succeed())

	// The managers: shard a, the default shard, and the webhook replica.
	run := func(selector string, webhookPort int, wc *writeCounter) *managerOptions {
		o := &managerOptions{
			kubeconfig: kubeconfig, metricsAddr: "0", probeAddr: freeAddr(t),
			leaderElect: true, leaderElectionNamespace: system, watchLabelSelector: selector,
			kafkaRequestTimeout: 2 * time.Second, kubeAPIQPS: defaultKubeAPIQPS, kubeAPIBurst: defaultKubeAPIBurst,
			skipNameValidation: true, wrapTransport: wc.wrap,
		}
		o.certs.SecretNamespace = system
		if webhookPort > 0 {
			o.webhookEnabled, o.webhookHost, o.webhookPort, o.webhookCertDir = true, "127.0.0.1", webhookPort, certDir
			o.liveCheckTimeout = 3 * time.Second
			o.certs.WebhookName = "retention-guard"
		}
		if err := o.validate(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		exited := make(chan error, 1)
		go func() { exited <- runManager(ctx, o) }()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("manager %q ended with: %v", selector, err)
				}
			case <-time.After(time.Minute):
				t.Errorf("manager %q did not stop within a minute", selector)
			}
		})
		// One start at a time (runManager sets the process's logger), and
		// the webhook replica Ready: its server starts with its
		// certificate.
		g.Eventually(func(g Gomega) int {
			select {
			case err := <-exited:
				t.Fatalf("manager %q ended: %v", selector, err)
			default:
			}
			code, _ := httpGet(g, "http://"+o.probeAddr+"/readyz")
			return code
		}, 2*time.Minute, 100*time.Millisecond).Should(Equal(http.StatusOK))
		return o
	}
	var writesA, writesRest, writesWebhook writeCounter // requests, by manager
	shardA := run(rgv1.ShardLabel+"=a", 0, &writesA)
	shardRest := run(rgv1.ShardLabel+" notin (a)", 0, &writesRest)
	webhookAddr := freeAddr(t)
	_, portText, _ := net.SplitHostPort(webhookAddr)
	port, _ := strconv.Atoi(portText)
	run(rgv1.ShardLabel+"=webhook-only", port, &writesWebhook)

	get := func(g Gomega, p *rgv1.ConsumerRetentionPolicy) *rgv1.ConsumerRetentionPolicy {
		out := &rgv1.ConsumerRetentionPolicy{}
		g.Expect(env.Client.Get(bg, client.ObjectKeyFromObject(p), out)).To(Succeed())
		return out
	}
	lease := func(g Gomega, name string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		g.Expect(env.Client.Get(bg, types.NamespacedName{Namespace: system, Name: name}, l)).To(Succeed())
		return l
	}
	// provenWithOwnLease waits until the policy is Proven and names a
	// Lease of sh, renewed after since; it returns the Lease's name.
	provenWithOwnLease := func(p *rgv1.ConsumerRetentionPolicy, sh *shard.Shard, since time.Time) string {
		var name string
		g.Eventually(func(g Gomega) {
			cur := get(g, p)
			g.Expect(cur.Status.Proof).NotTo(BeNil())
			g.Expect(cur.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
			g.Expect(cur.Status.Heartbeat).NotTo(BeNil())
			l := lease(g, cur.Status.Heartbeat.Name)
			g.Expect(l.Labels).To(HaveKeyWithValue(rgv1.ShardLabel, sh.Name()))
			g.Expect(l.Annotations).To(HaveKeyWithValue(shard.SelectorAnnotation, sh.String()))
			g.Expect(l.Spec.RenewTime).NotTo(BeNil())
			g.Expect(l.Spec.RenewTime.Time.After(since)).To(BeTrue(), "renewed since %v", since)
			name = l.Name
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		return name
	}
	start := time.Now()
	leaseA := provenWithOwnLease(settle, shardA.shard, start.Add(-time.Minute))
	leaseRest := provenWithOwnLease(report, shardRest.shard, start.Add(-time.Minute))
	g.Expect(leaseA).NotTo(Equal(leaseRest))
	// Each shard elected its own leader: neither waits on the other's lock.
	for _, id := range []string{electionIDFor(shardA), electionIDFor(shardRest)} {
		g.Expect(lease(g, id).Spec.HolderIdentity).NotTo(BeNil(), "leader election Lease %s", id)
	}

	// Admissions and status, watched for the whole move.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deployment := func(image string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"settle","namespace":"` + ns + `"},"spec":{"replicas":1,` +
			`"selector":{"matchLabels":{"app":"settle"}},"template":{"metadata":{"labels":{"app":"settle"}},` +
			`"spec":{"containers":[{"name":"settle","image":"` + image + `"}]}}},"status":{"replicas":1}}`
	}
	admit := func(i int) (string, error) {
		review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + strconv.Itoa(i) + `",` +
			`"kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},` +
			`"namespace":"` + ns + `","operation":"UPDATE","object":` + deployment(fmt.Sprintf("settle:%d", i+1)) +
			`,"oldObject":` + deployment(fmt.Sprintf("settle:%d", i)) + `}}`
		resp, err := tlsClient.Post("https://"+webhookAddr+webhook.Path, "application/json", strings.NewReader(review))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	g.Eventually(func(g Gomega) string {
		body, err := admit(0)
		g.Expect(err).NotTo(HaveOccurred())
		return body
	}, 2*time.Minute, 200*time.Millisecond).Should(ContainSubstring(`"allowed":true`))

	var (
		mu        sync.Mutex
		problems  []string
		admitted  atomic.Int32
		observed  atomic.Int32
		watchStop = make(chan struct{})
		watchDone sync.WaitGroup
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	watchDone.Add(2)
	go func() {
		defer watchDone.Done()
		for i := 1; ; i++ {
			select {
			case <-watchStop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			body, err := admit(i)
			switch {
			case err != nil:
				problem("admission %d: %v", i, err)
			case !strings.Contains(body, `"allowed":true`), strings.Contains(body, "no ConsumerRetentionPolicy selects"):
				problem("admission %d: %s", i, body)
			default:
				admitted.Add(1)
			}
		}
	}()
	go func() {
		defer watchDone.Done()
		for {
			select {
			case <-watchStop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			p := &rgv1.ConsumerRetentionPolicy{}
			if err := env.Client.Get(bg, client.ObjectKeyFromObject(settle), p); err != nil {
				problem("reading the policy: %v", err)
				continue
			}
			switch {
			case p.Status.Proof == nil:
				problem("status without a proof: %+v", p.Status)
			case p.Status.Proof.Verdict != rgv1.VerdictProven:
				problem("verdict %s (proof %s)", p.Status.Proof.Verdict, p.Status.Proof.ProofID)
			case p.Status.ObservedGeneration != p.Generation:
				problem("status of generation %d, policy at %d", p.Status.ObservedGeneration, p.Generation)
			default:
				observed.Add(1)
			}
		}
	}()
	stopWatching := func() {
		select {
		case <-watchStop:
		default:
			close(watchStop)
			watchDone.Wait()
		}
	}
	t.Cleanup(stopWatching)

	// Move kafka-a and its policy to shard b: the default shard's.
	moved := time.Now()
	relabel := func(obj client.Object) {
		patch := []byte(`{"metadata":{"labels":{"` + rgv1.ShardLabel + `":"b"}}}`)
		g.Expect(env.Client.Patch(bg, obj, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	}
	conn := &rgv1.ClusterKafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: "kafka-a"}}
	policy := &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Name: settle.Name, Namespace: ns}}
	if connectionFirst {
		relabel(conn)
		// Half moved: the policy is shard a's, its connection no longer in
		// shard a's cache. Shard a keeps proving it, reading the
		// connection from the API server (not ConnectionNotFound: the
		// watchers would see Unknown), until the policy follows.
		g.Eventually(func() int { return writesA.count("GET", "clusterkafkaconnections/kafka-a") }, 2*time.Minute,
			200*time.Millisecond).Should(BeNumerically(">", 0))
		relabel(policy)
	} else {
		relabel(policy)
		// Half moved the other way: the policy is the default shard's,
		// its connection still shard a's and not in the default shard's
		// cache. The default shard proves it all the same, reading the
		// connection from the API server, until the connection follows.
		g.Eventually(func() int { return writesRest.count("GET", "clusterkafkaconnections/kafka-a") }, 2*time.Minute,
			200*time.Millisecond).Should(BeNumerically(">", 0))
		provenWithOwnLease(settle, shardRest.shard, moved)
		relabel(conn)
	}

	leaseB := provenWithOwnLease(settle, shardRest.shard, moved)
	g.Expect(leaseB).NotTo(Equal(leaseA), "the default shard renews a Lease of its own")
	g.Expect(leaseB).NotTo(Equal(leaseRest), "one Lease per cluster: kafka-a's is not kafka-rest's")
	// The default shard now reconciles kafka-a too.
	g.Eventually(func() int { return writesRest.count("PATCH", "clusterkafkaconnections/kafka-a/status") }, 2*time.Minute,
		200*time.Millisecond).Should(BeNumerically(">", 0))

	// Shard a wrote its last: once the default shard has renewed its Lease
	// twice more, shard a has written nothing more to the policy, the
	// connection or its old Lease.
	settled := func() [3]int {
		return [3]int{writesA.count("consumerretentionpolicies/ledger-settle"), writesA.count("clusterkafkaconnections/kafka-a"),
			writesA.count("leases/" + leaseA)}
	}
	before := settled()
	for range 2 {
		last := lease(g, leaseB).Spec.RenewTime.Time
		g.Eventually(func(g Gomega) time.Time { return lease(g, leaseB).Spec.RenewTime.Time }, 2*time.Minute,
			200*time.Millisecond).Should(BeTemporally(">", last))
	}
	g.Expect(settled()).To(Equal(before), "shard a writes after the move (policy status, connection status, old Lease)")
	g.Expect(writesA.count("DELETE", "leases/")).To(BeZero(), "shard a deleted a heartbeat Lease it had renewed a moment ago")
	// The report policy, untouched, is still the default shard's and Proven.
	provenWithOwnLease(report, shardRest.shard, moved)
	// The webhook replica reconciles nothing: it judges.
	g.Expect(writesWebhook.count("consumerretentionpolicies", "/status")).To(BeZero())

	stopWatching()
	mu.Lock()
	defer mu.Unlock()
	g.Expect(problems).To(BeEmpty(), "the policy lost its guard during the move")
	g.Expect(admitted.Load()).To(BeNumerically(">", 0), "admissions judged during the move")
	g.Expect(observed.Load()).To(BeNumerically(">", 0), "statuses read during the move")
}
