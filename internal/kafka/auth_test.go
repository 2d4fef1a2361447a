package kafka

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// authCluster is a cluster with a topic and a committed group, for the
// authentication tests: a successful observation proves the pass got
// through authentication to every request.
func authCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 2, nil)
	c.Produce(t, "orders", 10)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 3, 1: 2})
	return c
}

func requireObserved(t *testing.T, obs proof.Observation) {
	t.Helper()
	requireNoFailures(t, obs)
	if p := partition(t, obs, "orders", 0); p.Committed != 3 || p.LogEnd != 5 {
		t.Fatalf("orders/0: committed %d, log end %d; want 3 and 5", p.Committed, p.LogEnd)
	}
}

func requireNotIn(t *testing.T, what string, obs []proof.Observation, sink *logSink, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, o := range obs {
			for _, f := range o.Failures {
				if strings.Contains(f.Message, s) {
					t.Errorf("%s: failure message holds a credential: %s", what, f.Message)
				}
			}
		}
		if strings.Contains(sink.String(), s) {
			t.Errorf("%s: the logs hold a credential (%d bytes of logs)", what, len(sink.String()))
		}
	}
}

// OAUTHBEARER with the client credentials grant: tokens from a real token
// endpoint on loopback, checked by the broker (signature, expiry) through
// kfake's request controls. One token serves every connection until it
// expires; the client secret and the token never reach a log or a message.
func TestObserveOAuthBearerClientCredentials(t *testing.T) {
	c := authCluster(t)
	te := kafkatest.NewTokenEndpoint(t, "retention-guard", "client-secret-s3cr3t")
	broker := c.RequireOAuthBearer(t, te, 0)

	o, sink := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "OAUTHBEARER", OAuth: &OAuthBearer{
		TokenURL: te.URL, ClientID: "retention-guard", ClientSecret: "client-secret-s3cr3t",
		Scopes:     []string{"kafka"},
		Extensions: map[string]string{"logicalCluster": "lkc-abc123", "identityPoolId": "pool-x1"},
	}}}
	for range 2 {
		obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
		requireObserved(t, obs[0])
	}
	if broker.Accepted() == 0 || broker.Rejected() != 0 {
		t.Fatalf("broker accepted %d and rejected %d authentications (%v)", broker.Accepted(), broker.Rejected(), broker.Errors())
	}
	for _, p := range broker.Principals() {
		if p != "retention-guard" {
			t.Errorf("authenticated as %q, want the client id", p)
		}
	}
	for _, ext := range broker.Extensions() {
		if ext["logicalCluster"] != "lkc-abc123" || ext["identityPoolId"] != "pool-x1" {
			t.Errorf("extensions %v, want Confluent Cloud's logicalCluster and identityPoolId", ext)
		}
	}
	if n := te.Requests(); n != 1 {
		t.Errorf("the token endpoint was asked %d times for %d authentications; a token is reused until it expires", n, broker.Accepted())
	}
	if got := te.Scopes(); len(got) != 1 || got[0] != "kafka" {
		t.Errorf("scopes requested %v, want [kafka]", got)
	}
	requireNotIn(t, "success", nil, sink, "client-secret-s3cr3t", te.Issue("retention-guard", "kafka", time.Hour)[:40])
}

// The identity provider refuses the client: AuthenticationFailed with what
// it said, and no request reaches the broker.
func TestObserveOAuthBearerRefusedClient(t *testing.T) {
	c := authCluster(t)
	te := kafkatest.NewTokenEndpoint(t, "retention-guard", "right-secret")
	c.RequireOAuthBearer(t, te, 0)

	var ok passed
	o, sink := newTestObserver(t, WithRequestHook(ok.hook))
	conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "OAUTHBEARER", OAuth: &OAuthBearer{
		TokenURL: te.URL, ClientID: "retention-guard", ClientSecret: "wrong-secret-value",
	}}}
	obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
	f := requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, proof.APIMetadata, "")
	for _, want := range []string{te.URL, "401", "invalid_client", `client "retention-guard"`} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q does not say %q", f.Message, want)
		}
	}
	ok.requireNone(t)
	requireNotIn(t, "refused client", obs, sink, "wrong-secret-value", "right-secret")
}

