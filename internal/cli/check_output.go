package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
)

// checkJSON is `check --output json`: the fields of status.proof, plus the
// group, the window and one line per partition.
type checkJSON struct {
	Group          string `json:"group"`
	RecoveryWindow string `json:"recoveryWindow"`
	*rgv1.ProofStatus
	Partitions []partitionJSON `json:"partitions"`
}

type partitionJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // -1 when none
	// Cursor is the business cursor (the next offset the business will
	// process); -1 when none (no row, or no --cursor-driver).
	Cursor          int64      `json:"cursor"`
	CursorUpdatedAt *time.Time `json:"cursorUpdatedAt,omitempty"`
	// ReplayRecords and AheadRecords compare the group's committed offset
	// with the cursor: records a restart from the group reads again, or
	// skips.
	ReplayRecords  int64 `json:"replayRecords,omitempty"`
	AheadRecords   int64 `json:"aheadRecords,omitempty"`
	LogStart       int64 `json:"logStart"`
	LogEnd         int64 `json:"logEnd"`
	Lag            int64 `json:"lag"`
	ExpiredRecords int64 `json:"expiredRecords"`
	// HeadroomSeconds is null when it cannot be computed.
	HeadroomSeconds *int64 `json:"headroomSeconds"`
	// OffsetExpiresAt is when the committed offset may expire, for offsets
	// that expire per commit and whose commit could be dated (a lower
	// bound unless offsetExpiryExact).
	OffsetExpiresAt   *time.Time `json:"offsetExpiresAt,omitempty"`
	OffsetExpiryExact bool       `json:"offsetExpiryExact,omitempty"`
	Verdict           string     `json:"verdict"`
	Reason            string     `json:"reason,omitempty"`
}

