package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cursor/cursortest"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

const (
	ns         = "settlement"
	topic      = "settle-task"
	group      = "ledger-settle-consumer"
	partitions = 24
)

// demo is one run: the stack and what the user-facing steps need.
type demo struct {
	w     io.Writer
	stk   *stack.Stack
	kafka *stack.Kafka
	db    *cursortest.Server // the settlement database, holding the business cursor
	key   client.ObjectKey
}

// run runs the whole demo; it returns when done or when ctx ends, having
// stopped everything it started.
func run(ctx context.Context, w io.Writer, keep bool) error {
	ctrllog.SetLogger(logr.Discard())
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run `make demo` (hack/demo.sh builds the control plane first)")
	}
	step(w, "Starting the local stack: etcd, kube-apiserver, a Kafka broker, and retention-guard installed from its Helm chart")
	stk, err := stack.Start(ctx, stack.Options{
		Log: w,
		// The broker keeps group offsets for Kafka's default 7 days
		// (offsets.retention.minutes=10080), as in the write-up; expiry is
		// checked often so that compressed time works.
		BrokerConfigs: map[string]string{"offsets.retention.check.interval.ms": "200"},
	})
	if err != nil {
		return err
	}
	defer stk.Stop()
	k, err := stack.DialKafka(stk.BrokerAddr)
	if err != nil {
		return err
	}
	defer k.Close()
	step(w, "Starting the settlement database: a real PostgreSQL (Debian's package) on loopback, run as an unprivileged user")
	db, err := cursortest.StartPostgres(ctx)
	if err != nil {
		return err
	}
	defer db.Stop()
	fmt.Fprintf(w, "PostgreSQL listening on %s (data in %s)\n", db.Addr(), db.Dir)
	d := &demo{w: w, stk: stk, kafka: k, db: db}
	fmt.Fprintf(w, "export KUBECONFIG=%s   # to look around while it runs (logs in %s)\n", stk.AdminKubeconfig, stk.Dir)
	if err := d.replay(ctx); err != nil {
		return err
	}
	if keep {
		step(w, "Still running: Ctrl-C to stop")
		<-ctx.Done()
	}
	return nil
}

