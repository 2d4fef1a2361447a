package oracle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// JavaConsumerEnv names the folder hack/build-kafka.sh assembles the Java
// consumer into (classes/ and libs/).
const JavaConsumerEnv = "RETENTION_GUARD_JAVA_CONSUMER"

// consumerCommand is how a restarted consumer is run: the Java consumer
// (kafka-clients) from JavaConsumerEnv.
type consumerCommand struct {
	name string
	args []string
}

func javaConsumer() (consumerCommand, error) {
	dir := os.Getenv(JavaConsumerEnv)
	if dir == "" {
		return consumerCommand{}, fmt.Errorf("%s is not set: the oracle restarts consumers with the Java consumer; run with `make test-kafka` or export $(hack/build-kafka.sh) first", JavaConsumerEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "classes", "io", "retentionguard", "test", "Consumer.class")); err != nil {
		return consumerCommand{}, fmt.Errorf("%s=%s holds no compiled Consumer (%v): run hack/build-kafka.sh", JavaConsumerEnv, dir, err)
	}
	return consumerCommand{name: "java", args: []string{
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "libs") + "/*",
		"io.retentionguard.test.Consumer",
	}}, nil
}

// consumerLine is one JSON line of the consumer's log (the fields the
// oracle reads).
type consumerLine struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Topic      string    `json:"topic"`
	Partition  int32     `json:"partition"`
	Committed  *int64    `json:"committed"`
	LogStart   *int64    `json:"logStart"`
	LogEnd     *int64    `json:"logEnd"`
	Offset     *int64    `json:"offset"`
	Reset      bool      `json:"reset"`
	ResetCause string    `json:"resetCause"`
	First      int64     `json:"first"`
	Last       int64     `json:"last"`
	Count      int64     `json:"count"`
	From       int64     `json:"from"`
	To         int64     `json:"to"`
	Error      string    `json:"error"`
	// Offsets of a "committed" line: topic → partition → offset.
	Offsets map[string]map[int32]int64 `json:"offsets"`
}

// consumerRun is what one run of the consumer did.
type consumerRun struct {
	exitCode int
	// unfinishedStop: the SIGTERM run sent stopped the JVM (exit 143)
	// before the consumer logged its stop: what it read is in its log,
	// but not its last commit.
	unfinishedStop bool
	lines          []consumerLine
	stdout         string
	stderr         string
}

// run starts the consumer with env and waits for it to exit: it exits
// once idle (CONSUMER_EXIT_AFTER_IDLE), or on the SIGTERM run sends as
// soon as done, asked on every log line and every half second, says the
// run has what it needs.
func (c consumerCommand) run(ctx context.Context, env map[string]string, done func(lines []consumerLine) bool) (consumerRun, error) {
	cmd := exec.CommandContext(ctx, c.name, c.args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, pw), &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return consumerRun{}, fmt.Errorf("starting the consumer: %w", err)
	}
	var (
		mu    sync.Mutex
		lines []consumerLine
	)
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			var l consumerLine
			if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		exited <- err
	}()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var err error
	stopped := false
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-tick.C:
			mu.Lock()
			enough := !stopped && done(lines)
			mu.Unlock()
			if enough {
				stopped = true
				_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			}
		}
	}
	<-parsed
	r := consumerRun{stdout: stdout.String(), stderr: stderr.String(), lines: lines}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && stopped && ee.ExitCode() == 128+int(syscall.SIGTERM) && r.stopped():
		// Stopped by the SIGTERM above, after its last commit: the JVM
		// exits 143 whatever the consumer's main thread asks for then
		// (Runtime.exit blocks while shutdown hooks run).
	case errors.As(err, &ee) && stopped && ee.ExitCode() == 128+int(syscall.SIGTERM) && r.fatal() == "":
		// Stopped by the SIGTERM, the shutdown hook's wait over before
		// the main thread logged its stop (a close slowed by the
		// machine's load): what it read is in its log, judged as usual.
		r.unfinishedStop = true
	case errors.As(err, &ee):
		r.exitCode = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("running the consumer: %w", err)
	}
	return r, nil
}

// readOffsets are the offsets a run read per partition: every consumed
// range less the gaps the consumer reported inside it.
func (r consumerRun) readOffsets(topic string) map[int32]map[int64]bool {
	out := map[int32]map[int64]bool{}
	for _, l := range r.lines {
		if l.Msg != "consumed" || l.Topic != topic {
			continue
		}
		if out[l.Partition] == nil {
			out[l.Partition] = map[int64]bool{}
		}
		for o := l.First; o <= l.Last; o++ {
			out[l.Partition][o] = true
		}
	}
	for _, l := range r.lines {
		if l.Msg == "skipped" && l.Topic == topic {
			for o := l.From; o <= l.To; o++ {
				delete(out[l.Partition], o)
			}
		}
	}
	return out
}

// assigned reports, per partition of topic the run was assigned, the
// group's committed offset then and the log's bounds ("committed 20, log
// 0..68"): where the client was told to resume.
func (r consumerRun) assigned(topic string) map[int32]string {
	out := map[int32]string{}
	num := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprint(*p)
	}
	for _, l := range r.lines {
		if l.Msg == "assigned" && l.Topic == topic {
			out[l.Partition] = "committed " + num(l.Committed) + ", log " + num(l.LogStart) + ".." + num(l.LogEnd)
		}
	}
	return out
}

