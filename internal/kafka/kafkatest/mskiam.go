package kafkatest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// AWSKey is an AWS access key the MSK IAM broker side knows.
type AWSKey struct {
	SecretAccessKey string
	// SessionToken, when set, must be sent with the key.
	SessionToken string
}

// RequireMSKIAM makes the brokers accept AWS_MSK_IAM authentication signed
// with one of keys (by access key id), for region, the way Amazon MSK
// does: the client's payload is a SigV4-presigned request for the action
// kafka-cluster:Connect on the broker's host, and the broker recomputes the
// signature (AWS Signature Version 4, "Create a signed AWS API request")
// from the secret key it knows and compares. It also checks the payload's
// version, the signing time (within 15 minutes of now, and not expired),
// the credential scope and the session token.
//
// What this cannot check: Amazon's own IAM policy evaluation (which
// kafka-cluster:* actions the role may take) and real STS-issued session
// tokens; those need AWS.
func (c *Cluster) RequireMSKIAM(t testing.TB, region string, keys map[string]AWSKey) *SASLLog {
	t.Helper()
	return c.RequireSASL(t, "AWS_MSK_IAM", 0, func(auth []byte) (string, map[string]string, error) {
		return VerifyMSKIAM(auth, region, keys, time.Now())
	})
}

// VerifyMSKIAM checks one AWS_MSK_IAM payload and returns the access key
// id that signed it.
func VerifyMSKIAM(payload []byte, region string, keys map[string]AWSKey, now time.Time) (string, map[string]string, error) {
	var kv map[string]string
	if err := json.Unmarshal(payload, &kv); err != nil {
		return "", nil, fmt.Errorf("payload is not a JSON object of strings: %v", err)
	}
	if kv["version"] != "2020_10_22" {
		return "", nil, fmt.Errorf("version %q, want 2020_10_22", kv["version"])
	}
	if kv["action"] != "kafka-cluster:Connect" {
		return "", nil, fmt.Errorf("action %q, want kafka-cluster:Connect", kv["action"])
	}
	if kv["x-amz-algorithm"] != "AWS4-HMAC-SHA256" {
		return "", nil, fmt.Errorf("algorithm %q", kv["x-amz-algorithm"])
	}
	if kv["x-amz-signedheaders"] != "host" {
		return "", nil, fmt.Errorf("signed headers %q, want host", kv["x-amz-signedheaders"])
	}
	host := kv["host"]
	if host == "" {
		return "", nil, fmt.Errorf("no host")
	}
	cred := strings.Split(kv["x-amz-credential"], "/")
	if len(cred) != 5 {
		return "", nil, fmt.Errorf("credential %q is not key/date/region/service/aws4_request", kv["x-amz-credential"])
	}
	akid, date := cred[0], cred[1]
	if cred[2] != region || cred[3] != "kafka-cluster" || cred[4] != "aws4_request" {
		return "", nil, fmt.Errorf("credential scope %s, want <date>/%s/kafka-cluster/aws4_request", strings.Join(cred[1:], "/"), region)
	}
	key, ok := keys[akid]
	if !ok {
		return "", nil, fmt.Errorf("unknown access key id %s", akid)
	}
	if kv["x-amz-security-token"] != key.SessionToken {
		return "", nil, fmt.Errorf("session token does not match the access key")
	}
	signedAt, err := time.Parse("20060102T150405Z", kv["x-amz-date"])
	if err != nil || !strings.HasPrefix(kv["x-amz-date"], date) {
		return "", nil, fmt.Errorf("x-amz-date %q does not match the credential date %s", kv["x-amz-date"], date)
	}
	expires, err := strconv.Atoi(kv["x-amz-expires"])
	if err != nil || expires <= 0 || expires > 900 {
		return "", nil, fmt.Errorf("x-amz-expires %q, want 1..900", kv["x-amz-expires"])
	}
	if d := now.Sub(signedAt); d < -15*time.Minute || d > time.Duration(expires)*time.Second {
		return "", nil, fmt.Errorf("signed at %s, %s from now", signedAt, d)
	}

	// The presigned request the client signed: GET / on the host, the
	// query being every X-Amz-* parameter but the signature, and Action.
	q := url.Values{}
	q.Set("Action", kv["action"])
	for _, name := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Security-Token"} {
		if v, ok := kv[strings.ToLower(name)]; ok {
			q.Set(name, v)
		}
	}
	canonical := "GET\n/\n" + canonicalQuery(q) + "\nhost:" + host + "\n\nhost\n" + hexSHA256("")
	scope := strings.Join(cred[1:], "/")
	toSign := "AWS4-HMAC-SHA256\n" + kv["x-amz-date"] + "\n" + scope + "\n" + hexSHA256(canonical)
	signingKey := []byte("AWS4" + key.SecretAccessKey)
	for _, part := range []string{date, region, "kafka-cluster", "aws4_request"} {
		signingKey = hmacSHA256(signingKey, part)
	}
	want := hex.EncodeToString(hmacSHA256(signingKey, toSign))
	if !hmac.Equal([]byte(want), []byte(kv["x-amz-signature"])) {
		return "", nil, fmt.Errorf("signature does not match (wrong secret access key?)")
	}
	return akid, map[string]string{"host": host, "user-agent": kv["user-agent"]}, nil
}

// canonicalQuery sorts the parameters by name and encodes them as SigV4
// wants: RFC 3986 unreserved characters as they are, everything else
// percent-encoded (a space as %20).
func canonicalQuery(q url.Values) string {
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, uriEncode(k)+"="+uriEncode(q.Get(k)))
	}
	return strings.Join(parts, "&")
}

func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || strings.IndexByte("-_.~", ch) >= 0 {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

func hexSHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}
