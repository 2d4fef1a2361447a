package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// scanJSON is `scan --output json`.
type scanJSON struct {
	Groups []scanGroupJSON `json:"groups"`
	// Failures say what kept the scan from reading the whole cluster.
	Failures []string `json:"failures,omitempty"`
}

type scanGroupJSON struct {
	Group    string `json:"group"`
	State    string `json:"state"`
	Protocol string `json:"protocol"`
	// ProtocolType is a classic group's: consumer, or empty for a simple
	// group (commits without joining).
	ProtocolType   string   `json:"protocolType"`
	Topics         []string `json:"topics"`
	Verdict        string   `json:"verdict"`
	Reasons        []string `json:"reasons"`
	ExpiredRecords int64    `json:"expiredRecords"`
	// RecoveryHeadroom is a Go duration, null when it cannot be computed.
	RecoveryHeadroom *string `json:"recoveryHeadroom"`
	// CommitTimes says where the group's commit and Empty times come from:
	// "exact" (read from __consumer_offsets) or "bounded" (from record
	// timestamps); empty for a group that was not proven (no topics).
	CommitTimes string `json:"commitTimes,omitempty"`
	// OffsetsTopicReason says why __consumer_offsets was not read (Denied,
	// Absent, Undecodable, NotRead); empty when read or not asked.
	OffsetsTopicReason string `json:"offsetsTopicReason,omitempty"`
	// Workloads consume the group, surest first (at most
	// maxScanWorkloads), as a connection's status.unguardedGroups lists
	// them; present only when the cluster was read (a kubeconfig).
	Workloads *[]rgv1.GroupWorkload `json:"workloads,omitempty"`
}

// maxScanWorkloads is how many workloads a group lists in the JSON, as in
// a connection's status.
const maxScanWorkloads = 10

// tableWorkloads is how many workloads the table's column names.
const tableWorkloads = 3

func groupJSON(j proof.Judgement, protocolType string) scanGroupJSON {
	g := scanGroupJSON{
		Group: j.Group, State: j.State, Protocol: j.Protocol, ProtocolType: protocolType,
		Topics: j.Topics, Verdict: string(j.Verdict), Reasons: j.Reasons, ExpiredRecords: j.ExpiredRecords,
	}
	if g.Topics == nil {
		g.Topics = []string{}
	}
	if g.Reasons == nil {
		g.Reasons = []string{}
	}
	if j.HasHeadroom {
		s := j.RecoveryHeadroom.Round(time.Second).String()
		g.RecoveryHeadroom = &s
	}
	g.CommitTimes, g.OffsetsTopicReason = commitTimes(j)
	return g
}

// commitTimes says where a judged group's commit and Empty times come
// from, exact or bounded, and why __consumer_offsets was not read; both
// empty for a group that was not proven.
func commitTimes(j proof.Judgement) (times, reason string) {
	switch {
	case j.Result == nil:
		return "", ""
	case j.Result.OffsetsTopic.ExactTimesRead():
		return "exact", ""
	}
	return "bounded", j.Result.OffsetsTopic.Reason
}

// commitTimesCell is the table's TIMES cell: exact, bounded, or bounded
// and why __consumer_offsets was not read (bounded:Denied).
func commitTimesCell(j proof.Judgement) string {
	times, reason := commitTimes(j)
	switch {
	case times == "":
		return "-"
	case reason != "":
		return times + ":" + reason
	}
	return times
}

