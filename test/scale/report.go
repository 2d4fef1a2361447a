package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// renderReport is the table of every step and how each figure grows, in
// Markdown (it reads as plain text too).
func renderReport(o options, rs []stepResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## retention-guard at scale: %s\n\n", o.shape)
	fmt.Fprintf(&b, "checkInterval %s; steady state measured over %s after every proof and %s more; admission: %g dry-run rollouts/s through the API server.\n\n",
		o.interval, o.steady, o.settle, o.admissionRate)
	b.WriteString("| policies | RSS peak | RSS steady | Go heap | all proven | CPU per interval | cores | Kafka requests per interval per cluster (per pass) | API writes per interval | admission p99 (startup / steady) | load (1m 5m) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		proven := "> " + o.provenTimeout.String() + fmt.Sprintf(" (%d)", r.proofs)
		if r.allProven > 0 {
			proven = r.allProven.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.2f s | %.3f | %s | %s | %s / %s | %s |\n",
			r.policies, mib(r.rssPeak), mib(r.rssSteady), mib(r.heapSteady), proven, r.cpuPerInt, r.cores,
			spread(r.kafkaPerInt)+" ("+spread(r.kafkaPerPass)+")", writes(r), ms(r.admStartP99), ms(r.admSteadyP99), r.load)
	}
	if len(rs) > 1 {
		first := rs[0]
		if len(rs) > 2 {
			first = rs[1] // the first step is one policy per cluster: grow from the next
		}
		last := rs[len(rs)-1]
		extra := float64(last.policies - first.policies)
		fmt.Fprintf(&b, "\nGrowth from %d to %d policies (×%.0f):\n\n", first.policies, last.policies, float64(last.policies)/float64(first.policies))
		grow := func(name string, a, z float64, unit func(float64) string) {
			fmt.Fprintf(&b, "- %s: %s → %s (×%.2f, %s per 1,000 policies more)\n", name, unit(a), unit(z), z/a, unit((z-a)/extra*1000))
		}
		grow("RSS peak", first.rssPeak, last.rssPeak, mib)
		grow("RSS steady", first.rssSteady, last.rssSteady, mib)
		grow("Go heap", first.heapSteady, last.heapSteady, mib)
		if first.allProven > 0 && last.allProven > 0 {
			grow("all proven", first.allProven.Seconds(), last.allProven.Seconds(), func(v float64) string { return fmt.Sprintf("%.1f s", v) })
		}
		grow("CPU per interval", first.cpuPerInt, last.cpuPerInt, func(v float64) string { return fmt.Sprintf("%.2f s", v) })
		grow("Kafka requests per interval (busiest cluster)", maxOf(first.kafkaPerInt), maxOf(last.kafkaPerInt), func(v float64) string { return fmt.Sprintf("%.1f", v) })
		fmt.Fprintf(&b, "- API writes per interval: %.1f → %.1f\n", first.writesPerInt, last.writesPerInt)
		one := rs[0]
		fmt.Fprintf(&b, "- Kafka requests per interval per cluster against one policy's (%d policies, %s): %s\n",
			one.policies, spread(one.kafkaPerInt), ratios(rs, maxOf(one.kafkaPerInt), func(r stepResult) []float64 { return r.kafkaPerInt }))
		fmt.Fprintf(&b, "- Kafka requests per pass per cluster against one policy's (%s): %s\n",
			spread(one.kafkaPerPass), ratios(rs, maxOf(one.kafkaPerPass), func(r stepResult) []float64 { return r.kafkaPerPass }))
	}
	return b.String()
}

func ratios(rs []stepResult, one float64, of func(stepResult) []float64) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d: %.2f×", r.policies, maxOf(of(r))/one))
	}
	return strings.Join(parts, ", ")
}

func writes(r stepResult) string {
	s := fmt.Sprintf("%.1f", r.writesPerInt)
	var parts []string
	for _, verb := range []string{"PATCH", "PUT", "POST", "DELETE"} {
		if v := r.writesByVerb[verb]; v >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.1f", verb, v))
		}
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func spread(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if hi-lo < 0.05 {
		return fmt.Sprintf("%.1f", hi)
	}
	return fmt.Sprintf("%.1f–%.1f", lo, hi)
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// ms renders seconds as milliseconds.
func ms(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", s*1000)
}
