package oracle

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// Knobs of a run (make oracle sets them): how many trials, from which seed,
// how many at once.
const (
	trialsEnv   = "ORACLE_TRIALS"
	seedEnv     = "ORACLE_SEED"
	parallelEnv = "ORACLE_PARALLEL"
	// onlyEnv runs one trial of the seed, by index (or a few, comma
	// separated): a failure's reproduction.
	onlyEnv = "ORACLE_TRIAL"
)

// Defaults for make test: a few trials, on both lines, at once.
const (
	defaultTrials   = 6
	defaultSeed     = 1
	defaultParallel = 6
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The trials are subtests that mostly wait for broker clocks: run as
	// many at once as asked, whatever GOMAXPROCS is, unless -parallel was
	// given.
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(envInt(parallelEnv, defaultParallel)))
	}
	os.Exit(m.Run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil && v > 0 {
		return v
	}
	return def
}

// TestOracle runs seeded scenarios on real brokers of every assembled line
// (one shared broker per line, offsets.retention.minutes=1) and holds the
// proof to what the restarted Java consumer really read: no Proven verdict
// may come back with a skipped record (seed 000: records deleted under the
// committed offset, earliest reset silently; seed 003: an Empty group's
// offsets expired, latest skipped silently). False alarms are counted and
// logged with their reasons.
func TestOracle(t *testing.T) {
	consumer, err := javaConsumer()
	if err != nil {
		t.Fatal(err)
	}
	trials := envInt(trialsEnv, defaultTrials)
	seed := uint64(envInt(seedEnv, defaultSeed))
	began := time.Now()

	brokers := map[string]*apachekafka.Broker{}
	var lines []string
	for _, d := range apachekafka.Dists(t) {
		// AsDeployed: each line's own default group coordinator (3.9's
		// Scala one, not the KIP-848 preview's), as users run it.
		// Every clock of its defaults scaled by one factor (scale_test.go).
		brokers[d.Line()] = apachekafka.Start(t, d, append([]apachekafka.Option{apachekafka.AsDeployed()}, scaledBroker(d.Line())...)...)
		lines = append(lines, d.Line())
	}

	kinds := newClusterKinds(t) // the kinds' own clusters, started when drawn
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	t.Run("trials", func(t *testing.T) {
		for i := range trials {
			if only := os.Getenv(onlyEnv); only != "" && !slices.Contains(strings.Split(only, ","), strconv.Itoa(i)) {
				continue
			}
			s := Generate(seed, i, lines)
			if leftOutOfMakeTest(s) {
				continue // TestOracleKinds runs it
			}
			t.Run(fmt.Sprintf("%d-%s-%s", i, s.Line, s.Group), func(t *testing.T) {
				t.Parallel()
				o := trial(t, kinds.broker(t, s, brokers[s.Line].Dist, brokers[s.Line]), s, consumer)
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				judgeTrial(t, s, o)
			})
		}
	})
	t.Logf("oracle: %s", summarize(outcomes, seed, time.Since(began)))
	judged := 0
	for _, o := range outcomes {
		if o.kind != inconclusive {
			judged++
		}
	}
	if judged*2 < len(outcomes) {
		t.Errorf("only %d of %d trials could be judged: the restarts came back after their windows (see the inconclusive trials)", judged, len(outcomes))
	}
}

// judgeTrial logs a trial's scenario and outcome, and fails it on a false
// Proven.
func judgeTrial(t *testing.T, s Scenario, o outcome) {
	t.Helper()
	t.Logf("%s\n  %s (%s)", s, o, o.took.Round(time.Second))
	if o.kind == warnedProven {
		t.Errorf("FALSE PROVEN, WARNED — the verdict was Proven, the consumer lost records, and the proof's own numbers (headroom or offsets expiry below the window) said it would, which should have made it Violated:\n  %s\n  reproduce: make oracle ORACLE_SEED=%d ORACLE_TRIALS=%d ORACLE_TRIAL=%d",
			o, s.Seed, s.Index+1, s.Index)
	}
	if rule := unprovable(s, o.tombstonesBehind); rule != "" && o.kind != inconclusive && o.kind != trueAlarm && o.kind != falseAlarm {
		// The verdict was Proven where Kafka lets the broker lose what
		// the group needs before it is back: the proof relied on
		// something it cannot know, and was right only by chance.
		t.Errorf("PROVEN WHERE NO SOUND PROOF COULD BE — %s:\n  %s\n  %s\n  reproduce: make oracle ORACLE_SEED=%d ORACLE_TRIALS=%d ORACLE_TRIAL=%d",
			rule, s, o, s.Seed, s.Index+1, s.Index)
	}
	if o.kind == falseProven {
		t.Errorf("FALSE PROVEN — the verdict was Proven and the consumer lost records:\n  %s\n  %s\n  reproduce: make oracle ORACLE_SEED=%d ORACLE_TRIALS=%d ORACLE_TRIAL=%d\nthe restarted consumer's log:\n%s",
			s, o, s.Seed, s.Index+1, s.Index, tail(o.consumerLog, 60))
	}
}