func writeScanJSON(w io.Writer, res scanResult, index *workloads.Index) error {
	doc := scanJSON{Groups: []scanGroupJSON{}}
	for _, j := range res.judgements {
		g := groupJSON(j, res.protocolTypes[j.Group])
		if index != nil {
			ws := index.Match(j.Group, res.members[j.Group]).StatusWorkloads(maxScanWorkloads)
			if ws == nil {
				ws = []rgv1.GroupWorkload{}
			}
			g.Workloads = &ws
		}
		doc.Groups = append(doc.Groups, g)
	}
	for _, f := range res.failures {
		doc.Failures = append(doc.Failures, f.Reason+": "+f.Message)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// protocolText is classic/consumer, classic/simple, consumer (KIP-848) or
// streams.
func protocolText(protocol, protocolType string) string {
	switch {
	case protocol == "":
		return "unknown"
	case protocol != proof.ProtocolClassic:
		return protocol
	case protocolType == "":
		return "classic/simple"
	}
	return "classic/" + protocolType
}

// workloadsCell is the table's WORKLOADS cell: the first tableWorkloads
// matched, Kind/namespace/name (Confidence), and how many more.
func workloadsCell(m workloads.GroupMatch) string {
	if len(m.Workloads) == 0 {
		return "-"
	}
	var cells []string
	for i, wm := range m.Workloads {
		if i == tableWorkloads {
			cells = append(cells, fmt.Sprintf("+%d", len(m.Workloads)-i))
			break
		}
		c := fmt.Sprintf("%s/%s/%s (%s", wm.Workload.Kind, wm.Workload.Namespace, wm.Workload.Name, wm.Confidence)
		if wm.Parked && wm.Confidence < workloads.Certain {
			c += ", parked"
		}
		cells = append(cells, c+")")
	}
	return strings.Join(cells, ", ")
}

func writeScanTable(w io.Writer, res scanResult, index *workloads.Index, color bool) error {
	c := palette{on: color}
	counts := map[proof.Verdict]int{}
	for _, j := range res.judgements {
		counts[j.Verdict]++
	}
	fmt.Fprintf(w, "%d groups: %d Violated, %d Unknown, %d Proven (worst first)\n\n",
		len(res.judgements), counts[proof.Violated], counts[proof.Unknown], counts[proof.Proven])
	if len(res.judgements) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header := "GROUP\tSTATE\tPROTOCOL\tTOPICS\tVERDICT\tREASONS\tEXPIRED\tHEADROOM\tTIMES"
		if index != nil {
			header += "\tWORKLOADS"
		}
		fmt.Fprintln(tw, header)
		for _, j := range res.judgements {
			headroom := "-"
			if j.HasHeadroom {
				headroom = proof.FormatDuration(j.RecoveryHeadroom)
			}
			topics := strings.Join(j.Topics, ",")
			if topics == "" {
				topics = "-"
			}
			reasons := strings.Join(j.Reasons, ",")
			if reasons == "" {
				reasons = "-"
			}
			state := j.State
			if state == "" {
				state = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", j.Group, state, protocolText(j.Protocol, res.protocolTypes[j.Group]),
				topics, c.verdict(j.Verdict), reasons, j.ExpiredRecords, headroom, commitTimesCell(j))
			if index != nil {
				fmt.Fprintf(tw, "\t%s", workloadsCell(index.Match(j.Group, res.members[j.Group])))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, f := range res.failures {
		fmt.Fprintf(w, "\nnot read: %s: %s\n", f.Reason, f.Message)
	}
	// Why commit times are bounded, once for the scan (one pass read the
	// topic for every group): the first group that says so.
	for _, j := range res.judgements {
		if r := j.Result; r != nil && r.OffsetsTopic.Reason != "" {
			fmt.Fprintf(w, "\ncommit and Empty times bounded, not exact (%s): %s\n", r.OffsetsTopic.Reason, r.OffsetsTopic.Problem)
			if r.OffsetsTopic.Reason == proof.OffsetsTopicDenied {
				fmt.Fprintf(w, "grant Read on __consumer_offsets: %s\n", proof.GrantOffsetsTopicRead)
			}
			break
		}
	}
	return nil
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// policyName turns a group id into a Kubernetes name (DNS-1123 label).
func policyName(group string) string {
	n := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(group), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	if n == "" {
		n = "group"
	}
	return n
}

// writePolicies prints one ConsumerRetentionPolicy per group with topics,
// worst first, each preceded by what the scan found. With an index (a
// kubeconfig was given), a group the matcher maps to workloads gets a
// policy per namespace of theirs (one per workload when no shared labels
// select them alone), its selector theirs, and comments saying the
// evidence and how sure it is; else the selector is a placeholder (app:
// <name>) the team replaces with its consumers' labels.
func writePolicies(w io.Writer, o *scanOptions, res scanResult, index *workloads.Index) error {
	n := 0
	for _, j := range res.judgements {
		if len(j.Topics) == 0 {
			fmt.Fprintf(w, "# group %s: no committed offsets, no policy emitted (name its topics by hand)\n", j.Group)
			continue
		}
		for _, e := range emittedPolicies(o, j, res.members[j.Group], index) {
			p := rgv1.ConsumerRetentionPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: rgv1.GroupVersion.String(), Kind: "ConsumerRetentionPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.namespace},
				Spec: rgv1.ConsumerRetentionPolicySpec{
					GroupID:                   j.Group,
					Topics:                    j.Topics,
					RecoveryWindow:            metav1.Duration{Duration: o.recoveryWindow},
					Selector:                  metav1.LabelSelector{MatchLabels: e.matchLabels},
					AllowInfiniteRetention:    o.allowInfiniteRetention,
					AllowSizeBoundedRetention: o.allowSizeBoundedRetention,
				},
			}
			if o.ref != nil {
				p.Spec.Kafka.ConnectionRef = &rgv1.ConnectionReference{Kind: o.ref[0], Name: o.ref[1]}
			} else {
				p.Spec.Kafka.BootstrapServers = o.conn.bootstrapServers
			}
			doc, err := policyYAML(&p)
			if err != nil {
				return err
			}
			if n > 0 {
				fmt.Fprintln(w, "---")
			}
			n++
			fmt.Fprintf(w, "# group %s: %s", j.Group, j.Verdict)
			if len(j.Reasons) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(j.Reasons, ", "))
			}
			if j.ExpiredRecords > 0 {
				fmt.Fprintf(w, ", %s expired", proof.Plural(j.ExpiredRecords, "record"))
			}
			fmt.Fprintln(w)
			for _, c := range e.comments {
				fmt.Fprintln(w, "# "+c)
			}
			if o.ref == nil && (o.conn.tls || o.conn.tlsCA != "" || o.conn.saslMechanism != "") {
				fmt.Fprintln(w, "# Add spec.kafka.tls and spec.kafka.sasl (Secrets), or use --emit-connection-ref.")
			}
			if _, err := w.Write(doc); err != nil {
				return err
			}
		}
	}
	return nil
}

// emittedPolicy is one policy --emit-policies prints for a group.
type emittedPolicy struct {
	name, namespace string
	matchLabels     map[string]string
	comments        []string
}

// maxEvidenceLines bounds the evidence listed per workload.
const maxEvidenceLines = 5

// emittedPolicies lays out a group's policies: one per Selection of the
// workloads the index matches, or the placeholder skeleton.
func emittedPolicies(o *scanOptions, j proof.Judgement, members []proof.GroupMember, index *workloads.Index) []emittedPolicy {
	name := policyName(j.Group)
	placeholder := map[string]string{"app": name}
	var m workloads.GroupMatch
	if index != nil {
		m = index.Match(j.Group, members)
	}
	var unplaced []string
	for _, u := range m.Unplaced {
		unplaced = append(unplaced, fmt.Sprintf("Member %s at %s is no pod of a workload read (outside the namespaces read "+
			"or the cluster, behind NAT, host network, or a bare pod).", clientName(u.ClientID), hostText(u)))
	}
	if len(m.Workloads) == 0 {
		e := emittedPolicy{name: name, namespace: o.emitNamespace, matchLabels: placeholder}
		if index != nil {
			e.comments = append(e.comments, "No workload in the namespaces read has a pod that is a live member of the group or "+
				"configuration that names it.")
			e.comments = append(e.comments, unplaced...)
		}
		e.comments = append(e.comments, "Set spec.selector to the pod labels of the group's consumers before applying.")
		return []emittedPolicy{e}
	}
	byRef := make(map[workloads.Ref]workloads.Match, len(m.Workloads))
	for _, wm := range m.Workloads {
		byRef[wm.Workload] = wm
	}
	sels := index.Selections(m.Workloads)
	perNS := map[string]int{}
	for _, s := range sels {
		perNS[s.Namespace]++
	}
	var out []emittedPolicy
	for i, s := range sels {
		e := emittedPolicy{name: name, namespace: s.Namespace, matchLabels: s.MatchLabels}
		if perNS[s.Namespace] > 1 {
			e.name = policyName(j.Group + "-" + s.Workloads[0].Name)
		}
		surest := workloads.Confidence(0)
		for _, ref := range s.Workloads {
			wm := byRef[ref]
			surest = max(surest, wm.Confidence)
			e.comments = append(e.comments, fmt.Sprintf("Consumed by %s (%s):", ref, wm.Confidence))
			for k, ev := range wm.Evidence {
				if k == maxEvidenceLines {
					e.comments = append(e.comments, fmt.Sprintf("  and %d more", len(wm.Evidence)-k))
					break
				}
				e.comments = append(e.comments, fmt.Sprintf("  %s [%s, %s]", ev, ev.Kind, ev.Confidence))
			}
			if wm.Parked && wm.Confidence < workloads.Certain {
				e.comments = append(e.comments, "  parked (no pods by its spec): matched by its configuration only")
			}
		}
		if len(e.matchLabels) == 0 {
			e.matchLabels = placeholder
			e.comments = append(e.comments, fmt.Sprintf("%s's pod template has no labels to select: add one, then set spec.selector to it.", s.Workloads[0]))
		}
		if len(s.AlsoSelects) > 0 {
			also := make([]string, len(s.AlsoSelects))
			for k, r := range s.AlsoSelects {
				also[k] = r.String()
			}
			e.comments = append(e.comments, fmt.Sprintf("The selector also selects %s: that policy would guard them too.", strings.Join(also, ", ")))
		}
		if surest < workloads.Certain {
			e.comments = append(e.comments, "No live member of the group was seen in the workload's pods: check the match before applying.")
		}
		if i == 0 {
			e.comments = append(e.comments, unplaced...)
		}
		out = append(out, e)
	}
	return out
}

func clientName(id string) string {
	if id == "" {
		return "(no client ID)"
	}
	return "client " + id
}

func hostText(m proof.GroupMember) string {
	if m.Host.IsValid() {
		return m.Host.String()
	}
	if m.ClientHost == "" {
		return "an unknown address"
	}
	return fmt.Sprintf("%q", m.ClientHost)
}

// policyYAML renders a policy without the empty status and creation time a
// typed object carries.
func policyYAML(p *rgv1.ConsumerRetentionPolicy) ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
