package proof

import (
	"strings"
	"testing"
)

// Issue 22: a partition added to the topic (no committed offset, log start
// 0) is proven — nothing expired — but with spec.consumer the client is
// held to auto.offset.reset=none, which throws
// NoOffsetForPartitionException there (pinned on the real Java client by
// test/realkafka/clients). The proof says the group needs a seek instead
// of calling it a fresh start; without spec.consumer it stays silent, and a
// consumer that resumes from its cursor seeks by itself.
func TestSeekRequiredForAPartitionWithoutCommittedOffset(t *testing.T) {
	obs := observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 35, 35), part(2, 0, 3, NoOffset)))
	now := obs.ObservedAt

	held := policy("orders")
	held.ResetFailsLoudly = true
	r := Evaluate(obs, held, now)
	if r.Verdict != Proven {
		t.Fatalf("verdict %s, want Proven: nothing expired", r.Verdict)
	}
	var seek *Warning
	for i := range r.Warnings {
		if r.Warnings[i].Type == WarningSeekRequired {
			seek = &r.Warnings[i]
		}
	}
	if seek == nil {
		t.Fatalf("no %s warning for orders[2] without a committed offset: %+v", WarningSeekRequired, r.Warnings)
	}
	for _, s := range []string{"orders[2]", "NoOffsetForPartitionException", "--to-earliest", "--group " + held.GroupID} {
		if !strings.Contains(seek.Message, s) {
			t.Errorf("warning %q lacks %q", seek.Message, s)
		}
	}
	if len(seek.Message) > 256 {
		t.Errorf("warning of %d bytes: the status keeps 256", len(seek.Message))
	}
	if ConfigWarning(seek.Type) {
		t.Errorf("%s is a risk at the next start, not configuration advice: admission must repeat it", seek.Type)
	}

	for name, p := range map[string]Policy{
		"without spec.consumer": policy("orders"),
		"resuming from the cursor": func() Policy {
			p := held
			p.Cursor = &CursorPolicy{ResumeFrom: ResumeFromCursor}
			return p
		}(),
	} {
		for _, w := range Evaluate(obs, p, now).Warnings {
			if w.Type == WarningSeekRequired {
				t.Errorf("%s: unexpected %s: %s", name, w.Type, w.Message)
			}
		}
	}

	// Every partition committed: no warning.
	all := observation(topic("orders", part(0, 0, 40, 40)))
	for _, w := range Evaluate(all, held, all.ObservedAt).Warnings {
		if w.Type == WarningSeekRequired {
			t.Errorf("every partition committed: unexpected %s", w.Message)
		}
	}
}