// A token the broker does not accept (expired): AuthenticationFailed, the
// broker's reason in the message.
func TestObserveOAuthBearerExpiredToken(t *testing.T) {
	c := authCluster(t)
	te := kafkatest.NewTokenEndpoint(t, "retention-guard", "secret")
	broker := c.RequireOAuthBearer(t, te, 0)
	file := filepath.Join(t.TempDir(), "token")
	expired := te.Issue("retention-guard", "", -time.Minute)
	if err := os.WriteFile(file, []byte(expired), 0o600); err != nil {
		t.Fatal(err)
	}
	var ok passed
	o, sink := newTestObserver(t, WithRequestHook(ok.hook))
	conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "OAUTHBEARER", OAuth: &OAuthBearer{TokenFile: file}}}
	obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
	f := requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, proof.APIMetadata, "")
	if !strings.Contains(f.Message, "the token in "+file) {
		t.Errorf("message %q does not name the token file", f.Message)
	}
	if broker.Rejected() == 0 {
		t.Errorf("the broker rejected nothing: %v", broker.Errors())
	}
	ok.requireNone(t)
	requireNotIn(t, "expired token", obs, sink, expired)
}

// A token file (a projected ServiceAccount token) is read for every
// authentication: when the kubelet rotates it and the old token is no
// longer accepted, the same pooled client re-authenticates (KIP-368) with
// the new one, without a restart.
func TestObserveOAuthBearerTokenFileRotation(t *testing.T) {
	c := authCluster(t)
	te := kafkatest.NewTokenEndpoint(t, "unused", "unused")
	var accept string
	broker := c.RequireSASL(t, "OAUTHBEARER", time.Second, func(auth []byte) (string, map[string]string, error) {
		token, ext, err := kafkatest.ParseOAuthBearer(auth)
		if err != nil {
			return "", nil, err
		}
		if token != accept {
			return "", nil, errTokenRevoked
		}
		sub, err := te.Verify(token)
		return sub, ext, err
	})
	file := filepath.Join(t.TempDir(), "token")
	write := func(subject string) {
		accept = te.Issue(subject, "", time.Hour)
		// The kubelet writes projected tokens atomically (a symlink
		// swap); a rename is the same for a reader.
		tmp := file + ".new"
		if err := os.WriteFile(tmp, []byte(accept+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write("system:serviceaccount:retention-guard-system:retention-guard")

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "OAUTHBEARER", OAuth: &OAuthBearer{TokenFile: file}}}
	target := Target{Group: "billing", Topics: []string{"orders"}}
	requireObserved(t, observe(t, o, conn, target)[0])

	write("rotated")
	requireObserved(t, observe(t, o, conn, target)[0])
	principals := broker.Principals()
	if principals[len(principals)-1] != "rotated" {
		t.Errorf("principals %v: the last authentication did not use the rotated token", principals)
	}
}

// passed records the requests the observer's client completed, by API:
// with credentials refused, none but ApiVersions and the SASL exchange
// may have been answered. (The broker side cannot tell: kfake's controls
// do not say which client a request came from, and the test helpers'
// own client keeps refreshing metadata.)
type passed struct {
	mu   sync.Mutex
	apis []string
}

func (p *passed) hook(api string, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch api {
	case "ApiVersions", "SASLHandshake", "SASLAuthenticate":
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.apis = append(p.apis, api)
}

func (p *passed) requireNone(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.apis) > 0 {
		t.Errorf("requests answered without authentication: %v", p.apis)
	}
}

var errTokenRevoked = errorString("token revoked")

type errorString string

func (e errorString) Error() string { return string(e) }

// mskEnv isolates the AWS SDK's default chain: no shared files, no
// instance metadata (never a request off this machine), a region.
func mskEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":                        filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE":            filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":              "true",
		"AWS_REGION":                             "eu-west-1",
		"AWS_ACCESS_KEY_ID":                      "",
		"AWS_SECRET_ACCESS_KEY":                  "",
		"AWS_SESSION_TOKEN":                      "",
		"AWS_PROFILE":                            "",
		"AWS_WEB_IDENTITY_TOKEN_FILE":            "",
		"AWS_ROLE_ARN":                           "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI":     "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
	}
}

