package logging

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The issue on a real node: every fresh install logged
// `level=error … could not refresh CA and server certs … the object has
// been modified` while both replicas filled the empty Secret, and
// `level=error … Failed to update lease … the object has been modified`
// while both took the free Lease.
func TestQuietRacesLogsTheReplicasRaceAtInfo(t *testing.T) {
	rec := &recorder{}
	log := QuietRaces(logr.New(rec))
	rotator := log.WithName(rotatorLogger)
	conflict := fmt.Errorf("wrapped: %w", apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "rg-webhook-cert",
		errors.New("the object has been modified; please apply your changes to the latest version and try again")))

	rotator.Error(conflict, "could not refresh CA and server certs")
	rotator.Error(errors.New("Cert secret is not well-formed, missing ca.crt"), "secret is not well-formed, cannot update webhook configurations")
	rotator.WithValues("webhook", "rg").Error(conflict, "Error updating webhook with certificate")
	election := log.WithName(electionLogger)
	election.Error(apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "rg-leader",
		errors.New("the object has been modified")), "Failed to update lease")
	election.Error(apierrors.NewAlreadyExists(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "rg-leader"),
		"Error initially creating lease lock")
	// Real failures keep their level: another error of the rotator or the
	// election, the same message from another logger.
	rotator.Error(errors.New(`secrets "rg-webhook-cert" is forbidden`), "could not refresh CA and server certs")
	log.WithName("webhook").Error(conflict, "could not refresh CA and server certs")
	election.Error(errors.New(`leases.coordination.k8s.io "rg-leader" is forbidden`), "Failed to update lease")

	want := []string{
		"info cert-rotation: could not refresh CA and server certs: another replica wrote it first; re-reading it and retrying (expected while replicas start together)",
		"info cert-rotation: secret is not well-formed, cannot update webhook configurations: the Secret is not filled yet; another replica is filling it (expected on a fresh install)",
		"info cert-rotation: Error updating webhook with certificate: another replica wrote it first; re-reading it and retrying (expected while replicas start together)",
		"info leaderelection: Failed to update lease: another replica took the Lease first; following it (expected while replicas start together)",
		"info leaderelection: Error initially creating lease lock: another replica took the Lease first; following it (expected while replicas start together)",
		"error cert-rotation: could not refresh CA and server certs",
		"error webhook: could not refresh CA and server certs",
		"error leaderelection: Failed to update lease",
	}
	if len(rec.lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(rec.lines), len(want), strings.Join(rec.lines, "\n"))
	}
	for i := range want {
		if rec.lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, rec.lines[i], want[i])
		}
	}
}

// recorder is a LogSink that records "level name: msg" per line.
type recorder struct {
	name  string
	lines []string
	root  *recorder
}

func (r *recorder) Init(logr.RuntimeInfo) {}
func (r *recorder) Enabled(int) bool      { return true }
func (r *recorder) Info(_ int, msg string, _ ...any) {
	r.add("info " + r.name + ": " + msg)
}
func (r *recorder) Error(_ error, msg string, _ ...any) {
	r.add("error " + r.name + ": " + msg)
}
func (r *recorder) WithValues(...any) logr.LogSink { return r }
func (r *recorder) WithName(name string) logr.LogSink {
	return &recorder{name: name, root: r.top()}
}
func (r *recorder) top() *recorder {
	if r.root != nil {
		return r.root
	}
	return r
}
func (r *recorder) add(line string) { r.top().lines = append(r.top().lines, line) }