// summarize counts the outcomes, the reasons of the false alarms, and per
// reason how often its claim held (score_test.go).
func summarize(os []outcome, seed uint64, took time.Duration) string {
	counts := map[string]int{}
	alarms := map[string]int{}
	how := map[string]int{}
	for _, o := range os {
		counts[o.kind]++
		if o.kind == trueAlarm {
			how[o.alarm]++
		}
		if o.kind == falseAlarm {
			alarms[strings.Join(o.verdict.reasons(), "+")]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d trials in %s: %d true Proven, %d false Proven (%d silent, %d the proof's own warning predicted), %d true alarms (%d records lost, %d nothing lost but every claim held), %d false alarms, %d inconclusive",
		seed, len(os), took.Round(time.Second), counts[trueProven], counts[falseProven]+counts[warnedProven], counts[falseProven], counts[warnedProven],
		counts[trueAlarm], how[alarmLost], how[alarmClaims], counts[falseAlarm], counts[inconclusive])
	for _, r := range slices.Sorted(maps.Keys(alarms)) {
		fmt.Fprintf(&b, "\n  false alarm %s: %d", r, alarms[r])
	}
	// The product's default reads __consumer_offsets; a principal denied
	// it gets the bounds: the alarms apart, and by the topic's traffic
	// (drawTraffic: a quiet topic's segments roll on segment.ms alone).
	for _, read := range []bool{true, false} {
		in := func(s Scenario) bool { return s.ReadOffsetsTopic == read }
		alarms, judged := falseAlarms(os, in)
		fl := floorOf(os, in)
		fmt.Fprintf(&b, "\n  readOffsetsTopic=%t: %d false alarms in %d judged trials (%s); %d where no sound proof could say Proven, the other %d (%s)",
			read, alarms, judged, percent(alarms, judged), fl.falseAlarms, alarms-fl.falseAlarms, percent(alarms-fl.falseAlarms, judged))
		for _, every := range trafficPeriods {
			traffic, period := "quiet", time.Duration(0)
			if every > 0 {
				period = scaled(every)
				traffic = "a segment filled every " + period.String()
			}
			alarms, judged := falseAlarms(os, func(s Scenario) bool { return s.ReadOffsetsTopic == read && s.RollEvery == period })
			fmt.Fprintf(&b, "\n    %s: %d false alarms in %d judged trials", traffic, alarms, judged)
		}
	}
	// The floor: the scenarios where no sound proof could say Proven
	// (unprovable), whatever the verdict.
	fl := floorOf(os, func(Scenario) bool { return true })
	fmt.Fprintf(&b, "\n  no sound proof could say Proven in %d judged trials: %d false alarms, %d true alarms, %d Proven",
		fl.judged, fl.falseAlarms, fl.trueAlarms, fl.proven)
	for _, r := range slices.Sorted(maps.Keys(fl.rules)) {
		fmt.Fprintf(&b, "\n    false alarms where %s: %d", r, fl.rules[r])
	}
	b.WriteString("\n  claims per reason (judged trials):")
	b.WriteString(formatTally(tallyClaims(os)))
	return b.String()
}

// percent renders n of d as a percentage with one decimal.
func percent(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(d))
}

// falseAlarms counts the false alarms among the judged trials whose
// scenario is in.
func falseAlarms(os []outcome, in func(Scenario) bool) (alarms, judged int) {
	for _, o := range os {
		if o.kind == inconclusive || !in(o.scenario) {
			continue
		}
		judged++
		if o.kind == falseAlarm {
			alarms++
		}
	}
	return alarms, judged
}
