// Package clients replays the seeds with real Kafka clients on real Apache
// Kafka brokers (3.9 and the newest 4.x): the official Java consumer
// (test/javaconsumer, kafka-clients 4.4), librdkafka (kcat, from Debian)
// and franz-go (test/consumer). Each client's own output says where it
// resumed and what it skipped; the product's verdict on the same state is
// taken before each restart, and must not be Proven where a client loses
// records.
package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// JavaConsumerEnv names the folder (classes/, libs/) hack/build-kafka.sh
// builds the Java consumer into.
const JavaConsumerEnv = "RETENTION_GUARD_JAVA_CONSUMER"

// clientTimeout bounds one run of a client (a JVM's start included) on a
// loaded machine.
const clientTimeout = 3 * time.Minute

// Line is one JSON line a consumer logged.
type Line map[string]any

func (l Line) Msg() string { s, _ := l["msg"].(string); return s }

func (l Line) Str(k string) string { s, _ := l[k].(string); return s }

func (l Line) Int(k string) int64 {
	switch v := l[k].(type) {
	case float64:
		return int64(v)
	case json.Number:
		n, _ := v.Int64()
		return n
	}
	return -1 << 62
}

func (l Line) Bool(k string) bool { b, _ := l[k].(bool); return b }

// Run is one finished run of a consumer.
type Run struct {
	Client string
	Code   int
	Lines  []Line
	Stdout string
	Stderr string
}

// All returns the lines with msg.
func (r Run) All(msg string) []Line {
	var out []Line
	for _, l := range r.Lines {
		if l.Msg() == msg {
			out = append(out, l)
		}
	}
	return out
}

// One returns the only line with msg for topic/partition, failing the test
// otherwise.
func (r Run) One(t testing.TB, msg, topic string, partition int64) Line {
	t.Helper()
	var found []Line
	for _, l := range r.All(msg) {
		if l.Str("topic") == topic && l.Int("partition") == partition {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s logged %d %q lines for %s[%d], want 1:\n%s", r.Client, len(found), msg, topic, partition, r)
	}
	return found[0]
}

// Consumed counts the records consumed from topic/partition.
func (r Run) Consumed(topic string, partition int64) int64 {
	var n int64
	for _, l := range r.All("consumed") {
		if l.Str("topic") == topic && l.Int("partition") == partition {
			n += l.Int("count")
		}
	}
	return n
}

// Committed is the last offset the run committed for topic/partition (-1:
// none).
func (r Run) Committed(topic string, partition int64) int64 {
	c := int64(-1)
	for _, l := range r.All("committed") {
		offs, _ := l["offsets"].(map[string]any)
		ps, _ := offs[topic].(map[string]any)
		if v, ok := ps[fmt.Sprint(partition)].(float64); ok {
			c = int64(v)
		}
	}
	return c
}

func (r Run) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr (tail)\n%s", r.Code, r.Stdout, tail(r.Stderr, 30))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// ConsumerEnv configures test/consumer and test/javaconsumer alike (their
// shared interface).
type ConsumerEnv struct {
	Brokers    []string
	Group      string
	Topics     []string
	Reset      string // "": the client's default
	Protocol   string // "": the client's default
	AutoCommit string // "": the client's default
	Idle       time.Duration
	Extra      string // KAFKA_CLIENT_PROPERTIES (Java only)
}

func (e ConsumerEnv) environ() []string {
	env := append(os.Environ(),
		"KAFKA_BOOTSTRAP_SERVERS="+strings.Join(e.Brokers, ","),
		"KAFKA_GROUP_ID="+e.Group,
		"KAFKA_TOPICS="+strings.Join(e.Topics, ","),
	)
	if e.Reset != "" {
		env = append(env, "KAFKA_AUTO_OFFSET_RESET="+e.Reset)
	}
	if e.Protocol != "" {
		env = append(env, "KAFKA_GROUP_PROTOCOL="+e.Protocol)
	}
	if e.AutoCommit != "" {
		env = append(env, "KAFKA_ENABLE_AUTO_COMMIT="+e.AutoCommit)
	}
	if e.Idle > 0 {
		env = append(env, "CONSUMER_EXIT_AFTER_IDLE="+e.Idle.String())
	}
	if e.Extra != "" {
		env = append(env, "KAFKA_CLIENT_PROPERTIES="+e.Extra)
	}
	return env
}

// Java runs the official Java consumer until it exits.
func Java(t testing.TB, e ConsumerEnv) Run {
	t.Helper()
	return StartJava(t, e).Wait(t)
}

// StartJava starts the official Java consumer.
func StartJava(t testing.TB, e ConsumerEnv) *Proc {
	t.Helper()
	dir := os.Getenv(JavaConsumerEnv)
	if dir == "" {
		t.Fatalf("%s is not set: these tests run the Java consumer hack/build-kafka.sh builds; run them with `make test-kafka`, or export $(hack/build-kafka.sh) first", JavaConsumerEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "classes")); err != nil {
		t.Fatalf("%s=%s holds no classes/ (%v): run hack/build-kafka.sh", JavaConsumerEnv, dir, err)
	}
	cmd := exec.Command("java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(dir, "classes")+string(os.PathListSeparator)+filepath.Join(dir, "libs", "*"),
		"io.retentionguard.test.Consumer")
	cmd.Env = e.environ()
	return start(t, "the Java consumer (kafka-clients 4.4)", cmd)
}

var (
	goConsumerOnce sync.Once
	goConsumerBin  string
	goConsumerErr  error
)

// Franz runs test/consumer (franz-go) until it exits.
func Franz(t testing.TB, e ConsumerEnv) Run {
	t.Helper()
	goConsumerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rg-consumer-")
		if err != nil {
			goConsumerErr = err
			return
		}
		goConsumerBin = filepath.Join(dir, "consumer")
		_, file, _, _ := runtime.Caller(0)
		pkg := filepath.Join(filepath.Dir(file), "..", "..", "consumer")
		out, err := exec.Command("go", "build", "-o", goConsumerBin, pkg).CombinedOutput()
		if err != nil {
			goConsumerErr = fmt.Errorf("building test/consumer: %v\n%s", err, out)
		}
	})
	if goConsumerErr != nil {
		t.Fatal(goConsumerErr)
	}
	cmd := exec.Command(goConsumerBin)
	cmd.Env = e.environ()
	return start(t, "the franz-go consumer (test/consumer)", cmd).Wait(t)
}

