package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// shape is the cluster the benchmark builds: the objects every step runs
// among, and the policies each step adds up to.
type shape struct {
	Namespaces       int
	Clusters         int // Kafka clusters
	Brokers          int // brokers per Kafka cluster
	TopicsPerCluster int
	Partitions       int
	Records          int // records per partition
	Secrets          int
	Deployments      int
	CronJobs         int
	// Steps are the policy counts measured, ascending; the last is the
	// number of groups (one per policy) the Kafka clusters hold.
	Steps []int
}

// fullShape is issue 16's cluster: 5,000 policies in 500 namespaces on 3
// Kafka clusters (900 topics × 12 partitions), 20,000 Secrets, 10,000
// Deployments and 5,000 CronJobs the manager does not own, with issue 26's
// last step of 20,000 policies among the same objects (20,000 groups, 40
// policies per namespace). The first step puts one policy on each Kafka
// cluster: what one policy costs, the reference for the others.
var fullShape = shape{
	Namespaces:       500,
	Clusters:         3,
	Brokers:          3,
	TopicsPerCluster: 300,
	Partitions:       12,
	Records:          20,
	Secrets:          20000,
	Deployments:      10000,
	CronJobs:         5000,
	Steps:            []int{3, 500, 1000, 2000, 5000, 20000},
}

// scaled multiplies the counts by f (for a quick run on a busy machine),
// keeping at least one of each and the per-namespace ratios.
func (s shape) scaled(f float64) shape {
	if f == 1 {
		return s
	}
	n := func(v int) int { return max(1, int(math.Round(float64(v)*f))) }
	out := s
	out.Namespaces = n(s.Namespaces)
	out.TopicsPerCluster = max(2, n(s.TopicsPerCluster))
	out.Secrets, out.Deployments, out.CronJobs = n(s.Secrets), n(s.Deployments), n(s.CronJobs)
	out.Steps = nil
	for i, st := range s.Steps {
		if i == 0 {
			out.Steps = append(out.Steps, st) // one per cluster, whatever the scale
			continue
		}
		out.Steps = append(out.Steps, max(s.Clusters, n(st)))
	}
	slices.Sort(out.Steps)
	out.Steps = slices.Compact(out.Steps)
	return out
}

// parseSteps reads "3,500,1000".
func parseSteps(v string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-steps %q: each step is a positive number of policies", v)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (s shape) maxPolicies() int { return s.Steps[len(s.Steps)-1] }

func (s shape) String() string {
	return fmt.Sprintf("%d policies in %d namespaces on %d Kafka clusters of %d brokers (%d groups, %d topics × %d partitions in all), "+
		"%d Secrets, %d Deployments, %d CronJobs",
		s.maxPolicies(), s.Namespaces, s.Clusters, s.Brokers, s.maxPolicies(), s.Clusters*s.TopicsPerCluster, s.Partitions,
		s.Secrets, s.Deployments, s.CronJobs)
}

// Names. Object g of a kind lives in namespace g mod Namespaces, so
// policy g, the Deployment that runs its consumers and the CronJob that
// may share its group are neighbours.

func (s shape) namespace(g int) string { return fmt.Sprintf("team-%03d", g%s.Namespaces) }

func policyName(g int) string { return fmt.Sprintf("consumer-%05d", g) }

func groupName(g int) string { return fmt.Sprintf("group-%05d", g) }

func topicName(t int) string { return fmt.Sprintf("topic-%03d", t) }

// cluster is the Kafka cluster of policy g.
func (s shape) cluster(g int) int { return g % s.Clusters }

// topics are policy g's two topics on its cluster.
func (s shape) topics(g int) []string {
	i := g / s.Clusters
	a := i % s.TopicsPerCluster
	b := (i + s.TopicsPerCluster/2) % s.TopicsPerCluster
	if a == b {
		return []string{topicName(a)}
	}
	return []string{topicName(a), topicName(b)}
}

// lagging policies' groups committed short of the log end (their
// headroom is measured from a record's timestamp).
func lagging(g int) bool { return g%10 == 9 }