func writeCheckJSON(w io.Writer, o *checkOptions, obs proof.Observation, res proof.Result) error {
	doc := checkJSON{
		Group:          o.group,
		RecoveryWindow: o.recoveryWindow.String(),
		ProofStatus:    proofstatus.From(res, obs),
		Partitions:     []partitionJSON{},
	}
	for _, p := range res.Partitions {
		pj := partitionJSON{
			Topic: p.Topic, Partition: p.Partition, Committed: p.Committed, Cursor: p.Cursor,
			ReplayRecords: p.ReplayRecords, AheadRecords: p.AheadRecords,
			LogStart: p.LogStart, LogEnd: p.LogEnd, Lag: p.Lag,
			ExpiredRecords: p.ExpiredRecords, Verdict: string(p.Verdict), Reason: p.Reason,
		}
		if p.HasHeadroom {
			s := int64(p.Headroom.Seconds())
			pj.HeadroomSeconds = &s
		}
		if !p.CursorUpdatedAt.IsZero() {
			at := p.CursorUpdatedAt.UTC()
			pj.CursorUpdatedAt = &at
		}
		if p.HasOffsetExpiry {
			at := p.OffsetExpiresAt.UTC().Truncate(time.Second)
			pj.OffsetExpiresAt, pj.OffsetExpiryExact = &at, p.OffsetExpiryExact
		}
		doc.Partitions = append(doc.Partitions, pj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// useColor: colour only on a terminal, never with NO_COLOR (no-color.org).
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type palette struct{ on bool }

func (p palette) wrap(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (p palette) verdict(v proof.Verdict) string {
	switch v {
	case proof.Proven:
		return p.wrap("32", string(v))
	case proof.Violated:
		return p.wrap("31;1", string(v))
	default:
		return p.wrap("33;1", string(v))
	}
}

func writeCheckTable(w io.Writer, o *checkOptions, obs proof.Observation, res proof.Result, color bool) error {
	c := palette{on: color}
	var b strings.Builder

	head := fmt.Sprintf("%s  group %s  recovery window %s", c.verdict(res.Verdict), o.group, proof.FormatDuration(o.recoveryWindow))
	if res.ProofID != "" {
		head += "  proofID " + res.ProofID
	}
	b.WriteString(head + "\n")
	state := obs.Group.State
	if state == "" {
		state = "unknown"
	}
	fmt.Fprintf(&b, "group state %s", state)
	if obs.Group.Protocol != "" {
		fmt.Fprintf(&b, " (%s protocol)", obs.Group.Protocol)
	}
	if v := obs.OffsetsRetentionMinutes; v.Present && !v.Null {
		fmt.Fprintf(&b, ", offsets.retention.minutes %s", v.Value)
	}
	b.WriteString("\n")
	if line := expiryLine(obs, res); line != "" {
		b.WriteString(line + "\n")
	}
	if line := cursorLine(o, res); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")

	// The clauses: what holds and what does not.
	for _, cond := range res.Conditions {
		if cond.Type == proof.ClauseReady {
			continue
		}
		mark := c.wrap("32", "ok")
		switch cond.Status {
		case proof.ConditionFalse:
			mark = c.wrap("31;1", "FAIL")
		case proof.ConditionUnknown:
			mark = c.wrap("33;1", "??")
		}
		fmt.Fprintf(&b, "  %-4s %-22s %s\n", mark, cond.Type, cond.Message)
	}
	b.WriteString("\n")

	if len(obs.Topics) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tRETENTION.MS\tRETENTION.BYTES\tCLEANUP.POLICY")
		for _, t := range obs.Topics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, configText(t.RetentionMs, true), configText(t.RetentionBytes, false), configText(t.CleanupPolicy, false))
		}
		tw.Flush()
		b.WriteString("\n")
	}

	if len(res.Partitions) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
		if res.Cursor != nil {
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURSOR\tCOMMITTED\tGAP\tLOG START\tLOG END\tLAG\tEXPIRED\tHEADROOM\tVERDICT\t")
		} else {
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG START\tLOG END\tLAG\tEXPIRED\tHEADROOM\tVERDICT\t")
		}
		for _, p := range res.Partitions {
			committed := offsetText(p.Committed)
			headroom := "-"
			if p.HasHeadroom {
				headroom = proof.FormatDuration(p.Headroom.Round(time.Millisecond))
			}
			verdict := "in range"
			if p.Reason != "" {
				verdict = p.Reason
			}
			if p.Verdict != proof.Proven {
				verdict = c.wrap("31", verdict)
			}
			if res.Cursor != nil {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", p.Topic, p.Partition, offsetText(p.Cursor), committed, gapText(p),
					p.LogStart, p.LogEnd, p.Lag, p.ExpiredRecords, headroom, verdict)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", p.Topic, p.Partition, committed, p.LogStart, p.LogEnd, p.Lag, p.ExpiredRecords, headroom, verdict)
		}
		tw.Flush()
		b.WriteString("\n")
	}

	if len(res.Violations) > 0 {
		b.WriteString(c.wrap("1", "Violations") + "\n")
		for _, v := range res.Violations {
			fmt.Fprintf(&b, "  %s: %s\n", c.wrap("31", v.Reason), v.Message)
		}
		b.WriteString("\n")
	}
	if len(res.Warnings) > 0 {
		b.WriteString(c.wrap("1", "Warnings") + "\n")
		for _, wn := range res.Warnings {
			fmt.Fprintf(&b, "  %s: %s\n", c.wrap("33", wn.Type), wn.Message)
		}
		b.WriteString("\n")
	}
	if res.ExpiredRecords > 0 {
		fmt.Fprintf(&b, "%s expired before group %s read them.\n", proof.Plural(res.ExpiredRecords, "record"), o.group)
	}
	switch {
	case res.Verdict == proof.Violated && cursorLoss(res):
		b.WriteString("Do not start the consumer as it is: its business cursor is not inside the retained log, or its group's offsets\n" +
			"are ahead of it. Reconcile the records the cursor never reached from their source, or restart from the cursor\n" +
			"(seek to it, or reset the group's offsets to it), then check again.\n")
	case res.Verdict == proof.Violated:
		b.WriteString("Do not start the consumer as it is: it would resume from a position that skips records.\n" +
			"Replay what expired from its source, or reset the group's offsets knowingly, then check again.\n")
	case res.Verdict == proof.Unknown:
		b.WriteString("Could not prove the group safe: fix what is reported above (connection, credentials, ACLs, the cursor query) and check again.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cursorLine says where the business cursor was read and how the group's
// offsets compare with it.
func cursorLine(o *checkOptions, res proof.Result) string {
	c := res.Cursor
	if c == nil {
		return ""
	}
	resume := "the consumer resumes from the group's offsets"
	if c.ResumeFrom == proof.ResumeFromCursor {
		resume = "the consumer resumes from its cursor"
	}
	return fmt.Sprintf("business cursor: %s read from %s; %s; a restart from the group replays %s and skips %s",
		proof.Plural(int64(c.Rows), "row"), o.cursorDriver, resume, proof.Plural(c.ReplayRecords, "record"), proof.Plural(c.AheadRecords, "record"))
}

// cursorLoss: a violation the business cursor decides.
func cursorLoss(res proof.Result) bool {
	for _, v := range res.Violations {
		if v.Clause == proof.ClauseCursorInRange {
			return true
		}
	}
	return false
}

func offsetText(v int64) string {
	if v == proof.NoOffset {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// gapText compares the group's committed offset with the cursor.
func gapText(p proof.PartitionResult) string {
	switch {
	case p.AheadRecords > 0:
		return "ahead " + strconv.FormatInt(p.AheadRecords, 10)
	case p.ReplayRecords > 0:
		return "replay " + strconv.FormatInt(p.ReplayRecords, 10)
	case p.Cursor == proof.NoOffset || p.Committed == proof.NoOffset:
		return "-"
	}
	return "0"
}

// expiryLine says on which clock the group's offsets expire and when the
// soonest may.
func expiryLine(obs proof.Observation, res proof.Result) string {
	e := res.OffsetExpiry
	var s string
	switch e.Clock {
	case proof.ExpiryClockGroupEmpty:
		s = "offsets expire offsets.retention.minutes after the group becomes Empty"
		if obs.Group.State == proof.GroupStateEmpty && !obs.Group.EmptySince.IsZero() {
			// A bound that is not exact is a lower one: it became Empty
			// after that.
			s += " (Empty since "
			if !obs.Group.EmptySinceExact {
				s += "after "
			}
			s += obs.Group.EmptySince.UTC().Format(time.RFC3339)
			s += ")"
		}
	case proof.ExpiryClockLastCommit:
		s = "offsets expire offsets.retention.minutes after their own last commit"
	default:
		return ""
	}
	if e.HasSoonest {
		what := "the group's offsets"
		if e.Partition >= 0 {
			what = e.Topic + "[" + strconv.Itoa(int(e.Partition)) + "]"
		}
		s += "; soonest: " + what + " at " + e.Soonest.UTC().Format(time.RFC3339)
		if e.Exact {
			s += " (exact)"
		} else {
			s += " or later"
		}
	}
	switch r := obs.OffsetsTopic; {
	case r.ExactTimesRead():
		s += "; commit times read from __consumer_offsets"
	case r.Requested:
		s += "; commit times bounded, __consumer_offsets not read (" + r.Reason + ")"
	}
	return s
}

func configText(v proof.ConfigValue, duration bool) string {
	switch {
	case !v.Present:
		return "(unreadable)"
	case v.Null:
		return "(null)"
	}
	if duration {
		// Beyond time.Duration's range (about 292 years) the value stands
		// alone rather than wrap around.
		if d, ok := v.Millis(); ok && d > 0 && d < math.MaxInt64 {
			return v.Value + " (" + proof.FormatDuration(d) + ")"
		}
	}
	return v.Value
}
