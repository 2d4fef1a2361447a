package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// ScanOutput is `scan --output json`.
type scanOutput struct {
	Groups []struct {
		Group            string   `json:"group"`
		State            string   `json:"state"`
		Protocol         string   `json:"protocol"`
		ProtocolType     string   `json:"protocolType"`
		Topics           []string `json:"topics"`
		Verdict          string   `json:"verdict"`
		Reasons          []string `json:"reasons"`
		ExpiredRecords   int64    `json:"expiredRecords"`
		RecoveryHeadroom *string  `json:"recoveryHeadroom"`
	} `json:"groups"`
	Failures []string `json:"failures"`
}

func runScan(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(append([]string{"scan"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// `scan` on a cluster with a healthy, an expired, an offset-less and a
// simple group judges each as a policy would, worst first, and exits 1
// for the Violated one.
func TestScanJudgesEveryGroup(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.SeedGroupKinds(t)
	server := c.Addrs[0]

	code, stdout, stderr := runScan(t, "--bootstrap-server", server, "--recovery-window", "72h", "--output", "json")
	if code != ExitViolated {
		t.Fatalf("exit %d, want %d (a group lost records); stderr: %s", code, ExitViolated, stderr)
	}
	var got scanOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not the JSON document: %v\n%s", err, stdout)
	}
	type row struct {
		verdict, reason, state, protocol, protocolType string
		topics                                         string
		expired                                        int64
		headroom                                       bool
	}
	want := []struct {
		group string
		row
	}{
		{"expired", row{"Violated", "CommittedOffsetExpired", "Empty", "classic", "", "payments", 4, false}},
		{"offsetless", row{"Unknown", "GroupTopicsUnknown", "Stable", "classic", "consumer", "", 0, false}},
		{"healthy", row{"Proven", "", "Stable", "classic", "consumer", "orders", 0, true}},
		{"simple", row{"Proven", "", "Empty", "classic", "", "orders", 0, true}},
	}
	if len(got.Groups) != len(want) {
		t.Fatalf("got %d groups, want %d:\n%s", len(got.Groups), len(want), stdout)
	}
	for i, w := range want {
		g := got.Groups[i]
		reason := ""
		if len(g.Reasons) > 0 {
			reason = g.Reasons[0]
		}
		have := row{g.Verdict, reason, g.State, g.Protocol, g.ProtocolType, strings.Join(g.Topics, ","), g.ExpiredRecords, g.RecoveryHeadroom != nil}
		if g.Group != w.group || have != w.row {
			t.Errorf("group %d: %s %+v\nwant %s %+v", i, g.Group, have, w.group, w.row)
		}
	}

	code, table, _ := runScan(t, "--bootstrap-server", server, "--recovery-window", "72h", "--color", "never")
	if code != ExitViolated {
		t.Errorf("table: exit %d", code)
	}
	for _, line := range []string{
		"4 groups: 1 Violated, 1 Unknown, 2 Proven",
		"GROUP", "expired     Empty   classic/simple    payments  Violated  CommittedOffsetExpired",
		"offsetless  Stable  classic/consumer  -         Unknown   GroupTopicsUnknown",
		"healthy     Stable  classic/consumer  orders    Proven",
	} {
		if !strings.Contains(table, line) {
			t.Errorf("table lacks %q:\n%s", line, table)
		}
	}

	// Only the healthy and simple groups: Proven, exit 0.
	code, _, stderr = runScan(t, "--bootstrap-server", server, "--recovery-window", "72h", "--group-pattern", "^(healthy|simple)$")
	if code != ExitProven {
		t.Errorf("proven groups only: exit %d, want 0; %s", code, stderr)
	}
	// The offset-less group alone: Unknown, exit 2.
	code, _, _ = runScan(t, "--bootstrap-server", server, "--recovery-window", "72h", "--group-pattern", "^offsetless$")
	if code != ExitUnknown {
		t.Errorf("offset-less group only: exit %d, want 2", code)
	}
	// A window the brokers' offsets.retention.minutes (7 days) cannot
	// cover: every group with offsets is Violated.
	code, stdout, _ = runScan(t, "--bootstrap-server", server, "--recovery-window", "240h", "--output", "json", "--group-pattern", "^healthy$")
	if code != ExitViolated || !strings.Contains(stdout, "OffsetsRetentionShorterThanWindow") {
		t.Errorf("240h window: exit %d\n%s", code, stdout)
	}
}

// An unreachable cluster is Unknown (exit 2) with the reason on stderr.
func TestScanUnreachable(t *testing.T) {
	code, _, stderr := runScan(t, "--bootstrap-server", "127.0.0.1:1", "--recovery-window", "72h", "--timeout", "3s")
	if code != ExitUnknown || !strings.Contains(stderr, "BrokerUnreachable") {
		t.Errorf("exit %d, stderr %q; want 2 and BrokerUnreachable", code, stderr)
	}
}

func TestScanUsageErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--recovery-window", "72h"}, "--bootstrap-server is required"},
		{[]string{"--bootstrap-server", "k:9092"}, "--recovery-window is required"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--group-pattern", "("}, "--group-pattern"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--output", "yaml"}, "--output"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--emit-connection-ref", "Secret/x", "--emit-policies"}, "--emit-connection-ref"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--emit-namespace", "x"}, "go with --emit-policies"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--emit-policies", "--kubeconfig", "kc", "--namespace", "Ledger"}, `--namespace "Ledger" is not a namespace name`},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--sasl-mechanism", "OAUTHBEARER"}, "exactly one of --sasl-oauth-token-endpoint"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--sasl-mechanism", "OAUTHBEARER",
			"--sasl-oauth-token-endpoint", "https://idp/t"}, "--sasl-oauth-client-id"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--sasl-mechanism", "AWS_MSK_IAM", "--sasl-username", "u"}, "default chain"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--sasl-mechanism", "GSSAPI"}, "--sasl-mechanism"},
		{[]string{"--bootstrap-server", "k:9092", "--recovery-window", "72h", "--sasl-mechanism", "SCRAM-SHA-512",
			"--sasl-username", "u", "--sasl-password-file", filepath.Join(t.TempDir(), "missing")}, "--sasl-password-file"},
	} {
		code, _, stderr := runScan(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// --emit-policies prints one policy per group with topics, which the real
// API server accepts as written (both the inline and the connectionRef
// forms).
func TestScanEmitPoliciesAreAccepted(t *testing.T) {
	t.Setenv("KUBECONFIG", "") // placeholder selectors: no cluster to read workloads from
	c := kafkatest.NewCluster(t)
	c.SeedGroupKinds(t)
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	for i, extra := range [][]string{nil, {"--emit-connection-ref", "ClusterKafkaConnection/prod"}} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "emitted-"}}
		if err := env.Client.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--emit-policies",
			"--emit-namespace", ns.Name}, extra...)
		code, stdout, stderr := runScan(t, args...)
		if code != ExitViolated {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "# group offsetless: no committed offsets, no policy emitted") {
			t.Errorf("the offset-less group is not explained:\n%s", stdout)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stdout), 4096)
		var groups []string
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				break
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := env.Client.Create(t.Context(), u); err != nil {
				t.Fatalf("form %d: the API server refused an emitted policy: %v\n%s", i, err, stdout)
			}
			g, _, _ := unstructured.NestedString(u.Object, "spec", "groupID")
			groups = append(groups, g)
		}
		if strings.Join(groups, ",") != "expired,healthy,simple" {
			t.Errorf("form %d: emitted policies for %v, want expired, healthy, simple (worst first)", i, groups)
		}
	}
}

