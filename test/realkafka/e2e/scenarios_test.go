package e2e

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

// Seed 003 on the broker's own clock (Apache Kafka 3.9, the 3.x line of
// the incident's 3.5.1): a settlement batch consumer (a Deployment scaled
// to 0 between runs) committed at the end of its run and left; the
// broker, with offsets.retention.minutes 1 (Kafka's floor; the policy's
// window is 15 s to fit), deletes the Empty group's offsets while the log
// moves on. Scaling the consumer up from zero is a start: the webhook
// checks the broker live. It is allowed while the offsets last, refused
// with NoCommittedOffset and the log start once the broker deleted them,
// and allowed again after the team resets the group to the log start.
func TestSeed003BrokerExpiresTheBatchGroupsOffsets(t *testing.T) {
	// As 3.x runs by default (seed 003's 3.5.1): classic groups only, so
	// the Empty group's offsets are on the Empty clock alone.
	b := apachekafka.Start(t, oldest, apachekafka.AsDeployed(), apachekafka.WithOffsetsRetention(time.Minute))
	k, err := stack.DialKafka(b.Addrs()...)
	e2eutil.Must(t, err)
	defer k.Close()
	ctx := e2eutil.Ctx(t)
	const ns, topic, group = "settlement", "settle-task", "ledger-settle-consumer"
	stk.Admin().Namespace(t, ns)
	e2eutil.Must(t, k.CreateTopic(ctx, topic, 3, map[string]string{"retention.ms": strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)}))
	e2eutil.Must(t, k.Produce(ctx, topic, 3, 100))
	// Yesterday's run read everything and committed.
	e2eutil.Must(t, k.CommitAsMember(ctx, group, topic, map[int32]int64{0: 100, 1: 100, 2: 100}))
	// The harness's brokers serve the consumer protocol (KIP-848), so they
	// may convert this classic group and expire its offsets per commit
	// (issue 22): the guard must date the commits, which only
	// __consumer_offsets does exactly (the records' CreateTime bounds
	// nothing on 3.9: message.timestamp.after.max.ms is unbounded). The
	// policy leaves spec.kafka.readOffsetsTopic out: the guard reads the
	// topic by default (issue 32).
	p := policyWith(t, ns, group, topic, "settle", b.Addrs()[0], 15*time.Second, nil)
	key := client.ObjectKeyFromObject(p)
	e2eutil.Must(t, deployment(t, ns, "settle", "settle", 0))

	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Proven", e2eutil.Proven)
	t.Logf("before the outage: %s", e2eutil.Describe(p))
	if p.Status.Proof.OffsetsRetentionMinutes == nil || *p.Status.Proof.OffsetsRetentionMinutes != 1 {
		t.Errorf("offsetsRetentionMinutes = %v, want the broker's 1", p.Status.Proof.OffsetsRetentionMinutes)
	}
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "settle", 1)) // a normal run: a start, checked live
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "settle", 0))

	// Down: new tasks arrive, the oldest are deleted (the log start moves
	// to 40), and the broker deletes the Empty group's offsets.
	e2eutil.Must(t, k.Produce(e2eutil.Ctx(t), topic, 3, 150))
	e2eutil.Must(t, k.DeleteRecords(e2eutil.Ctx(t), topic, map[int32]int64{0: 40, 1: 40, 2: 40}))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		committed, err := k.Committed(e2eutil.Ctx(t), group, topic)
		e2eutil.Must(t, err)
		if len(committed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Apache Kafka %s did not expire the group's offsets: %v", oldest.Version, committed)
		}
		time.Sleep(time.Second)
	}

	p = stk.Admin().WaitPolicy(t, key, 60*time.Second, "Violated with NoCommittedOffset", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "NoCommittedOffset"
	})
	if s := p.Status.Proof.PartitionSummary; s.Total != 3 || s.Missing != 3 || s.InRange != 0 {
		t.Errorf("partitionSummary = %+v, want 3 partitions, 3 missing", s)
	}
	for _, v := range p.Status.Proof.Violations {
		e2eutil.Contains(t, "violation", v.Reason+" "+v.Message, "NoCommittedOffset", "no committed offset while log start is 40")
	}
	t.Logf("event: %s", stk.Admin().WaitEvent(t, p, "Warning", "NoCommittedOffset"))

	msg := e2eutil.Denied(t, stk.Admin().Scale(t, ns, "settle", 1))
	t.Logf("denial:\n%s", msg)
	e2eutil.Contains(t, "the denial", msg,
		"Deployment settlement/settle",
		"policy ledger-settle-consumer (group ledger-settle-consumer)",
		"NoCommittedOffset on 3 partitions of settle-task, e.g. settle-task[0]: no committed offset while log start is 40",
		p.Status.Proof.ProofID)

	// The team replays: reset the group to the log start, then retry.
	reset, err := k.ResetToLogStart(e2eutil.Ctx(t), group, topic)
	e2eutil.Must(t, err)
	t.Logf("reset %s to the log start: %v", group, reset)
	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Proven after the reset", e2eutil.Proven)
	if p.Status.Proof.PartitionSummary.InRange != 3 {
		t.Errorf("after the reset: %s", e2eutil.Describe(p))
	}
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "settle", 1))
}

