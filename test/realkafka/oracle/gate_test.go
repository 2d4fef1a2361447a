package oracle

import (
	"io"
	"net"
	"sync"
	"testing"
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
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target, open: make(chan struct{})}
	g.wg.Add(1)
	go g.serve()
	t.Cleanup(g.close)
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

// release opens the gate: held connections and new ones go through.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) close() {
	g.release()
	g.ln.Close()
	g.wg.Wait()
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
			defer c.Close()
			<-g.open
			b, err := net.Dial("tcp", g.target)
			if err != nil {
				return
			}
			defer b.Close()
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
