package oracle

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// gate is the restarted consumer's bootstrap address: a TCP proxy to the
// broker that holds every connection until it opens. The consumer's JVM
// starts (and loads kafka-clients) while the gate is shut, and learns
// nothing of the cluster until the window ends, when the gate opens: it
// then needs only a join to be back, not a JVM start on loaded cores.
type gate struct {
	ln     net.Listener
	target string
	open   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]bool // both ends of every connection it holds or proxies
	closed bool
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target, open: make(chan struct{}), conns: map[net.Conn]bool{}}
	g.wg.Add(1)
	go g.serve()
	t.Cleanup(g.close)
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

// release opens the gate: held connections and new ones go through.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// close ends the gate and every connection through it: the trial is over,
// and a connection neither end hangs up (seen once in 240 trials: both
// copies blocked reading for 13 minutes after the consumer was stopped)
// must not hold the test.
func (g *gate) close() {
	g.release()
	g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// track keeps c to be closed by close; false (c closed) when the gate is
// closed already.
func (g *gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return false
	}
	g.conns[c] = true
	return true
}

func (g *gate) untrack(c net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
	c.Close()
}

func (g *gate) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			if !g.track(c) {
				return
			}
			defer g.untrack(c)
			<-g.open
			b, err := net.Dial("tcp", g.target)
			if err != nil || !g.track(b) {
				return
			}
			defer g.untrack(b)
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				// Half-close the other way round so that both copies end.
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(b, c)
			go pipe(c, b)
			<-done
			<-done
		}()
	}
}

// A trial's gate closes whatever its peers do: a consumer that never hangs
// up and a broker that never does either (seed 33 of the 240-trial run of
// 2026-12-05 held the test 13 minutes past its last trial on such a
// connection) are cut when the trial ends.
func TestGateCloseEndsItsConnections(t *testing.T) {
	broker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	var client, held net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.Run("trial", func(t *testing.T) {
			g := newGate(t, broker.Addr().String())
			if client, err = net.Dial("tcp", g.addr()); err != nil {
				t.Error(err)
				return
			}
			g.release()
			if _, err := client.Write([]byte("ApiVersions")); err != nil {
				t.Error(err)
				return
			}
			// Proxied: the broker end accepted, held open and never read.
			if held, err = broker.Accept(); err != nil {
				t.Error(err)
			}
		}) // the subtest's cleanup closes the gate, as a trial's does
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("the gate did not close: it waits for peers that never hang up")
	}
	for _, c := range []net.Conn{client, held} {
		if c != nil {
			c.Close()
		}
	}
	<-done
}
