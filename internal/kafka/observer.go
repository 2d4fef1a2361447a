package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/groupmemory"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Target is one consumer group and the topics it must be proven on.
type Target struct {
	Group  string
	Topics []string
	// ReadOffsetsTopic asks for the exact commit times of the group's
	// offsets from __consumer_offsets (the principal needs Read on it);
	// see offsetstopic.go.
	ReadOffsetsTopic bool
	// Cursor, when set, is the consumer's business cursor: read once per
	// pass, after the committed offsets and before the log end (see
	// readCursors), with the record timestamps at it.
	Cursor CursorReader
	// RecoveryWindow is the policy's recovery window: a lagging partition
	// whose committed record could not be dated is asked ListOffsets for
	// timestamp now + RecoveryWindow − retention.ms instead (Describe
	// only, see unread.go). Zero asks nothing.
	RecoveryWindow time.Duration
}

// Observer observes Kafka clusters. It pools one client per Connection.Key,
// remembers group history across passes (internal/groupmemory), and is safe for
// concurrent use.
type Observer struct {
	opts options

	mu      sync.Mutex
	clients map[string]*pooledClient
	closed  bool
	stop    chan struct{}
	reaper  sync.WaitGroup

	memory     groupmemory.Memory
	offsetsLog offsetsLog
}

type pooledClient struct {
	cl       *kgo.Client
	sasl     *saslWatch
	conn     Connection
	refs     int       // Observe calls using the client
	lastUsed time.Time // when the last Observe using it finished
	retired  bool      // dropped from the pool; close when refs reaches 0
}

// NewObserver returns an Observer. Call Close when done.
func NewObserver(opts ...Option) *Observer {
	o := &Observer{
		opts:    defaultOptions(),
		clients: make(map[string]*pooledClient),
		stop:    make(chan struct{}),
	}
	for _, opt := range opts {
		opt(&o.opts)
	}
	if o.opts.idleTimeout > 0 {
		o.reaper.Add(1)
		go o.reapIdle()
	}
	return o
}

// Forget closes and drops the pooled client of conn (for example after its
// credentials were rotated). An Observe still using it finishes first. The
// group memory of the cluster is kept.
func (o *Observer) Forget(conn Connection) {
	o.mu.Lock()
	var closeNow []*pooledClient
	key := conn.Key()
	if pc := o.clients[key]; pc != nil {
		delete(o.clients, key)
		closeNow = o.retireLocked(closeNow, pc)
	}
	o.mu.Unlock()
	closeClients(closeNow)
}

// Close closes every pooled client. Observe after Close reports a failure;
// an Observe still running finishes with its client, which it then closes.
func (o *Observer) Close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.stop)
	var closeNow []*pooledClient
	for key, pc := range o.clients {
		delete(o.clients, key)
		closeNow = o.retireLocked(closeNow, pc)
	}
	o.mu.Unlock()
	o.reaper.Wait()
	closeClients(closeNow)
}

// retireLocked marks pc dropped from the pool and appends it to closeNow
// when no Observe uses it; otherwise the last release closes it.
func (o *Observer) retireLocked(closeNow []*pooledClient, pc *pooledClient) []*pooledClient {
	pc.retired = true
	if pc.refs == 0 {
		closeNow = append(closeNow, pc)
	}
	return closeNow
}

// closeClients closes clients outside the observer's lock: a close waits
// for in-flight I/O.
func closeClients(pcs []*pooledClient) {
	for _, pc := range pcs {
		pc.cl.Close()
	}
}

// acquire returns the pooled client for conn, creating it if needed.
func (o *Observer) acquire(conn Connection) (*pooledClient, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, fmt.Errorf("the observer is closed")
	}
	key := conn.Key()
	if pc := o.clients[key]; pc != nil {
		pc.refs++
		return pc, nil
	}
	watch := &saslWatch{}
	cl, err := o.newClient(conn, watch)
	if err != nil {
		return nil, err
	}
	pc := &pooledClient{cl: cl, sasl: watch, conn: conn, refs: 1}
	o.clients[key] = pc
	return pc, nil
}

func (o *Observer) release(pc *pooledClient) {
	o.mu.Lock()
	pc.refs--
	pc.lastUsed = o.opts.now()
	closeNow := pc.retired && pc.refs == 0
	o.mu.Unlock()
	if closeNow {
		pc.cl.Close()
	}
}

func (o *Observer) reapIdle() {
	defer o.reaper.Done()
	every := max(o.opts.idleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		o.mu.Lock()
		now := o.opts.now()
		var closeNow []*pooledClient
		for key, pc := range o.clients {
			if pc.refs == 0 && now.Sub(pc.lastUsed) >= o.opts.idleTimeout {
				o.opts.logger.V(1).Info("closing idle Kafka client", "connection", pc.conn.String())
				delete(o.clients, key)
				closeNow = o.retireLocked(closeNow, pc)
			}
		}
		o.mu.Unlock()
		closeClients(closeNow)
	}
}

// Observe observes every target on conn in one pass and returns one
// Observation per target, in order. It never returns an error: whatever
// could not be read is a Failure in the observations it concerns. ctx
// bounds the pass.
func (o *Observer) Observe(ctx context.Context, conn Connection, targets []Target) []proof.Observation {
	return o.ObserveCluster(ctx, conn, ClusterRequest{Targets: targets}).Observations
}
