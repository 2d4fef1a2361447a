package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/retentionguard/retention-guard/internal/testca"
)

// selfSigned is a serving certificate for dnsName signed by a CA made for
// the test, and the CA's PEM (what a webhook configuration's caBundle
// holds).
func selfSigned(t *testing.T, dnsName string) (tls.Certificate, []byte) {
	t.Helper()
	ca, err := testca.New("helm-test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.KeyPair(testca.Cert{Subject: pkix.Name{CommonName: dnsName}, Hosts: []string{dnsName},
		Usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		t.Fatal(err)
	}
	return pair, ca.PEM
}

// TestPostReview: the webhook check passes only when the webhook, reached
// over TLS for the Service's name with the caBundle's CA, answers the
// probe's AdmissionReview (its uid) with a refusal naming the probe policy.
func TestPostReview(t *testing.T) {
	const name = "rg-webhook.rg.svc"
	o := &helmTestOptions{probeNamespace: "rg-test", probePolicy: "rg-test-probe", image: "img"}
	dep := probeDeployment(o, "retentionguard.io/helm-test", "rg")
	cert, ca := selfSigned(t, name)
	_, otherCA := selfSigned(t, name)
	answer := func(allowed bool, msg string, sameUID bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var ar admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil {
				http.Error(w, "bad review", http.StatusBadRequest)
				return
			}
			if ar.Request.DryRun == nil || !*ar.Request.DryRun || ar.Request.Namespace != o.probeNamespace {
				http.Error(w, "not the probe's dry-run", http.StatusBadRequest)
				return
			}
			uid := ar.Request.UID
			if !sameUID {
				uid = "other"
			}
			_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: ar.TypeMeta, Response: &admissionv1.AdmissionResponse{
				UID: uid, Allowed: allowed, Result: &metav1.Status{Message: msg},
			}})
		}
	}
	for _, tc := range []struct {
		name       string
		handler    http.HandlerFunc
		serverName string
		ca         []byte
		want       string // empty: passes
	}{
		{"refused naming the probe", answer(false, "retention-guard refused this rollout: policy rg-test-probe is Unknown", true), name, ca, ""},
		{"allowed", answer(true, "", true), name, ca, "allowed"},
		{"refused for another reason", answer(false, "something else", true), name, ca, "without naming the probe policy"},
		{"the answer of another request", answer(false, "policy rg-test-probe", false), name, ca, "is not the request's"},
		{"an error status", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }, name, ca, "HTTP 500"},
		{"a certificate for another name", answer(false, "policy rg-test-probe", true), "other.rg.svc", ca, "certificate"},
		{"a CA the API server does not trust", answer(false, "policy rg-test-probe", true), name, otherCA, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tc.handler)
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			srv.StartTLS()
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "https://")
			msg, err := postReview(context.Background(), addr, tc.serverName, tc.ca, "/validate", o, dep)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("failed: %v", err)
			case tc.want == "" && !strings.Contains(msg, o.probePolicy):
				t.Errorf("message %q", msg)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestHelmTestUsage: the flags the chart passes are required.
func TestHelmTestUsage(t *testing.T) {
	var out, errOut strings.Builder
	if code := Execute([]string{"helm-test", "--service=s"}, &out, &errOut); code != ExitUsage {
		t.Errorf("exit %d, want %d: %s", code, ExitUsage, errOut.String())
	}
	if code := Execute([]string{"helm-test", "--service=s", "--webhook-configuration=w", "--probe-namespace=n", "--probe-policy=p", "--image=i", "--probe-label=nolabel"}, &out, &errOut); code != ExitUsage {
		t.Errorf("a probe label without =: exit %d, want %d", code, ExitUsage)
	}
}