// AWS_MSK_IAM: the broker recomputes each payload's SigV4 signature from
// the secret key it knows (as MSK does) for every source of credentials
// these machines can serve: static keys, the environment, and EKS Pod
// Identity's credential endpoint (the SDK's container provider, served on
// loopback). IRSA's web identity exchange needs STS and is not exercised.
func TestObserveMSKIAM(t *testing.T) {
	const (
		akid    = "AKIAIOSFODNN7EXAMPLE"
		secret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
		podAKID = "ASIAPODIDENTITYEXAMPLE"
		podKey  = "pod/identity+secret/KEY0123456789abcdef"
		podTok  = "IQoJb3JpZ2luX2VjEPodIdentitySessionToken"
	)
	cases := []struct {
		name  string
		setup func(t *testing.T) *AWSCredentials
		akid  string
	}{
		{"static keys", func(*testing.T) *AWSCredentials {
			return &AWSCredentials{AccessKeyID: akid, SecretAccessKey: secret}
		}, akid},
		{"environment", func(t *testing.T) *AWSCredentials {
			t.Setenv("AWS_ACCESS_KEY_ID", akid)
			t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
			return nil
		}, akid},
		{"EKS Pod Identity", func(t *testing.T) *AWSCredentials {
			agentToken := "pod-identity-agent-token"
			tokenFile := filepath.Join(t.TempDir(), "eks-pod-identity-token")
			if err := os.WriteFile(tokenFile, []byte(agentToken), 0o600); err != nil {
				t.Fatal(err)
			}
			agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != agentToken {
					http.Error(w, "unauthorized", http.StatusUnauthorized)
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]string{
					"AccessKeyId": podAKID, "SecretAccessKey": podKey, "Token": podTok,
					"AccountId": "111122223333", "Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
				})
			}))
			t.Cleanup(agent.Close)
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", agent.URL+"/v1/credentials")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokenFile)
			return nil
		}, podAKID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mskEnv(t)
			c := authCluster(t)
			broker := c.RequireMSKIAM(t, "eu-west-1", map[string]kafkatest.AWSKey{
				akid:    {SecretAccessKey: secret},
				podAKID: {SecretAccessKey: podKey, SessionToken: podTok},
			})
			o, sink := newTestObserver(t)
			conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "AWS_MSK_IAM", AWS: tc.setup(t)}}
			obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
			requireObserved(t, obs[0])
			if broker.Accepted() == 0 || broker.Rejected() != 0 {
				t.Fatalf("broker accepted %d, rejected %d: %v", broker.Accepted(), broker.Rejected(), broker.Errors())
			}
			for _, p := range broker.Principals() {
				if p != tc.akid {
					t.Errorf("signed by %s, want %s", p, tc.akid)
				}
			}
			requireNotIn(t, tc.name, obs, sink, secret, podKey, podTok)
		})
	}

	t.Run("wrong secret key", func(t *testing.T) {
		mskEnv(t)
		c := authCluster(t)
		broker := c.RequireMSKIAM(t, "eu-west-1", map[string]kafkatest.AWSKey{akid: {SecretAccessKey: secret}})
		var ok passed
		o, sink := newTestObserver(t, WithRequestHook(ok.hook))
		conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "AWS_MSK_IAM",
			AWS: &AWSCredentials{AccessKeyID: akid, SecretAccessKey: "not-the-secret-key-at-all"}}}
		obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
		f := requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, proof.APIMetadata, "")
		if !strings.Contains(f.Message, `AWS access key "`+akid+`"`) {
			t.Errorf("message %q does not name the access key id", f.Message)
		}
		if broker.Rejected() == 0 || !strings.Contains(strings.Join(broker.Errors(), " "), "signature does not match") {
			t.Errorf("the broker did not refuse the signature: %v", broker.Errors())
		}
		ok.requireNone(t)
		requireNotIn(t, "wrong key", obs, sink, "not-the-secret-key-at-all", secret)
	})

	t.Run("no credentials anywhere", func(t *testing.T) {
		mskEnv(t)
		c := authCluster(t)
		c.RequireMSKIAM(t, "eu-west-1", map[string]kafkatest.AWSKey{akid: {SecretAccessKey: secret}})
		var ok passed
		o, _ := newTestObserver(t, WithRequestHook(ok.hook))
		conn := Connection{BootstrapServers: c.Addrs, SASL: &SASL{Mechanism: "AWS_MSK_IAM"}}
		obs := observe(t, o, conn, Target{Group: "billing", Topics: []string{"orders"}})
		f := requireFailure(t, obs[0], proof.ReasonAuthenticationFailed, proof.APIMetadata, "")
		if !strings.Contains(f.Message, "default chain") {
			t.Errorf("message %q does not say the default credential chain found nothing", f.Message)
		}
		ok.requireNone(t)
	})
}
