package apachekafka

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A port the kernel called free is taken before the JVM binds it (another
// process, or a client's outgoing connection from the same ephemeral
// range: the cause of "node 1 exited" in the shared real-broker runs): the
// first attempt's node logs "Address already in use" and exits, and
// StartCluster starts the cluster again on fresh ports, which serves.
func TestStartClusterRetriesWhenAPortIsTaken(t *testing.T) {
	d := Newest(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	portsFor = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[1] = taken // the controller listener, as in the failure seen
		}
		return ports, err
	}
	defer func() { portsFor = freePorts }()

	dir := t.TempDir()
	b, err := StartCluster(d, dir)
	if err != nil {
		t.Fatalf("StartCluster with a taken port on its first attempt: %v", err)
	}
	defer b.Close()
	if calls < 2 || !strings.HasPrefix(b.Dir, filepath.Join(dir, "attempt-")) {
		t.Fatalf("started in %s after %d port picks: want a second attempt in its own folder", b.Dir, calls)
	}
	if b.Nodes[0].ControllerAddr == net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)) {
		t.Fatalf("the second attempt reused the taken port %d", taken)
	}
	first, err := filepath.Glob(filepath.Join(dir, "node-1", "broker.log"))
	if err != nil || len(first) != 1 || !strings.Contains(string(readFile(first[0])), "Address already in use") {
		t.Fatalf("the first attempt's log does not show the bind failure (%v, %v): the test proves nothing", first, err)
	}
}