// Seed 000 on the broker (the newest line, the stack's): a fan-out
// consumer committed offset 30 of its outbox topic, whose records 30..74
// are a backfill carrying their rows' five-day-old times. It has 2 days of
// headroom (retention counts from those times), less than the 72h window:
// the proof is Violated by that risk only (RecoveryHeadroomShorterThanWindow,
// nothing lost yet), so its start and a release (a faster consumer: the
// way out) are allowed with a warning. Then the log start passes the
// committed offset (DeleteRecords, as retention does): a release and a
// scale from zero (checked live) are refused naming the 45 expired
// records, while
// librdkafka (kcat) with auto.offset.reset=earliest silently resumes at
// the new log start on the same broker. After the replay and a reset the
// consumer starts again.
func TestSeed000FanoutDownPastRetention(t *testing.T) {
	ctx := e2eutil.Ctx(t)
	const ns, topic, group = "fanout", "outbox", "fanout"
	stk.Admin().Namespace(t, ns)
	// Offsets 0..29 written today and read; 30..74 a backfill of the
	// outbox carrying its rows' original times (5 days ago); 75..99
	// today's; retention 7 days.
	e2eutil.Must(t, kafka.Seed000Outbox(ctx, topic, group))
	p := policy(t, ns, group, topic, "fanout", stk.BrokerAddr, 72*time.Hour)
	key := client.ObjectKeyFromObject(p)
	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Violated by the headroom only", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "RecoveryHeadroomShorterThanWindow" && p.Status.ObservedGeneration == p.Generation
	})
	t.Logf("Violated by the headroom %v, proof %s: %s", p.Status.Proof.RecoveryHeadroom, p.Status.Proof.ProofID, e2eutil.Describe(p))
	if h := p.Status.Proof.RecoveryHeadroom; h == nil || h.Duration < 47*time.Hour || h.Duration > 49*time.Hour {
		t.Errorf("recoveryHeadroom %v, want about 2 days (the record at 30 is 5 days old, retention 7 days)", h)
	}
	if vs := p.Status.Proof.Violations; len(vs) != 1 || p.Status.Proof.ExpiredRecords != 0 ||
		!strings.Contains(vs[0].Message, "retention deletes the record at committed offset 30 in 47h") {
		t.Errorf("want one violation saying the headroom is below the window, nothing expired: %s", e2eutil.Describe(p))
	}
	// Its start (checked live) and a release: allowed with the warning.
	ws, err := stk.Admin().WithWarnings(t, func(cs kubernetes.Interface) error {
		_, err := cs.AppsV1().Deployments(ns).Create(e2eutil.Ctx(t), e2eutil.NewDeployment(ns, "fanout", "fanout", 1), metav1.CreateOptions{})
		return err
	})
	e2eutil.AllowedAtRisk(t, "the start", ws, err, "fanout", p.Status.Proof.ProofID, "RecoveryHeadroomShorterThanWindow outbox[0]")
	ws, err = stk.Admin().RolloutWarned(t, ns, "fanout", "1.1")
	e2eutil.AllowedAtRisk(t, "the rollout to 1.1", ws, err, "fanout", p.Status.Proof.ProofID, "RecoveryHeadroomShorterThanWindow outbox[0]")
	stk.Admin().WaitEvent(t, p, "Warning", "RolloutWarned")

	// Down past retention: the oldest 75 records go, 45 of them never
	// read by the group (offsets 30..74).
	e2eutil.Must(t, kafka.DeleteRecords(e2eutil.Ctx(t), topic, map[int32]int64{0: 75}))
	p = stk.Admin().WaitPolicy(t, key, 30*time.Second, "Violated with CommittedOffsetExpired", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && e2eutil.Ready(p).Reason == "CommittedOffsetExpired"
	})
	if p.Status.Proof.ExpiredRecords != 45 || p.Status.Proof.PartitionSummary.Expired != 1 {
		t.Errorf("want 45 expired records on 1 partition: expiredRecords=%d, %s", p.Status.Proof.ExpiredRecords, e2eutil.Describe(p))
	}
	msg := e2eutil.Denied(t, stk.Admin().Rollout(t, ns, "fanout", "1.2"))
	t.Logf("denial:\n%s", msg)
	e2eutil.Contains(t, "the denial", msg,
		"policy fanout (group fanout)",
		"CommittedOffsetExpired outbox[0]: committed offset 30 is below log start 75: 45 records expired before this group read them")
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "fanout", 0)) // scaling down is never refused
	e2eutil.Contains(t, "the denial of a scale from zero", e2eutil.Denied(t, stk.Admin().Scale(t, ns, "fanout", 1)), "CommittedOffsetExpired outbox[0]")

	// What the broker does with the same group for librdkafka: committed
	// offset 30 is out of range and, with earliest, it jumps to 75.
	kctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(kctx, "kcat", "-b", stk.BrokerAddr, "-G", group, "-X", "auto.offset.reset=earliest",
		"-X", "enable.auto.commit=false", "-c", "1", "-f", "%t %p %o %s\n", topic)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat as a member of group %s: %v\n%s", group, err, out)
	}
	t.Logf("kcat -G %s -X auto.offset.reset=earliest on Apache Kafka %s printed: %s", group, newest.Version, out)
	if fields := strings.Fields(string(out)); len(fields) < 3 || fields[0] != topic || fields[1] != "0" || fields[2] != "75" {
		t.Errorf("kcat printed %q, want %q: the new log start, silently skipping 30..74", out, "outbox 0 75 …")
	}

	// The team replays 30..74 from the outbox table, resets the group to
	// the log start and starts the consumer.
	reset, err := kafka.ResetToLogStart(e2eutil.Ctx(t), group, topic)
	e2eutil.Must(t, err)
	t.Logf("reset %s to the log start: %v", group, reset)
	stk.Admin().WaitPolicy(t, key, 30*time.Second, "Proven after the reset", e2eutil.Proven)
	e2eutil.Must(t, stk.Admin().Scale(t, ns, "fanout", 1))
	e2eutil.Must(t, stk.Admin().Rollout(t, ns, "fanout", "1.3"))
}
