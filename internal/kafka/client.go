package kafka

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newClient builds the franz-go client for conn: bounded dial, request and
// retry timeouts, no topic auto-creation, TLS 1.2+ and SASL as configured.
// It does not connect; the first request does.
// connIdleTimeout is how long a pooled client keeps an idle broker
// connection: longer than the usual check intervals, shorter than the
// brokers' own connections.max.idle.ms default (10m).
const connIdleTimeout = 5 * time.Minute

func (o *Observer) newClient(conn Connection, watch *saslWatch) (*kgo.Client, error) {
	if err := conn.Validate(); err != nil {
		return nil, err
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(conn.BootstrapServers...),
		kgo.ClientID("retention-guard"),
		kgo.DisableClientMetrics(), // no KIP-714 telemetry requests from an observer
		kgo.DialTimeout(o.opts.dialTimeout),
		// Keep connections between observation passes (checkInterval 1m by
		// default): otherwise each pass dials every broker again, with its
		// TLS handshake, ApiVersions and SASL authentication. Brokers close
		// idle connections after connections.max.idle.ms (10m by default).
		kgo.ConnIdleTimeout(connIdleTimeout),
		kgo.RequestTimeoutOverhead(o.opts.requestTimeout),
		kgo.RetryTimeout(o.opts.retryTimeout),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(time.Duration(tries)*100*time.Millisecond, time.Second)
		}),
		kgo.RequestRetries(3),
		kgo.WithLogger(&kgoLogger{l: o.opts.logger.WithName("kgo"), conn: conn}),
	}
	if conn.TLS != nil {
		cfg, err := conn.TLS.config()
		if err != nil {
			return nil, err
		}
		kopts = append(kopts, kgo.DialTLSConfig(cfg))
	}
	if conn.SASL != nil {
		mech, err := conn.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		kopts = append(kopts, kgo.SASL(mech))
	}
	kopts = append(kopts, kgo.WithHooks(watch))
	if o.opts.requestHook != nil {
		kopts = append(kopts, kgo.WithHooks(requestHook(o.opts.requestHook)))
	}
	kopts = append(kopts, o.opts.clientOpts...)
	return kgo.NewClient(kopts...)
}

// requestHook adapts WithRequestHook to franz-go's end-to-end broker hook,
// which runs once per request written (or failed to be written).
type requestHook func(api string, took time.Duration, err error)

func (h requestHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	h(kmsg.NameForKey(key), e2e.DurationE2E(), e2e.Err())
}

// saslWatch remembers when a SASL exchange last failed on the wire. A
// broker that rejects credentials answers SASL_AUTHENTICATION_FAILED, which
// is recognized by its code; but some brokers (Kafka before KIP-152, kfake)
// close the connection instead, and the request then fails with a bare EOF.
// An EOF right after a failed SASL exchange is an authentication failure.
type saslWatch struct {
	mu     sync.Mutex
	failed time.Time
}

func (w *saslWatch) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != int16(kmsg.SASLHandshake) && key != int16(kmsg.SASLAuthenticate) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e2e.Err() != nil {
		w.failed = time.Now()
	} else {
		w.failed = time.Time{}
	}
}

// failedSince reports whether a SASL exchange failed at or after t.
func (w *saslWatch) failedSince(t time.Time) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.failed.IsZero() && !w.failed.Before(t)
}

// kgoLogger sends franz-go's logs to logr, one verbosity level below ours
// (franz-go's warnings are routine retries to us), with the connection's
// password redacted from every value should any ever carry it.
type kgoLogger struct {
	l    logr.Logger
	conn Connection
}

func (k *kgoLogger) Level() kgo.LogLevel {
	switch {
	case k.l.V(4).Enabled():
		return kgo.LogLevelDebug
	case k.l.V(3).Enabled():
		return kgo.LogLevelInfo
	case k.l.V(2).Enabled():
		return kgo.LogLevelWarn
	case k.l.V(1).Enabled():
		return kgo.LogLevelError
	default:
		return kgo.LogLevelNone
	}
}

func (k *kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	v := 4
	switch level {
	case kgo.LogLevelError:
		v = 1
	case kgo.LogLevelWarn:
		v = 2
	case kgo.LogLevelInfo:
		v = 3
	}
	kv := make([]any, 0, len(keyvals))
	for i, x := range keyvals {
		if i%2 == 0 {
			kv = append(kv, x)
			continue
		}
		kv = append(kv, k.conn.redact(fmt.Sprint(x)))
	}
	k.l.V(v).Info(k.conn.redact(msg), kv...)
}