func (d *demo) replay(ctx context.Context) error {
	w := d.w
	step(w, "Seed 003: the settlement batch consumer")
	fmt.Fprintf(w, "Topic %s: %d partitions, retention.ms 30 days. Group %s runs once a day and commits.\n", topic, partitions, group)
	if err := d.kafka.CreateTopic(ctx, topic, partitions, map[string]string{"retention.ms": strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)}); err != nil {
		return err
	}
	if err := d.kafka.Produce(ctx, topic, partitions, 200); err != nil {
		return err
	}
	lastRun := map[int32]int64{}
	for p := range int32(partitions) {
		lastRun[p] = 200
	}
	if err := d.kafka.CommitAsMember(ctx, group, topic, lastRun); err != nil {
		return err
	}
	// The write-up's third fix is already in the code: each settlement and
	// its cursor are written in one transaction.
	if err := d.db.CursorTable(ctx, "consumer_cursor"); err != nil {
		return err
	}
	for p := range int32(partitions) {
		if err := d.db.WriteCursor(ctx, "consumer_cursor", group, p, lastRun[p]-1); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "Each settlement is written with its cursor in one transaction: consumer_cursor holds last_offset %d on every partition.\n", lastRun[0]-1)
	if err := d.kubectl(ctx, "create", "namespace", ns); err != nil {
		return err
	}
	if err := d.applySamplePolicy(ctx); err != nil {
		return err
	}
	if err := d.createConsumer(ctx); err != nil {
		return err
	}

	step(w, "Day 0: retention-guard proves the team's promise (recoveryWindow 240h = 10 days)")
	p, err := d.waitPolicy(ctx, func(p *rgv1.ConsumerRetentionPolicy) bool { return verdictOf(p) != "" })
	if err != nil {
		return err
	}
	_ = d.kubectl(ctx, "get", "crp", "-n", ns, "-o", "wide")
	fmt.Fprintf(w, "\nReady: %s\n", readyOf(p).Message)
	fmt.Fprintln(w, "The brokers keep an empty group's offsets 7 days (the default); the team promises 10. In the write-up nobody knew.")

	step(w, "Days 1-8: the consumer is down 8 days 12 hours (compressed into seconds)")
	// New tasks keep arriving, retention deletes the oldest, and the
	// group's offsets expire (kfake's offset.retention.ms compresses the
	// brokers' 7 days into half a second).
	if err := d.kafka.Produce(ctx, topic, partitions, 400); err != nil {
		return err
	}
	starts := map[int32]int64{}
	for p := range int32(partitions) {
		starts[p] = 150
	}
	if err := d.kafka.DeleteRecords(ctx, topic, starts); err != nil {
		return err
	}
	if err := d.kafka.SetBrokerConfig(ctx, "offset.retention.ms", "500"); err != nil {
		return err
	}
	if err := d.waitOffsetsExpired(ctx); err != nil {
		return err
	}
	// Time runs at its normal pace again: groups keep their offsets the
	// brokers' 7 days.
	if err := d.kafka.SetBrokerConfig(ctx, "offset.retention.ms", strconv.FormatInt((7*24*time.Hour).Milliseconds(), 10)); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d new settlement tasks arrived; retention moved every log start to 150; the group's committed offsets expired.\n", partitions*400)
	fmt.Fprintf(w, "With auto.offset.reset=latest the consumer would resume at the log end and skip %d tasks without an error.\n", partitions*400)
	if p, err = d.waitPolicy(ctx, func(p *rgv1.ConsumerRetentionPolicy) bool {
		return p.Status.Proof != nil && p.Status.Proof.PartitionSummary.Missing == partitions
	}); err != nil {
		return err
	}
	_ = d.kubectl(ctx, "get", "crp", "-n", ns, "-o", "wide")
	fmt.Fprintf(w, "\nstatus.proof: %d partitions, %d without a committed offset; violations:\n",
		p.Status.Proof.PartitionSummary.Total, p.Status.Proof.PartitionSummary.Missing)
	for i, v := range p.Status.Proof.Violations {
		if i == 3 {
			fmt.Fprintf(w, "  ... and %d more\n", len(p.Status.Proof.Violations)+int(p.Status.Proof.ViolationsOmitted)-i)
			break
		}
		fmt.Fprintf(w, "  %s %s\n", v.Reason, v.Message)
	}

	step(w, "Day 9, 02:00: the nightly run starts")
	fmt.Fprintln(w, "$ kubectl scale deployment settle -n settlement --replicas=1")
	if err := d.kubectl(ctx, "scale", "deployment", "settle", "-n", ns, "--replicas=1"); err == nil {
		return errors.New("the nightly run was allowed: retention-guard should have refused it")
	}

	step(w, "Recovery, the write-up's third fix: the consumer resumes from its business cursor, not from the group's offsets")
	fmt.Fprintln(w, "Resetting the group to the log start would replay 8 days of settlements (double settlement); to the log end, skip them.")
	fmt.Fprintln(w, "The authority is the cursor table, written in the same transaction as each settlement:")
	if err := d.showCursor(ctx, group, 3); err != nil {
		return err
	}
	if err := d.applyCursorPolicy(ctx); err != nil {
		return err
	}
	if p, err = d.waitPolicy(ctx, func(p *rgv1.ConsumerRetentionPolicy) bool {
		return verdictOf(p) == "Proven" && p.Status.Proof.Cursor != nil
	}); err != nil {
		return err
	}
	_ = d.kubectl(ctx, "get", "crp", "-n", ns)
	fmt.Fprintf(w, "\nReady: %s\n", readyOf(p).Message)
	if c := meta.FindStatusCondition(p.Status.Conditions, "OffsetsInRange"); c != nil {
		fmt.Fprintf(w, "OffsetsInRange: %s %s: %s\n", c.Status, c.Reason, clipLine(c.Message))
	}
	fmt.Fprintln(w, "\n$ kubectl scale deployment settle -n settlement --replicas=1   # the run seeks to its cursor")
	if err := d.kubectl(ctx, "scale", "deployment", "settle", "-n", ns, "--replicas=1"); err != nil {
		return fmt.Errorf("the nightly run after the recovery: %w", err)
	}
	_ = d.kubectl(ctx, "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=ConsumerRetentionPolicy")
	if err := d.kubectl(ctx, "scale", "deployment", "settle", "-n", ns, "--replicas=0"); err != nil {
		return err
	}

	step(w, "Day 40: a run stopped mid-way on partition 7, and retention moved on")
	// The run settled partition 7 up to offset 159 and stopped; the
	// consumer stayed down until retention deleted through offset 169.
	if err := d.db.WriteCursor(ctx, "consumer_cursor", group, 7, 159); err != nil {
		return err
	}
	if err := d.kafka.DeleteRecords(ctx, topic, map[int32]int64{7: 170}); err != nil {
		return err
	}
	fmt.Fprintln(w, "consumer_cursor: partition 7 last_offset 159 (next 160); the log of settle-task[7] now starts at 170.")
	if _, err = d.waitPolicy(ctx, func(p *rgv1.ConsumerRetentionPolicy) bool {
		return verdictOf(p) == "Violated" && readyOf(p).Reason == "CursorExpired"
	}); err != nil {
		return err
	}
	_ = d.kubectl(ctx, "get", "crp", "-n", ns, "-o", "wide")
	fmt.Fprintln(w, "\n$ kubectl scale deployment settle -n settlement --replicas=1")
	if err := d.kubectl(ctx, "scale", "deployment", "settle", "-n", ns, "--replicas=1"); err == nil {
		return errors.New("the run was allowed although 10 records its cursor never reached are gone")
	}

	step(w, "The auto-committing twin: enable.auto.commit=true commits what was fetched, not what was settled")
	return d.autoCommitTwin(ctx)
}

