// Package logging holds what the manager adds to controller-runtime's
// logger.
package logging

import (
	"strings"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The loggers whose races QuietRaces knows.
const (
	// rotatorLogger is the name cert-controller's rotator logs under.
	rotatorLogger = "cert-rotation"
	// electionLogger is the name client-go's leader election logs under
	// (through controller-runtime).
	electionLogger = "leaderelection"
)

// QuietRaces returns l, except that the reports of two races every fresh
// install runs are logged at info level with what happened, instead of at
// error level with a stack trace:
//
//   - the certificate rotator's: each replica finds the chart's empty
//     Secret and fills it; all but the first write get a conflict, re-read
//     the Secret and find it filled;
//   - the leader election's: each replica finds the Lease free and takes
//     it; all but the first write get a conflict (or, without a Lease yet,
//     find it already created) and follow the leader.
//
// Both retry by themselves (readiness waits for the certificate), so
// nothing is wrong; but anyone who alerts on error logs was paged on every
// install (the real-node tier saw both). Any other error keeps its level.
func QuietRaces(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(&raceSink{sink: l.GetSink()})
}

type raceSink struct {
	sink  logr.LogSink
	names []string
}

var (
	_ logr.LogSink          = (*raceSink)(nil)
	_ logr.CallDepthLogSink = (*raceSink)(nil)
)

func (s *raceSink) Init(info logr.RuntimeInfo) {
	// One more frame: this sink's own method.
	info.CallDepth++
	s.sink.Init(info)
}

func (s *raceSink) Enabled(level int) bool { return s.sink.Enabled(level) }

func (s *raceSink) Info(level int, msg string, kv ...any) { s.sink.Info(level, msg, kv...) }

func (s *raceSink) Error(err error, msg string, kv ...any) {
	if why := benignRace(s.names, msg, err); why != "" {
		s.sink.Info(0, msg+": "+why, append(kv, "error", err.Error())...)
		return
	}
	s.sink.Error(err, msg, kv...)
}

func (s *raceSink) WithValues(kv ...any) logr.LogSink {
	return &raceSink{sink: s.sink.WithValues(kv...), names: s.names}
}

func (s *raceSink) WithName(name string) logr.LogSink {
	return &raceSink{sink: s.sink.WithName(name), names: append(append([]string(nil), s.names...), name)}
}

func (s *raceSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.sink.(logr.CallDepthLogSink); ok {
		return &raceSink{sink: cd.WithCallDepth(depth), names: s.names}
	}
	return s
}

// benignRace says why an error is the replicas' race, or "" when it is
// not.
func benignRace(names []string, msg string, err error) string {
	if len(names) == 0 || err == nil {
		return ""
	}
	if names[0] == electionLogger {
		switch {
		case msg == "Failed to update lease" && apierrors.IsConflict(err),
			msg == "Error initially creating lease lock" && apierrors.IsAlreadyExists(err):
			return "another replica took the Lease first; following it (expected while replicas start together)"
		}
		return ""
	}
	if names[0] != rotatorLogger {
		return ""
	}
	switch msg {
	case "could not refresh CA and server certs", "could not refresh server certs", "Error updating webhook with certificate":
		if apierrors.IsConflict(err) {
			return "another replica wrote it first; re-reading it and retrying (expected while replicas start together)"
		}
	case "secret is not well-formed, cannot update webhook configurations":
		if strings.Contains(err.Error(), "missing ca.") {
			return "the Secret is not filled yet; another replica is filling it (expected on a fresh install)"
		}
	}
	return ""
}
