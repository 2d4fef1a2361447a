package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The figures are read as an operator would: the manager's own /metrics
// (process_cpu_seconds_total, go_memstats_*, client-go's
// rest_client_requests_total, retentionguard_admission_duration_seconds),
// the kernel's accounting of the process (/proc/PID/status: VmRSS, VmHWM)
// and the requests each Kafka cluster answered.

// sample is one series of a scrape.
type sample struct {
	labels map[string]string
	value  float64
}

// scrape is the parsed text exposition of /metrics: series by metric name.
type scrape map[string][]sample

func getMetrics(ctx context.Context, addr string) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format: `name{k="v",...} value`
// lines; comments are skipped.
func parseMetrics(r io.Reader) (scrape, error) {
	out := scrape{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			name = line[:i]
			end, err := parseLabels(line[i+1:], labels)
			if err != nil {
				return nil, fmt.Errorf("metrics line %q: %w", line, err)
			}
			rest = line[i+1+end:]
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[name] = append(out[name], sample{labels: labels, value: v})
	}
	return out, sc.Err()
}

// parseLabels reads `k="v",k2="v2"}` and returns the index after '}'.
func parseLabels(s string, into map[string]string) (int, error) {
	i := 0
	for {
		if i >= len(s) {
			return 0, fmt.Errorf("unterminated labels")
		}
		if s[i] == '}' {
			return i + 1, nil
		}
		if s[i] == ',' {
			i++
			continue
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return 0, fmt.Errorf("bad label at %q", s[i:])
		}
		key := s[i : i+eq]
		i += eq + 2
		var b strings.Builder
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		into[key] = b.String()
		i++ // the closing quote
	}
}

// sum adds the series of name whose labels include match.
func (s scrape) sum(name string, match map[string]string) float64 {
	var total float64
next:
	for _, x := range s[name] {
		for k, v := range match {
			if x.labels[k] != v {
				continue next
			}
		}
		total += x.value
	}
	return total
}

// byLabel sums name's series by the value of one label.
func (s scrape) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s[name] {
		out[x.labels[label]] += x.value
	}
	return out
}

// histogram is a cumulative histogram: counts at each upper bound.
type histogram struct {
	bounds []float64
	counts []float64
}

// histogramOf reads the buckets of name (the _bucket series) whose labels
// include match, summed.
func (s scrape) histogramOf(name string, match map[string]string) histogram {
	byBound := map[float64]float64{}
next:
	for _, x := range s[name+"_bucket"] {
		for k, v := range match {
			if x.labels[k] != v {
				continue next
			}
		}
		le := x.labels["le"]
		b := math.Inf(1)
		if le != "+Inf" {
			var err error
			if b, err = strconv.ParseFloat(le, 64); err != nil {
				continue
			}
		}
		byBound[b] += x.value
	}
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// minus is h − before, bucket by bucket (both from the same process).
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: slices.Clone(h.bounds), counts: slices.Clone(h.counts)}
	for i, b := range out.bounds {
		if j := slices.Index(before.bounds, b); j >= 0 {
			out.counts[i] -= before.counts[j]
		}
	}
	return out
}

func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linear within the bucket that holds it. It also returns the
// bucket's upper bound (the quantile is at most that).
func (h histogram) quantile(q float64) (estimate, bound float64) {
	n := h.total()
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return lower, b
			}
			in := h.counts[i] - below
			if in <= 0 {
				return b, b
			}
			return lower + (b-lower)*(rank-below)/in, b
		}
		lower, below = b, h.counts[i]
	}
	return math.NaN(), math.NaN()
}

// procMemory reads VmRSS and VmHWM (the peak RSS) of a process, in bytes.
func procMemory(pid int) (rss, hwm float64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) < 1 {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, 0, err
		}
		if k == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
	}
	return rss, hwm, sc.Err()
}

// loadAverage is the 1- and 5-minute load averages of the machine.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return "?"
	}
	return f[0] + " " + f[1]
}

func loadAverage1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