// showCursor prints the first rows of the group's cursor, as psql would.
func (d *demo) showCursor(ctx context.Context, group string, n int) error {
	db, err := d.db.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(d.w, "$ psql -c \"SELECT partition_id, last_offset, updated_at FROM consumer_cursor WHERE group_id = '%s' ORDER BY partition_id LIMIT %d\"\n", group, n)
	rows, err := db.QueryContext(ctx, "SELECT partition_id, last_offset, updated_at FROM consumer_cursor WHERE group_id = $1 ORDER BY partition_id LIMIT $2", group, n)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintln(d.w, " partition_id | last_offset | updated_at")
	for rows.Next() {
		var p, last int64
		var at time.Time
		if err := rows.Scan(&p, &last, &at); err != nil {
			return err
		}
		fmt.Fprintf(d.w, " %12d | %11d | %s\n", p, last, at.UTC().Format(time.DateTime))
	}
	return rows.Err()
}

// applyCursorPolicy creates the Secret with the database's connection
// string (from a file: it is never printed) and applies config/samples'
// cursor policy, adapted to the local broker like the first.
func (d *demo) applyCursorPolicy(ctx context.Context) error {
	dsnFile := filepath.Join(d.stk.Dir, "settle-db.dsn")
	if err := os.WriteFile(dsnFile, []byte(d.db.AdminDSN()), 0o600); err != nil {
		return err
	}
	fmt.Fprintln(d.w, "\n$ kubectl create secret generic settle-db -n settlement --from-file=dsn=settle-db.dsn")
	if err := d.kubectl(ctx, "create", "secret", "generic", "settle-db", "-n", ns, "--from-file=dsn="+dsnFile); err != nil {
		return err
	}
	return d.applySample(ctx, "retentionguard_v1alpha1_consumerretentionpolicy_cursor.yaml", nil)
}

// autoCommitTwin replays the twin of seed 003 whose client auto-commits:
// its group's offsets are at the log end while the business settled
// partition 3 only up to 479.
func (d *demo) autoCommitTwin(ctx context.Context) error {
	const twin = "ledger-settle-auto"
	ends := map[int32]int64{}
	for p := range int32(partitions) {
		ends[p] = 600
		last := int64(599)
		if p == 3 {
			last = 479
		}
		if err := d.db.WriteCursor(ctx, "consumer_cursor", twin, p, last); err != nil {
			return err
		}
	}
	if err := d.kafka.CommitAsMember(ctx, twin, topic, ends); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "Group %s committed 600 on every partition (the log end); its cursor says partition 3 was settled up to 479.\n", twin)
	if err := d.applySample(ctx, "retentionguard_v1alpha1_consumerretentionpolicy_cursor.yaml", func(p *rgv1.ConsumerRetentionPolicy) {
		p.Name, p.Spec.GroupID = twin, twin
		p.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "settle-auto"}}
		p.Spec.RecoveryWindow = metav1.Duration{Duration: 72 * time.Hour}
		p.Spec.Consumer = nil
		p.Spec.Cursor.ResumeFrom = rgv1.ResumeFromGroupOffsets // it resumes from the group's offsets
	}); err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: ns, Name: twin}
	if _, err := d.waitPolicyKey(ctx, key, func(p *rgv1.ConsumerRetentionPolicy) bool {
		return verdictOf(p) == "Violated" && readyOf(p).Reason == "GroupAheadOfCursor"
	}); err != nil {
		return err
	}
	if err := d.createDeployment(ctx, "settle-auto", "true"); err != nil {
		return err
	}
	_ = d.kubectl(ctx, "get", "crp", "-n", ns)
	fmt.Fprintln(d.w, "\n$ kubectl scale deployment settle-auto -n settlement --replicas=1")
	if err := d.kubectl(ctx, "scale", "deployment", "settle-auto", "-n", ns, "--replicas=1"); err == nil {
		return errors.New("the auto-committing twin was allowed although its group is ahead of its cursor")
	}
	return nil
}

