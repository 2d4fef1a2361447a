package proof

import (
	"math"
	"strconv"
	"testing"
	"time"
)

// The one reading of a config value, under every shape a broker's
// DescribeConfigs answer gives it: absent (an old broker, kfake), null,
// padded, not of the asked type, Kafka's -1 and Long.MAX. Seeds 000-003
// read retention.ms, cleanup.policy, delete.retention.ms,
// message.timestamp.* and offsets.retention.minutes through it; every one
// of these rows is a value the proof, the observer or the status would
// otherwise read by a rule of its own. Unknown is false, never a default.
func TestConfigValueReading(t *testing.T) {
	val := func(s string) ConfigValue { return ConfigValue{Present: true, Value: s} }
	maxMs := strconv.FormatInt(math.MaxInt64, 10)
	cases := []struct {
		name string
		v    ConfigValue

		text          string
		textOK        bool
		n             int64
		intOK         bool
		millis        time.Duration
		millisOK      bool
		unbounded     bool
		logAppendTime bool
		isFalse       bool
		compacts      bool
	}{
		{name: "absent: unknown", v: ConfigValue{}},
		{name: "null: unknown", v: ConfigValue{Present: true, Null: true, Value: "604800000"}},
		{name: "a week of milliseconds", v: val("604800000"),
			text: "604800000", textOK: true, n: 604800000, intOK: true, millis: 7 * 24 * time.Hour, millisOK: true},
		{name: "padded: trimmed, as Kafka's ConfigDef trims", v: val(" 86400000\t"),
			text: "86400000", textOK: true, n: 86400000, intOK: true, millis: 24 * time.Hour, millisOK: true},
		{name: "zero", v: val("0"), text: "0", textOK: true, intOK: true, millisOK: true},
		{name: "-1: an integer, no duration (unbounded retention)", v: val("-1"),
			text: "-1", textOK: true, n: -1, intOK: true},
		{name: "Long.MAX: saturates, and is unbounded", v: val(maxMs),
			text: maxMs, textOK: true, n: math.MaxInt64, intOK: true, millis: math.MaxInt64, millisOK: true, unbounded: true},
		{name: "beyond int64: unknown", v: val("9223372036854775808"), text: "9223372036854775808", textOK: true},
		{name: "not a number: unknown", v: val("7d"), text: "7d", textOK: true},
		{name: "empty: unknown as a number", v: val(""), textOK: true},
		{name: "LogAppendTime, any case", v: val("logappendtime"), text: "logappendtime", textOK: true, logAppendTime: true},
		{name: "CreateTime", v: val("CreateTime"), text: "CreateTime", textOK: true},
		{name: "false, padded and capitalised", v: val(" False "), text: "False", textOK: true, isFalse: true},
		{name: "null false is not false", v: ConfigValue{Present: true, Null: true, Value: "false"}},
		{name: "compact", v: val("compact"), text: "compact", textOK: true, compacts: true},
		{name: "delete,compact, padded and capitalised", v: val(" Delete , COMPACT"), text: "Delete , COMPACT", textOK: true, compacts: true},
		{name: "delete", v: val("delete"), text: "delete", textOK: true},
		{name: "a policy naming an unknown item: unknown, not compacting", v: val("compact,archive"), text: "compact,archive", textOK: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if s, ok := tc.v.Text(); s != tc.text || ok != tc.textOK {
				t.Errorf("Text() = %q, %v; want %q, %v", s, ok, tc.text, tc.textOK)
			}
			if n, ok := tc.v.Int(); n != tc.n || ok != tc.intOK {
				t.Errorf("Int() = %d, %v; want %d, %v", n, ok, tc.n, tc.intOK)
			}
			if p := tc.v.IntOrNil(); (p != nil) != tc.intOK || (p != nil && *p != tc.n) {
				t.Errorf("IntOrNil() = %v; want %d when known (%v)", p, tc.n, tc.intOK)
			}
			if d, ok := tc.v.Millis(); d != tc.millis || ok != tc.millisOK {
				t.Errorf("Millis() = %v, %v; want %v, %v", d, ok, tc.millis, tc.millisOK)
			}
			if got := tc.v.Unbounded(); got != tc.unbounded {
				t.Errorf("Unbounded() = %v; want %v", got, tc.unbounded)
			}
			if got := tc.v.LogAppendTime(); got != tc.logAppendTime {
				t.Errorf("LogAppendTime() = %v; want %v", got, tc.logAppendTime)
			}
			if got := tc.v.Is("false"); got != tc.isFalse {
				t.Errorf(`Is("false") = %v; want %v`, got, tc.isFalse)
			}
			if got := tc.v.Compacts(); got != tc.compacts {
				t.Errorf("Compacts() = %v; want %v", got, tc.compacts)
			}
		})
	}
}
