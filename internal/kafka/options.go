package kafka

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Option configures an Observer.
type Option func(*options)

type options struct {
	logger         logr.Logger
	requestHook    func(api string, took time.Duration, err error)
	clientOpts     []kgo.Opt
	idleTimeout    time.Duration
	dialTimeout    time.Duration
	requestTimeout time.Duration
	retryTimeout   time.Duration
	now            func() time.Time
	// cleaningAllowance: proof.TombstoneScan.CleaningAllowance.
	cleaningAllowance time.Duration
}

func defaultOptions() options {
	return options{
		logger:            logr.Discard(),
		idleTimeout:       10 * time.Minute,
		dialTimeout:       5 * time.Second,
		requestTimeout:    10 * time.Second,
		retryTimeout:      10 * time.Second,
		now:               time.Now,
		cleaningAllowance: proof.DefaultCleaningAllowance,
	}
}

// WithLogger logs through l. Nothing logged contains credentials.
func WithLogger(l logr.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithRequestHook calls hook once per Kafka request written to a broker
// (API name as Kafka spells it, e.g. "ListOffsets"; round-trip time; the
// transport error if any). It includes requests the client makes on its own
// (ApiVersions, SASL, FindCoordinator, metadata refreshes). It must be fast
// and safe for concurrent use: it runs on the client's I/O goroutines.
func WithRequestHook(hook func(api string, took time.Duration, err error)) Option {
	return func(o *options) { o.requestHook = hook }
}

// WithClientOpts appends franz-go client options (tests: a custom dialer,
// logger, or shorter timeouts). They apply after the observer's own.
func WithClientOpts(opts ...kgo.Opt) Option {
	return func(o *options) { o.clientOpts = append(o.clientOpts, opts...) }
}

// WithIdleTimeout closes a pooled client no Observe has used for d. Zero
// keeps clients until Forget or Close. The default is 10 minutes.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = d }
}

// WithTimeouts bounds dialing a broker, one request's round trip beyond
// what the request itself waits, and retrying a request in total. The
// context given to Observe bounds everything further. Defaults: 5s, 10s,
// 10s. A zero leaves that default.
func WithTimeouts(dial, request, retry time.Duration) Option {
	return func(o *options) {
		if dial > 0 {
			o.dialTimeout = dial
		}
		if request > 0 {
			o.requestTimeout = request
		}
		if retry > 0 {
			o.retryTimeout = retry
		}
	}
}

// WithCleaningAllowance sets how long a log cleaning running when a batch
// without a delete horizon was read may have started before the read
// (proof.DefaultCleaningAllowance by default; see internal/proof's
// tombstone.go). The oracle scales it with every other clock.
func WithCleaningAllowance(d time.Duration) Option {
	return func(o *options) { o.cleaningAllowance = d }
}
