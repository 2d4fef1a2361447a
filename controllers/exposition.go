package controllers

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsFilter is the manager's metricsserver.Options.FilterProvider: it
// serves /metrics itself (metricsHandler), what controller-runtime's
// registry gathers and then every policy's series, and passes any other
// path on.
//
// controller-runtime's metrics server answers /metrics with client_golang's
// handler, which gathers every series as a dto.Metric before writing the
// first byte, and refuses ExtraHandlers at that path; its filter is the
// one hook that lets a program serve the path while keeping the server
// (its listener, TLS options and shutdown). controller-runtime takes one
// FilterProvider: an authentication filter added later has to wrap this
// one's handler.
func MetricsFilter(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(_ logr.Logger, next http.Handler) (http.Handler, error) {
		own := metricsHandler(metrics.Registry, metricsState)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/metrics" {
				own.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// metricsHandler serves Prometheus' text format (version 0.0.4, which
// every scraper accepts): the families g gathers, then the per-policy
// families of m, written line by line from a copy of what m holds
// (about 230 bytes a policy) instead of as 12 dto.Metrics a policy.
// Compressed with gzip when the scraper accepts it, as client_golang's
// handler does; a gathering error is a 500, as controller-runtime's
// (promhttp.HTTPErrorOnError).
func metricsHandler(g prometheus.Gatherer, m *policyMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := g.Gather()
		if err != nil {
			http.Error(w, "An error has occurred while gathering metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		policies := m.snapshot()
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		w.Header().Add("Vary", "Accept-Encoding")
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzipWriters.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() {
				_ = gz.Close()
				gzipWriters.Put(gz)
			}()
			out = gz
		}
		bw := bufio.NewWriterSize(out, 32<<10)
		for _, f := range families {
			if _, err := expfmt.MetricFamilyToText(bw, f); err != nil {
				return // the scraper went away, or a family gathered wrong; the scrape fails
			}
		}
		writePolicySeries(bw, policies)
		_ = bw.Flush()
	})
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip
// (with a quality above 0).
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// policyEntry is one policy's series at the time of a scrape.
type policyEntry struct {
	key types.NamespacedName
	s   policySeries
}

// snapshot copies what every policy's series say, by namespace and name,
// so that a slow scraper holds no lock the reconcilers take. The copy is
// shallow: record and recordSchedules replace a policy's slices, never
// write into them.
func (m *policyMetrics) snapshot() []policyEntry {
	m.mu.RLock()
	out := make([]policyEntry, 0, len(m.policies))
	for k, s := range m.policies {
		out = append(out, policyEntry{key: k, s: *s})
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b policyEntry) int {
		return cmp.Or(strings.Compare(a.key.Namespace, b.key.Namespace), strings.Compare(a.key.Name, b.key.Name))
	})
	return out
}

// A policyFamily is one per-policy gauge: its name, help, the labels
// after namespace and policy, and the series a policy has.
type policyFamily struct {
	name, help string
	labels     []string
	// beforeProof: a policy has these series before its first proof.
	beforeProof bool
	series      func(s *policySeries, w *seriesWriter)
}

// writePolicySeries writes every family's series, each family's lines
// together after its HELP and TYPE; a family without series is left out,
// as Gather leaves it out. Errors stay in w (bufio's are sticky).
func writePolicySeries(w *bufio.Writer, policies []policyEntry) {
	sw := &seriesWriter{w: w}
	for _, f := range policyFamilies {
		sw.family, sw.started = f, false
		for i := range policies {
			e := &policies[i]
			if !e.s.recorded && !f.beforeProof {
				continue
			}
			sw.namespace, sw.policy = e.key.Namespace, e.key.Name
			f.series(&e.s, sw)
		}
	}
}

// seriesWriter writes one family's lines in Prometheus' text format.
type seriesWriter struct {
	w                 *bufio.Writer
	family            *policyFamily
	started           bool // the family's HELP and TYPE are written
	namespace, policy string
	num               []byte
}

// gauge writes one series of the current policy: value, with the
// family's further labels set to labels, in order.
func (sw *seriesWriter) gauge(value float64, labels ...string) {
	w, f := sw.w, sw.family
	if !sw.started {
		sw.started = true
		_, _ = w.WriteString("# HELP ")
		_, _ = w.WriteString(f.name)
		_ = w.WriteByte(' ')
		_, _ = helpEscaper.WriteString(w, f.help)
		_, _ = w.WriteString("\n# TYPE ")
		_, _ = w.WriteString(f.name)
		_, _ = w.WriteString(" gauge\n")
	}
	_, _ = w.WriteString(f.name)
	_, _ = w.WriteString(`{namespace="`)
	writeLabelValue(w, sw.namespace)
	_, _ = w.WriteString(`",policy="`)
	writeLabelValue(w, sw.policy)
	for i, v := range labels {
		_, _ = w.WriteString(`",`)
		_, _ = w.WriteString(f.labels[i])
		_, _ = w.WriteString(`="`)
		writeLabelValue(w, v)
	}
	_, _ = w.WriteString(`"} `)
	sw.num = appendSampleValue(sw.num[:0], value)
	_, _ = w.Write(sw.num)
	_ = w.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeLabelValue writes v escaped as the text format's label values are
// (backslash, newline and double quote).
func writeLabelValue(w *bufio.Writer, v string) {
	if !strings.ContainsAny(v, "\\\n\"") {
		_, _ = w.WriteString(v)
		return
	}
	_, _ = labelEscaper.WriteString(w, v)
}

// appendSampleValue appends v as the text format writes a sample value
// (expfmt's writeFloat: NaN, +Inf, -Inf, else the shortest 'g' form).
func appendSampleValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
