package cli

import (
	"testing"

	"github.com/retentionguard/retention-guard/internal/proof"
)

func TestConfigTextRetentionMs(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"259200000", "259200000 (72h (3d))"},
		{"-1", "-1"},
		// Beyond time.Duration (292 years): the value alone, not a
		// wrapped-around duration.
		{"9223372036854775807", "9223372036854775807"},
	} {
		if got := configText(proof.ConfigValue{Present: true, Value: c.value}, true); got != c.want {
			t.Errorf("configText(%s) = %q, want %q", c.value, got, c.want)
		}
	}
}