func clipLine(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// applySamplePolicy applies config/samples' policy, adapted to the local
// broker: its bootstrap server instead of the three TLS+SCRAM brokers, and
// the shortest check interval.
func (d *demo) applySamplePolicy(ctx context.Context) error {
	return d.applySample(ctx, "retentionguard_v1alpha1_consumerretentionpolicy.yaml", nil)
}

// applySample applies a policy of config/samples adapted to the local
// broker (and by edit, when given), and remembers its key.
func (d *demo) applySample(ctx context.Context, name string, edit func(*rgv1.ConsumerRetentionPolicy)) error {
	path := filepath.Join(testenv.RepoRoot(), "config", "samples", name)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var p rgv1.ConsumerRetentionPolicy
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	p.Spec.Kafka = rgv1.PolicyKafka{BootstrapServers: []string{d.stk.BrokerAddr}}
	p.Spec.CheckInterval = &metav1.Duration{Duration: 10 * time.Second}
	note := ""
	if edit != nil {
		edit(&p)
		note = ", name " + p.Name
	}
	adapted, err := yaml.Marshal(&p)
	if err != nil {
		return err
	}
	file := filepath.Join(d.stk.Dir, p.Name+".yaml")
	if err := os.WriteFile(file, adapted, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "$ kubectl apply -f config/samples/%s   # adapted: bootstrapServers %s, no TLS/SASL, checkInterval 10s%s\n",
		filepath.Base(path), d.stk.BrokerAddr, note)
	if edit == nil {
		d.key = client.ObjectKeyFromObject(&p)
	}
	return d.kubectl(ctx, "apply", "-f", file)
}

// createConsumer creates the batch consumer, scaled to 0 between runs,
// configured to fail loudly (the client half of the fix).
func (d *demo) createConsumer(ctx context.Context) error {
	fmt.Fprintln(d.w, "Deployment settlement/settle: replicas 0 between runs, KAFKA_AUTO_OFFSET_RESET=none, KAFKA_ENABLE_AUTO_COMMIT=false")
	return d.createDeployment(ctx, "settle", "false")
}

// createDeployment creates a batch consumer Deployment (app=name) at 0
// replicas with the given KAFKA_ENABLE_AUTO_COMMIT.
func (d *demo) createDeployment(ctx context.Context, name, autoCommit string) error {
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "settle", Image: "registry.example/ledger-settle:1.0",
					Env: []corev1.EnvVar{
						{Name: "KAFKA_AUTO_OFFSET_RESET", Value: "none"},
						{Name: "KAFKA_ENABLE_AUTO_COMMIT", Value: autoCommit},
					},
				}}},
			},
		},
	}
	return d.stk.Env.Client.Create(ctx, dep)
}

// kubectl runs the control plane's kubectl with the admin kubeconfig,
// its output going to the demo's output.
func (d *demo) kubectl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, d.stk.Kubectl, append([]string{"--kubeconfig", d.stk.AdminKubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	_, _ = d.w.Write(out.Bytes())
	return err
}

// waitPolicy waits until ok holds of the demo's policy.
func (d *demo) waitPolicy(ctx context.Context, ok func(*rgv1.ConsumerRetentionPolicy) bool) (*rgv1.ConsumerRetentionPolicy, error) {
	return d.waitPolicyKey(ctx, d.key, ok)
}

// waitPolicyKey waits until ok holds, annotating the policy every 2s so
// that the reconciler checks again without waiting for its interval.
func (d *demo) waitPolicyKey(ctx context.Context, key client.ObjectKey, ok func(*rgv1.ConsumerRetentionPolicy) bool) (*rgv1.ConsumerRetentionPolicy, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	c := d.stk.Env.Client
	var lastPoke time.Time
	for {
		p := &rgv1.ConsumerRetentionPolicy{}
		if err := c.Get(ctx, key, p); err != nil {
			return nil, err
		}
		if p.Status.ObservedGeneration == p.Generation && ok(p) {
			return p, nil
		}
		if time.Since(lastPoke) > 2*time.Second {
			patch := client.MergeFrom(p.DeepCopy())
			p.Annotations = map[string]string{"demo.retentionguard.io/poke": time.Now().Format(time.RFC3339Nano)}
			_ = c.Patch(ctx, p, patch)
			lastPoke = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for policy %s: %w (verdict %q)", key, ctx.Err(), verdictOf(p))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (d *demo) waitOffsetsExpired(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		committed, err := d.kafka.Committed(ctx, group, topic)
		if err != nil {
			return err
		}
		if len(committed) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group's offsets did not expire: %v", committed)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func verdictOf(p *rgv1.ConsumerRetentionPolicy) string {
	if p.Status.Proof == nil {
		return ""
	}
	return string(p.Status.Proof.Verdict)
}

func readyOf(p *rgv1.ConsumerRetentionPolicy) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, "Ready"); c != nil {
		return *c
	}
	return metav1.Condition{}
}
