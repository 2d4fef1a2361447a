package clients

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// The auto.offset.reset table of docs/concepts.md ("What each client does
// with auto.offset.reset"), pinned row by row: each value is given to the
// real client, on a real broker, in the two situations the proof exists
// for — the group has no committed offset for the partition (a new group,
// or offsets.retention.minutes expired them: seed 003), and the committed
// offset is below the log start (retention passed it: seed 000).
//
// The partition holds offsets 0..6: 0..2 stamped two hours ago, 3..6 now;
// records below 1 are deleted (log start 1, log end 7). So "earliest"
// starts at 1, "latest" at 7 (the client reads nothing), by_duration:PT1H
// at 3 (the first record of the last hour).

const (
	tableTopic    = "ledger"
	tableLogStart = 1
	tableLogEnd   = 7
	tableHourAgo  = 3 // the first offset stamped within the last hour
)

// situations of the table's columns.
const (
	noCommit   = "no committed offset"
	outOfRange = "committed offset 0 below log start 1"
)

// expect is one cell: the client fails loudly (its error named), rejects
// the value as a configuration error, or starts at an offset silently.
type expect struct {
	fails  string // the error: a Java exception, a librdkafka message
	config bool   // rejected as a configuration error
	start  int64  // where it starts reading (tableLogEnd: nothing read)
}

func fails(err string) expect { return expect{fails: err} }

var rejected = expect{config: true}

func startsAt(off int64) expect { return expect{start: off} }

func (e expect) String() string {
	switch {
	case e.config:
		return "configuration error"
	case e.fails != "":
		return "fails: " + e.fails
	case e.start == tableLogEnd:
		return "starts at the log end (skips silently)"
	}
	return fmt.Sprintf("starts at offset %d (silently)", e.start)
}

type tableRow struct {
	value      string // "": unset
	noCommit   expect
	outOfRange expect
}

// tableBroker starts the newest broker line with the table's partition.
// The clients' behaviour does not depend on the broker line: the table
// runs on one.
func tableBroker(t *testing.T) *apachekafka.Broker {
	t.Helper()
	b := apachekafka.Start(t, apachekafka.Newest(t))
	b.CreateTopic(t, tableTopic, 1, nil)
	old := time.Now().Add(-2 * time.Hour)
	var recs []*kgo.Record
	for range tableHourAgo {
		recs = append(recs, &kgo.Record{Topic: tableTopic, Partition: 0, Value: []byte("old"), Timestamp: old})
	}
	b.ProduceRecords(t, recs...)
	b.ProduceTo(t, tableTopic, 0, tableLogEnd-tableHourAgo)
	b.DeleteRecords(t, tableTopic, 0, tableLogStart)
	return b
}

// eachCell runs each row in both situations, with a fresh group each (the
// second with offset 0 committed first).
func eachCell(t *testing.T, b *apachekafka.Broker, client string, rows []tableRow, cell func(t *testing.T, group, value string, want expect)) {
	for i, row := range rows {
		name := row.value
		if name == "" {
			name = "unset"
		}
		t.Run(name, func(t *testing.T) {
			for _, s := range []struct {
				situation string
				want      expect
			}{{noCommit, row.noCommit}, {outOfRange, row.outOfRange}} {
				group := fmt.Sprintf("%s-%d-%t", client, i, s.situation == outOfRange)
				if s.situation == outOfRange {
					b.Commit(t, group, tableTopic, 0, 0)
				}
				t.Run(strings.ReplaceAll(s.situation, " ", "_"), func(t *testing.T) {
					cell(t, group, row.value, s.want)
				})
				if s.want.config {
					break // a rejected value never reaches the broker
				}
			}
		})
	}
}

// TestJavaAutoOffsetResetValues: the official Java consumer (kafka-clients
// 4.4) accepts earliest, latest, none and by_duration:<ISO-8601> (KIP-1106,
// 4.0), in lower case only (ConfigDef trims, then matches exactly): NONE
// and Earliest are ConfigExceptions, and so is librdkafka's error. Only
// none fails loudly.
func TestJavaAutoOffsetResetValues(t *testing.T) {
	t.Parallel()
	b := tableBroker(t)
	rows := []tableRow{
		{"", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"latest", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"earliest", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"by_duration:PT1H", startsAt(tableHourAgo), startsAt(tableHourAgo)},
		{"none", fails("NoOffsetForPartitionException"), fails("OffsetOutOfRangeException")},
		{" none ", fails("NoOffsetForPartitionException"), fails("OffsetOutOfRangeException")},
		{"NONE", rejected, rejected},
		{"None", rejected, rejected},
		{"Earliest", rejected, rejected},
		{"error", rejected, rejected},
		{"smallest", rejected, rejected},
	}
	eachCell(t, b, "java", rows, func(t *testing.T, group, value string, want expect) {
		run := Java(t, ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{tableTopic},
			Reset: value, AutoCommit: "false", Idle: 3 * time.Second})
		fatal := run.All("fatal")
		switch {
		case want.config:
			if run.Code != 64 || len(fatal) != 1 || fatal[0].Str("exception") != "ConfigException" {
				t.Fatalf("auto.offset.reset=%q: want a ConfigException (exit 64):\n%s", value, run)
			}
		case want.fails != "":
			if run.Code != 1 || len(fatal) != 1 || fatal[0].Str("exception") != want.fails {
				t.Fatalf("auto.offset.reset=%q: want %s (exit 1):\n%s", value, want.fails, run)
			}
			if run.Consumed(tableTopic, 0) != 0 {
				t.Fatalf("auto.offset.reset=%q consumed records before failing:\n%s", value, run)
			}
		default:
			if run.Code != 0 {
				t.Fatalf("auto.offset.reset=%q: want exit 0:\n%s", value, run)
			}
			got := int64(tableLogEnd)
			if n := run.Consumed(tableTopic, 0); n > 0 {
				got = run.One(t, "first record", tableTopic, 0).Int("offset")
			}
			// The client's own position, committed on exit.
			if c := run.Committed(tableTopic, 0); c != tableLogEnd {
				t.Errorf("auto.offset.reset=%q: committed %d on exit, want the log end %d", value, c, tableLogEnd)
			}
			if got != want.start {
				t.Fatalf("auto.offset.reset=%q: started at %d, want %s:\n%s", value, got, want, run)
			}
		}
	})
}

