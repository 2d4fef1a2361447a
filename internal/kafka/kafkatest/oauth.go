package kafkatest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TokenEndpoint is a real OAuth 2 token endpoint served on loopback: it
// grants client_credentials to one client and issues HS256-signed JWTs
// that Verify checks, the way a broker's OAUTHBEARER validator checks an
// identity provider's tokens.
type TokenEndpoint struct {
	URL          string
	ClientID     string
	ClientSecret string
	// Lifetime of the tokens issued (default one hour).
	Lifetime time.Duration

	key []byte
	mu  sync.Mutex
	// Requests counts the token requests, granted or not.
	requests int
	scopes   []string
}

// NewTokenEndpoint starts a token endpoint for clientID and clientSecret,
// closed when the test ends.
func NewTokenEndpoint(t testing.TB, clientID, clientSecret string) *TokenEndpoint {
	t.Helper()
	te := &TokenEndpoint{ClientID: clientID, ClientSecret: clientSecret, Lifetime: time.Hour, key: make([]byte, 32)}
	if _, err := rand.Read(te.key); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(te.serve))
	t.Cleanup(srv.Close)
	te.URL = srv.URL + "/oauth2/token"
	return te
}

func (te *TokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	te.mu.Lock()
	te.requests++
	te.mu.Unlock()
	fail := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/oauth2/token" {
		fail(http.StatusNotFound, "invalid_request", "POST /oauth2/token")
		return
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	// RFC 6749 §2.3.1: client_secret_basic, or the form parameters.
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		fail(http.StatusBadRequest, "unsupported_grant_type", "only client_credentials")
		return
	}
	if id != te.ClientID || secret != te.ClientSecret {
		fail(http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	scope := r.PostForm.Get("scope")
	te.mu.Lock()
	te.scopes = append(te.scopes, scope)
	te.mu.Unlock()
	token := te.Issue(id, scope, te.Lifetime)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": token, "token_type": "Bearer", "expires_in": int(te.Lifetime.Seconds()), "scope": scope,
	})
}

// Issue signs a token for subject, valid for lifetime (negative: already
// expired), as the endpoint would grant it.
func (te *TokenEndpoint) Issue(subject, scope string, lifetime time.Duration) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"sub": subject, "scope": scope, "exp": time.Now().Add(lifetime).Unix(), "iss": te.URL})
	payload := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, te.key)
	mac.Write([]byte(payload))
	return payload + "." + enc.EncodeToString(mac.Sum(nil))
}

// Verify checks a token's signature and expiry and returns its subject.
func (te *TokenEndpoint) Verify(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	mac := hmac.New(sha256.New, te.key)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return "", errors.New("bad signature")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		return "", err
	}
	if time.Now().Unix() >= claims.Exp {
		return "", errors.New("token expired")
	}
	return claims.Sub, nil
}

// Requests is how many token requests the endpoint served.
func (te *TokenEndpoint) Requests() int {
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.requests
}

// Scopes are the scope parameters of the granted requests.
func (te *TokenEndpoint) Scopes() []string {
	te.mu.Lock()
	defer te.mu.Unlock()
	return append([]string(nil), te.scopes...)
}

// SASLLog records what the broker side of a SASL mechanism saw.
type SASLLog struct {
	mu sync.Mutex
	// Accepted and Rejected count SASLAuthenticate requests.
	accepted, rejected int
	principals         []string
	extensions         []map[string]string
	errors             []string
}

func (l *SASLLog) record(principal string, ext map[string]string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.rejected++
		l.errors = append(l.errors, err.Error())
		return
	}
	l.accepted++
	l.principals = append(l.principals, principal)
	l.extensions = append(l.extensions, ext)
}

// Accepted is how many authentications the broker accepted.
func (l *SASLLog) Accepted() int { l.mu.Lock(); defer l.mu.Unlock(); return l.accepted }