// Issue 32, seed 000's outbox between bursts: a simple group whose records
// are 6 days old expires each offset 7 days after its own last commit.
// `scan` reads __consumer_offsets by default, as check and the manager
// do, so the recent commit is dated and the group is Proven with exact
// times; told not to, the records date nothing better than 6 days and it
// cannot be proven; on a cluster without the topic (kfake, a service
// without it) the column says why the times are bounds.
func TestScanReadsCommitTimesByDefault(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 3)
	c.CreateTopic(t, "outbox", 2, map[string]string{"retention.ms": "2592000000"}) // 30 days
	old := time.Now().Add(-6 * 24 * time.Hour)
	var recs []*kgo.Record
	for p := range int32(2) {
		for range 5 {
			recs = append(recs, &kgo.Record{Topic: "outbox", Partition: p, Timestamp: old, Value: []byte("m")})
		}
	}
	c.ProduceRecords(t, recs...)
	c.CommitOffsets(t, "fanout", "outbox", map[int32]int64{0: 5, 1: 5})
	c.LogCommits(t, "fanout")
	args := []string{"--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--output", "json"}

	type groupTimes struct {
		Group              string `json:"group"`
		Verdict            string `json:"verdict"`
		CommitTimes        string `json:"commitTimes"`
		OffsetsTopicReason string `json:"offsetsTopicReason"`
	}
	scanGroup := func(t *testing.T, args ...string) (int, groupTimes) {
		t.Helper()
		code, stdout, stderr := runScan(t, args...)
		var got struct {
			Groups []groupTimes `json:"groups"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("output is not the JSON document: %v\n%s\nstderr: %s", err, stdout, stderr)
		}
		for _, g := range got.Groups {
			if g.Group == "fanout" {
				return code, g
			}
		}
		t.Fatalf("no group fanout in %s", stdout)
		return 0, groupTimes{}
	}

	code, g := scanGroup(t, args...)
	if code != ExitProven || g.Verdict != "Proven" || g.CommitTimes != "exact" || g.OffsetsTopicReason != "" {
		t.Errorf("default: exit %d, %+v; want 0, Proven with exact commit times", code, g)
	}
	code, g = scanGroup(t, append(args, "--read-offsets-topic=false")...)
	if code != ExitUnknown || g.Verdict != "Unknown" || g.CommitTimes != "bounded" {
		t.Errorf("read off: exit %d, %+v; want 2, Unknown with bounded commit times", code, g)
	}

	// The table says it too, in the TIMES column.
	_, table, _ := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h")
	if !strings.Contains(table, "TIMES") || !strings.Contains(table, "exact") {
		t.Errorf("table without a TIMES column saying exact:\n%s", table)
	}

	bare := kafkatest.NewCluster(t)
	bare.CreateTopic(t, "outbox", 1, nil)
	bare.CommitOffsets(t, "fanout", "outbox", map[int32]int64{0: 0})
	_, g = scanGroup(t, "--bootstrap-server", bare.Addrs[0], "--recovery-window", "72h", "--output", "json")
	if g.CommitTimes != "bounded" || g.OffsetsTopicReason != "Absent" {
		t.Errorf("a cluster without __consumer_offsets: %+v; want bounded, Absent", g)
	}
}
