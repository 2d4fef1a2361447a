package kafkatest

import (
	"net"
	"testing"
)

// SilentBroker listens on loopback, accepts every connection and never
// answers: a broker that hangs. It returns the address; the listener and
// the connections close when the test ends.
func SilentBroker(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() }) // hold it open, say nothing
		}
	}()
	return ln.Addr().String()
}