// Rejected is how many it refused.
func (l *SASLLog) Rejected() int { l.mu.Lock(); defer l.mu.Unlock(); return l.rejected }

// Principals are the principals of the accepted authentications.
func (l *SASLLog) Principals() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.principals...)
}

// Extensions are the SASL extensions of the accepted authentications.
func (l *SASLLog) Extensions() []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]map[string]string(nil), l.extensions...)
}

// Errors are why the broker refused authentications.
func (l *SASLLog) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// RequireSASL makes the cluster's brokers speak mechanism through kfake's
// request controls (kfake itself knows only PLAIN and SCRAM): the
// handshake accepts mechanism and refuses any other, and each
// SASLAuthenticate is judged by verify, which returns the principal or why
// the credentials are refused. A refused authentication answers
// SASL_AUTHENTICATION_FAILED, as Kafka does. lifetime, when positive, is
// the session lifetime returned (KIP-368): clients re-authenticate before
// it ends, calling their credential source again.
//
// kfake's own SASL stays off (it cannot be told a control authenticated a
// connection): tests check from the client side that nothing but the SASL
// exchange was answered when credentials are refused.
func (c *Cluster) RequireSASL(t testing.TB, mechanism string, lifetime time.Duration,
	verify func(auth []byte) (principal string, ext map[string]string, err error)) *SASLLog {
	t.Helper()
	if c.Cluster == nil {
		t.Fatal("kafkatest: RequireSASL needs an in-process kfake cluster")
	}
	log := &SASLLog{}
	c.ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLHandshakeRequest)
		resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{mechanism}
		if r.Mechanism != mechanism {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLAuthenticateRequest)
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		principal, ext, err := verify(r.SASLAuthBytes)
		log.record(principal, ext, err)
		if err != nil {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "Authentication failed: " + err.Error()
			resp.ErrorMessage = &msg
			return resp, nil, true
		}
		if mechanism == "AWS_MSK_IAM" {
			// MSK answers with a JSON document; clients need it non-empty.
			resp.SASLAuthBytes = []byte(`{"version":"2020_10_22","request-id":"kafkatest"}`)
		}
		if lifetime > 0 {
			resp.SessionLifetimeMillis = lifetime.Milliseconds()
		}
		return resp, nil, true
	})
	return log
}

// ParseOAuthBearer reads a client's first OAUTHBEARER message (RFC 7628
// §3.1): "n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]...\x01".
func ParseOAuthBearer(b []byte) (token string, ext map[string]string, err error) {
	s := string(b)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") {
		return "", nil, fmt.Errorf("not an OAUTHBEARER client message")
	}
	if !strings.HasSuffix(rest, "\x01\x01") {
		return "", nil, fmt.Errorf("OAUTHBEARER message not terminated")
	}
	ext = make(map[string]string)
	for kv := range strings.SplitSeq(strings.TrimSuffix(rest, "\x01\x01"), "\x01") {
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			token, ok = strings.CutPrefix(v, "Bearer ")
			if !ok {
				return "", nil, fmt.Errorf("auth is not a Bearer token")
			}
			continue
		}
		ext[k] = v
	}
	if token == "" {
		return "", nil, fmt.Errorf("no token")
	}
	return token, ext, nil
}

// RequireOAuthBearer makes the brokers accept OAUTHBEARER tokens that te
// issued and that have not expired, as a broker's JWT validator does.
func (c *Cluster) RequireOAuthBearer(t testing.TB, te *TokenEndpoint, lifetime time.Duration) *SASLLog {
	t.Helper()
	return c.RequireSASL(t, "OAUTHBEARER", lifetime, func(auth []byte) (string, map[string]string, error) {
		token, ext, err := ParseOAuthBearer(auth)
		if err != nil {
			return "", nil, err
		}
		sub, err := te.Verify(token)
		if err != nil {
			return "", nil, fmt.Errorf("invalid token: %v", err)
		}
		return sub, ext, nil
	})
}