// lockedBuffer is a bytes.Buffer safe for the writer exec starts and a
// reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Proc is a running consumer.
type Proc struct {
	client string
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{} // closed when stdout is drained and the process exited
	err    error

	mu      sync.Mutex
	stdout  strings.Builder
	lines   []Line
	changed chan struct{} // closed and replaced on every new line
}

func start(t testing.TB, client string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{client: client, cmd: cmd, done: make(chan struct{}), changed: make(chan struct{})}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", client, err)
	}
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			text := sc.Text()
			var l Line
			isJSON := strings.HasPrefix(strings.TrimSpace(text), "{") && json.Unmarshal([]byte(text), &l) == nil
			p.mu.Lock()
			p.stdout.WriteString(text + "\n")
			if isJSON {
				p.lines = append(p.lines, l)
			}
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// WaitFor waits until the consumer logged a line with msg (and, when
// topic is not empty, that topic), and returns it.
func (p *Proc) WaitFor(t testing.TB, msg string) Line {
	t.Helper()
	deadline := time.After(clientTimeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if l.Msg() == msg {
				p.mu.Unlock()
				return l
			}
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-p.done:
			r := p.Wait(t)
			for _, l := range r.Lines {
				if l.Msg() == msg {
					return l
				}
			}
			t.Fatalf("%s exited without logging %q:\n%s", p.client, msg, r)
		case <-deadline:
			t.Fatalf("%s logged no %q within %s:\n%s", p.client, msg, clientTimeout, p.snapshot())
		}
	}
}

func (p *Proc) snapshot() Run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Run{Client: p.client, Code: -1, Lines: slices.Clone(p.lines), Stdout: p.stdout.String(), Stderr: p.stderr.String()}
}

// Wait waits until the consumer exits and returns what it did.
func (p *Proc) Wait(t testing.TB) Run {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(clientTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %s:\n%s", p.client, clientTimeout, p.snapshot())
	}
	r := p.snapshot()
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		r.Code = 0
	case errors.As(p.err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("running %s: %v", p.client, p.err)
	}
	t.Logf("%s exited %d; stdout:\n%s", p.client, r.Code, r.Stdout)
	return r
}

// Kcat runs librdkafka's consumer (kcat -C -G) until it exits and returns
// its messages (one "partition offset" per line by the format below) and
// its exit code.
type KcatRun struct {
	Code    int
	Offsets map[int32][]int64 // per partition, in order
	Stdout  string
	Stderr  string
}

func (k KcatRun) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr (tail)\n%s", k.Code, k.Stdout, tail(k.Stderr, 30))
}

// Kcat consumes topic in group with librdkafka's high-level consumer and
// the given -X properties, exiting at the end of every partition (-e).
func Kcat(t testing.TB, brokers []string, group, topic string, props ...string) KcatRun {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is missing (Debian: apt-get install kcat): %v", err)
	}
	args := []string{"-C", "-b", strings.Join(brokers, ","), "-G", group, "-e", "-q",
		"-f", `%p %o\n`, "-X", "enable.partition.eof=true"}
	for _, p := range props {
		args = append(args, "-X", p)
	}
	args = append(args, topic)
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	k := KcatRun{Stdout: stdout.String(), Stderr: stderr.String(), Offsets: map[int32][]int64{}}
	if ctx.Err() != nil {
		t.Fatalf("kcat did not exit within %s:\n%s", clientTimeout, k)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		k.Code = ee.ExitCode()
	default:
		t.Fatalf("running kcat: %v", err)
	}
	for _, line := range strings.Split(k.Stdout, "\n") {
		var p int32
		var o int64
		if n, _ := fmt.Sscanf(line, "%d %d", &p, &o); n == 2 {
			k.Offsets[p] = append(k.Offsets[p], o)
		}
	}
	for _, offs := range k.Offsets {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	}
	t.Logf("kcat %s exited %d:\n%s", strings.Join(args, " "), k.Code, k)
	return k
}

// asDeployed: the line as it runs by default (apachekafka.AsDeployed).
func asDeployed(apachekafka.Dist) []apachekafka.Option {
	return []apachekafka.Option{apachekafka.AsDeployed()}
}
