// Package chart_test checks the Helm chart charts/retention-guard as
// people install it: rendered with the values they set (test/chartrender,
// values.schema.json included) and linted, its objects against what
// `make manifests` generates (CRDs, RBAC, the webhook), applied to a real
// kube-apiserver (envtest), its alert rules replayed by promtool, its
// dashboard against Grafana's schema, and its helm test hook.
//
// The tests only compile into the test binary; this file is the package.
package chart_test
