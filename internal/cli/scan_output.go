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
}

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
	return g
}

func writeScanJSON(w io.Writer, res scanResult) error {
	doc := scanJSON{Groups: []scanGroupJSON{}}
	for _, j := range res.judgements {
		doc.Groups = append(doc.Groups, groupJSON(j, res.protocolTypes[j.Group]))
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

func writeScanTable(w io.Writer, res scanResult, color bool) error {
	c := palette{on: color}
	counts := map[proof.Verdict]int{}
	for _, j := range res.judgements {
		counts[j.Verdict]++
	}
	fmt.Fprintf(w, "%d groups: %d Violated, %d Unknown, %d Proven (worst first)\n\n",
		len(res.judgements), counts[proof.Violated], counts[proof.Unknown], counts[proof.Proven])
	if len(res.judgements) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL\tTOPICS\tVERDICT\tREASONS\tEXPIRED\tHEADROOM")
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", j.Group, state, protocolText(j.Protocol, res.protocolTypes[j.Group]),
				topics, c.verdict(j.Verdict), reasons, j.ExpiredRecords, headroom)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, f := range res.failures {
		fmt.Fprintf(w, "\nnot read: %s: %s\n", f.Reason, f.Message)
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
// worst first, each preceded by what the scan found. The selector is a
// placeholder (app: <name>) the team replaces with its consumers' labels.
func writePolicies(w io.Writer, o *scanOptions, res scanResult) error {
	n := 0
	for _, j := range res.judgements {
		if len(j.Topics) == 0 {
			fmt.Fprintf(w, "# group %s: no committed offsets, no policy emitted (name its topics by hand)\n", j.Group)
			continue
		}
		name := policyName(j.Group)
		p := rgv1.ConsumerRetentionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: rgv1.GroupVersion.String(), Kind: "ConsumerRetentionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.emitNamespace},
			Spec: rgv1.ConsumerRetentionPolicySpec{
				GroupID:                   j.Group,
				Topics:                    j.Topics,
				RecoveryWindow:            metav1.Duration{Duration: o.recoveryWindow},
				Selector:                  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
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
		fmt.Fprintln(w, "# Set spec.selector to the pod labels of the group's consumers before applying.")
		if o.ref == nil && (o.conn.tls || o.conn.tlsCA != "" || o.conn.saslMechanism != "") {
			fmt.Fprintln(w, "# Add spec.kafka.tls and spec.kafka.sasl (Secrets), or use --emit-connection-ref.")
		}
		if _, err := w.Write(doc); err != nil {
			return err
		}
	}
	return nil
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