// resets describes the positions the client reset (resetCause), per
// partition.
func (r consumerRun) resets(topic string) map[int32]string {
	out := map[int32]string{}
	for _, l := range r.lines {
		if l.Msg == "first record" && l.Topic == topic && l.Reset {
			out[l.Partition] = l.ResetCause
		}
	}
	return out
}

// restartedAt is, per partition of topic, where the run fetched from
// first: the offset of its first record (after the rewind a commit with
// its leader epoch past a diverged log gets,
// SubscriptionState.maybeCompleteValidation, the first offset known to
// diverge), else, with no record, the position it logged after its first
// poll.
func (r consumerRun) restartedAt(topic string) map[int32]int64 {
	out, positions := map[int32]int64{}, map[int32]int64{}
	for _, l := range r.lines {
		if l.Topic != topic || l.Offset == nil {
			continue
		}
		switch l.Msg {
		case "first record":
			if _, seen := out[l.Partition]; !seen {
				out[l.Partition] = *l.Offset
			}
		case "position":
			if _, seen := positions[l.Partition]; !seen {
				positions[l.Partition] = *l.Offset
			}
		}
	}
	for p, at := range positions {
		if _, ok := out[p]; !ok {
			out[p] = at
		}
	}
	return out
}

// assignedState is what the consumer found when each partition of topic
// was first assigned to it: the group's committed offset and the log
// start.
func (r consumerRun) assignedState(topic string) brokerState {
	st := brokerState{}
	for _, l := range r.lines {
		if l.Msg != "assigned" || l.Topic != topic {
			continue
		}
		if _, seen := st[l.Partition]; seen {
			continue
		}
		ps := partitionState{committed: -1, logStart: -1}
		if l.Committed != nil {
			ps.committed = *l.Committed
		}
		if l.LogStart != nil {
			ps.logStart = *l.LogStart
		}
		st[l.Partition] = ps
	}
	return st
}

// backAt is when the consumer was back: when the last of topic's
// partitions was first assigned to it (its committed offset read); false
// when some partition never was.
func (r consumerRun) backAt(topic string, partitions int32) (time.Time, bool) {
	first := map[int32]time.Time{}
	for _, l := range r.lines {
		if l.Msg == "assigned" && l.Topic == topic {
			if _, seen := first[l.Partition]; !seen {
				first[l.Partition] = l.Time
			}
		}
	}
	var back time.Time
	for p := range partitions {
		at, ok := first[p]
		if !ok {
			return time.Time{}, false
		}
		if at.After(back) {
			back = at
		}
	}
	return back, true
}

// shown are, per partition, the furthest position the consumer's log
// showed (the position it logged once assigned, one past the last record
// it logged) and the offsets of its last commit (at its stop). The
// position it logs only once: a later move over records it never logged
// (a poll the harness's SIGTERM woke up in, a reset with no record after
// it) shows only in that last commit.
func (r consumerRun) shown(topic string) (seen, final map[int32]int64) {
	seen, final = map[int32]int64{}, map[int32]int64{}
	for _, l := range r.lines {
		switch {
		case l.Topic == topic && l.Msg == "position" && l.Offset != nil:
			seen[l.Partition] = max(seen[l.Partition], *l.Offset)
		case l.Topic == topic && l.Msg == "consumed":
			seen[l.Partition] = max(seen[l.Partition], l.Last+1)
		case l.Msg == "committed":
			for p, off := range l.Offsets[topic] {
				final[p] = off
			}
		}
	}
	return seen, final
}

// stoppedMidPoll says why the records lost on every losing partition were
// in fact fetched by the consumer, the harness having stopped it in the
// poll that fetched them (seed 32 trial 24): its last commit is past them,
// its log showed a position at or below the first of them, no reset could
// have moved it (a committed offset at its assignment, and the log start,
// read after the consumer stopped, still at or below that position: an
// OffsetOutOfRange reset needs the position below the log start), so the
// position moved over them by handing them to the application. Empty when
// some partition's loss is not explained so: then it is a loss.
func stoppedMidPoll(lost map[int32][]int64, seen, final map[int32]int64, assigned, after brokerState) string {
	if len(lost) == 0 {
		return ""
	}
	var out []string
	for _, p := range sortedKeys(lost) {
		l := lost[p]
		s, ok := seen[p]
		f, committed := final[p]
		a, known := assigned[p]
		e, read := after[p]
		if !ok || !committed || !known || !read || a.committed < 0 || e.logStart > s || l[0] < s || l[len(l)-1] >= f {
			return ""
		}
		out = append(out, fmt.Sprintf("partition %d: position %d logged, %d committed at the stop, log start %d after it", p, s, f, e.logStart))
	}
	return strings.Join(out, "; ")
}

// stopped reports whether the consumer logged its stop (after its last
// commit) and no fatal error.
func (r consumerRun) stopped() bool {
	stopping := false
	for _, l := range r.lines {
		switch l.Msg {
		case "stopping":
			stopping = true
		case "fatal":
			return false
		}
	}
	return stopping
}

func (r consumerRun) fatal() string {
	for _, l := range r.lines {
		if l.Msg == "fatal" {
			return l.Error
		}
	}
	return ""
}
