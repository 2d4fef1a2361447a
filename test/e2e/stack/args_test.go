package stack

import (
	"slices"
	"testing"
)

// TestOverrideArgs: a shard's command line (make bench-scale -shards) is
// the main one with its flags replaced (never given twice: the last would win silently) and the new
// ones appended; the main one is left as it was.
func TestOverrideArgs(t *testing.T) {
	base := []string{"manager", "--leader-elect=true", "--metrics-bind-address=127.0.0.1:1", "--zap-log-level=info"}
	orig := slices.Clone(base)
	got := OverrideArgs(base, map[string]string{
		"--metrics-bind-address": "127.0.0.1:2",
		"--watch-label-selector": "retentionguard.io/shard notin (shard-0,shard-1)",
		"--enable-webhook":       "false",
	})
	want := []string{"manager", "--leader-elect=true", "--metrics-bind-address=127.0.0.1:2", "--zap-log-level=info",
		"--enable-webhook=false", "--watch-label-selector=" + "retentionguard.io/shard notin (shard-0,shard-1)"}
	if !slices.Equal(got, want) {
		t.Errorf("OverrideArgs:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(base, orig) {
		t.Errorf("OverrideArgs changed its input: %q", base)
	}
}