// TestLibrdkafkaAutoOffsetResetValues: librdkafka (kcat, Debian's
// librdkafka) matches its values case-insensitively: smallest, earliest,
// beginning, largest, latest, end and error. error fails loudly; none and
// by_duration are configuration errors.
func TestLibrdkafkaAutoOffsetResetValues(t *testing.T) {
	t.Parallel()
	b := tableBroker(t)
	const noOffset, oor = "no previously committed offset", "Offset out of range"
	rows := []tableRow{
		{"", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"latest", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"largest", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"end", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"earliest", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"smallest", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"beginning", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"EARLIEST", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"error", fails(noOffset), fails(oor)},
		{"ERROR", fails(noOffset), fails(oor)},
		{"none", rejected, rejected},
		{"by_duration:PT1H", rejected, rejected},
	}
	eachCell(t, b, "librdkafka", rows, func(t *testing.T, group, value string, want expect) {
		var props []string
		if value != "" {
			props = append(props, "auto.offset.reset="+value)
		}
		run := Kcat(t, b.Addrs(), group, tableTopic, props...)
		invalid := strings.Contains(run.Stderr, `Invalid value "`+value+`" for configuration property "auto.offset.reset"`)
		switch {
		case want.config:
			if run.Code == 0 || !invalid {
				t.Fatalf("auto.offset.reset=%q: want librdkafka's configuration error:\n%s", value, run)
			}
		case want.fails != "":
			if run.Code == 0 || !strings.Contains(run.Stderr, want.fails) || len(run.Offsets[0]) != 0 {
				t.Fatalf("auto.offset.reset=%q: want a failure naming %q and nothing read:\n%s", value, want.fails, run)
			}
		default:
			if run.Code != 0 || invalid {
				t.Fatalf("auto.offset.reset=%q: want exit 0:\n%s", value, run)
			}
			got := int64(tableLogEnd)
			if offs := run.Offsets[0]; len(offs) > 0 {
				got = offs[0]
			}
			if got != want.start {
				t.Fatalf("auto.offset.reset=%q: started at %d, want %s:\n%s", value, got, want, run)
			}
		}
	})
}

// TestFranzGoAutoOffsetResetValues: franz-go has no auto.offset.reset
// string (kgo.ConsumeResetOffset takes an Offset; kgo.NoResetOffset()
// refuses to reset); test/consumer maps the variable case-insensitively:
// earliest, latest, and none or error to NoResetOffset, which fails
// loudly. Anything else is its configuration error (exit 64).
func TestFranzGoAutoOffsetResetValues(t *testing.T) {
	t.Parallel()
	b := tableBroker(t)
	rows := []tableRow{
		{"", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"latest", startsAt(tableLogEnd), startsAt(tableLogEnd)},
		{"earliest", startsAt(tableLogStart), startsAt(tableLogStart)},
		{"none", fails("auto.offset.reset=none"), fails("out of range")},
		{"NONE", fails("auto.offset.reset=none"), fails("out of range")},
		{"error", fails("auto.offset.reset=none"), fails("out of range")},
		{"by_duration:PT1H", rejected, rejected},
	}
	eachCell(t, b, "franz", rows, func(t *testing.T, group, value string, want expect) {
		run := Franz(t, ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{tableTopic},
			Reset: value, AutoCommit: "false", Idle: 3 * time.Second})
		fatal := run.All("fatal")
		switch {
		case want.config:
			if run.Code != 64 {
				t.Fatalf("auto.offset.reset=%q: want a configuration error (exit 64):\n%s", value, run)
			}
		case want.fails != "":
			if run.Code != 1 || len(fatal) != 1 || !strings.Contains(fatal[0].Str("error"), want.fails) || run.Consumed(tableTopic, 0) != 0 {
				t.Fatalf("auto.offset.reset=%q: want a fatal error naming %q (exit 1), nothing consumed:\n%s", value, want.fails, run)
			}
		default:
			if run.Code != 0 {
				t.Fatalf("auto.offset.reset=%q: want exit 0:\n%s", value, run)
			}
			got := int64(tableLogEnd)
			if n := run.Consumed(tableTopic, 0); n > 0 {
				got = run.One(t, "first record", tableTopic, 0).Int("offset")
			}
			if got != want.start {
				t.Fatalf("auto.offset.reset=%q: started at %d, want %s:\n%s", value, got, want, run)
			}
		}
	})
}
