package kafka

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The mechanisms the managed services use: OAUTHBEARER (Confluent Cloud,
// Strimzi with OAuth, Azure Event Hubs' Kafka endpoint, Redpanda) and
// AWS_MSK_IAM (Amazon MSK). Credentials are fetched when a broker
// connection authenticates (and re-authenticates, KIP-368), never logged,
// and kept only as long as the pooled client that uses them.
const (
	MechanismOAuthBearer = "OAUTHBEARER"
	MechanismAWSMSKIAM   = "AWS_MSK_IAM"
)

// OAuthBearer says where OAUTHBEARER tokens come from: exactly one of
// TokenURL (the client credentials grant, RFC 6749 §4.4) and TokenFile.
type OAuthBearer struct {
	// TokenURL is the identity provider's token endpoint. Tokens are kept
	// until shortly before they expire.
	TokenURL     string
	ClientID     string
	ClientSecret string
	Scopes       []string
	// Audience, when set, is sent as the audience parameter.
	Audience string
	// TokenFile is read for every authentication, so a rotated file (a
	// projected ServiceAccount token) takes effect at the next one.
	TokenFile string
	// Extensions are SASL extensions (KIP-342), e.g. Confluent Cloud's
	// logicalCluster and identityPoolId.
	Extensions map[string]string
}

// AWSCredentials are static AWS keys for AWS_MSK_IAM. Without them the AWS
// SDK's default credential chain is used: environment, shared files, web
// identity (IRSA), container credentials (EKS Pod Identity, ECS), IMDS.
type AWSCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// tokenHTTPTimeout bounds one request to a token endpoint or to the AWS
// credential sources.
const tokenHTTPTimeout = 10 * time.Second

// credentialError is a failure to obtain credentials before talking to a
// broker (a token endpoint refused the client, a token file is missing, no
// AWS credentials): an authentication failure, whatever its cause.
type credentialError struct{ err error }

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

// oauthMechanism returns the OAUTHBEARER mechanism of o. A token endpoint's
// tokens are cached (oauth2.ReuseTokenSource) for the life of the client.
func oauthMechanism(o *OAuthBearer) (sasl.Mechanism, error) {
	switch {
	case o == nil:
		return nil, errors.New("OAUTHBEARER needs a token endpoint or a token file")
	case (o.TokenURL == "") == (o.TokenFile == ""):
		return nil, errors.New("OAUTHBEARER needs exactly one of a token endpoint and a token file")
	case o.TokenFile != "":
		path := o.TokenFile
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return oauth.Auth{}, &credentialError{fmt.Errorf("OAUTHBEARER token file: %w", err)}
			}
			token := strings.TrimSpace(string(b))
			if token == "" {
				return oauth.Auth{}, &credentialError{fmt.Errorf("OAUTHBEARER token file %s is empty", path)}
			}
			return oauth.Auth{Token: token, Extensions: o.Extensions}, nil
		}), nil
	}
	u, err := url.Parse(o.TokenURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("OAUTHBEARER token endpoint %q is not an http(s) URL", o.TokenURL)
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("OAUTHBEARER with a token endpoint needs a client ID and a client secret")
	}
	cc := &clientcredentials.Config{
		ClientID:     o.ClientID,
		ClientSecret: o.ClientSecret,
		TokenURL:     o.TokenURL,
		Scopes:       o.Scopes,
	}
	if o.Audience != "" {
		cc.EndpointParams = url.Values{"audience": {o.Audience}}
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: tokenHTTPTimeout})
	source := cc.TokenSource(ctx) // a ReuseTokenSource: fetched again only near expiry
	endpoint := u.Scheme + "://" + u.Host + u.Path
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tok, err := source.Token()
		if err != nil {
			return oauth.Auth{}, &credentialError{fmt.Errorf("OAUTHBEARER token endpoint %s: %s", endpoint, describeTokenError(err))}
		}
		return oauth.Auth{Token: tok.AccessToken, Extensions: o.Extensions}, nil
	}), nil
}

// describeTokenError keeps what the identity provider said (status, OAuth
// error code and description) and drops the rest of its answer.
func describeTokenError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		var parts []string
		if re.Response != nil {
			parts = append(parts, "answered "+re.Response.Status)
		}
		if re.ErrorCode != "" {
			parts = append(parts, re.ErrorCode)
		}
		if re.ErrorDescription != "" {
			parts = append(parts, re.ErrorDescription)
		}
		if len(parts) > 0 {
			return strings.Join(parts, ": ")
		}
	}
	return err.Error()
}

// awsMechanism returns the AWS_MSK_IAM mechanism: static keys, or the AWS
// SDK's default credential chain, loaded once per client and cached by the
// SDK (which refreshes expiring credentials: IRSA, Pod Identity). The
// region franz-go signs for comes from the broker's host name
// (b-1.<cluster>.<id>.c2.kafka.<region>.amazonaws.com), else AWS_REGION.
func awsMechanism(static *AWSCredentials) sasl.Mechanism {
	if static != nil {
		return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) {
			return aws.Auth{
				AccessKey:    static.AccessKeyID,
				SecretKey:    static.SecretAccessKey,
				SessionToken: static.SessionToken,
				UserAgent:    "retention-guard",
			}, nil
		})
	}
	var (
		once    sync.Once
		loadErr error
		chain   func(context.Context) (aws.Auth, error)
	)
	return aws.ManagedStreamingIAM(func(ctx context.Context) (aws.Auth, error) {
		once.Do(func() {
			lctx, cancel := context.WithTimeout(context.Background(), tokenHTTPTimeout)
			defer cancel()
			cfg, err := awsconfig.LoadDefaultConfig(lctx,
				awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(tokenHTTPTimeout)))
			if err != nil {
				loadErr = err
				return
			}
			creds := cfg.Credentials
			chain = func(ctx context.Context) (aws.Auth, error) {
				c, err := creds.Retrieve(ctx)
				if err != nil {
					return aws.Auth{}, err
				}
				return aws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken,
					UserAgent: "retention-guard"}, nil
			}
		})
		if loadErr != nil {
			return aws.Auth{}, &credentialError{fmt.Errorf("AWS_MSK_IAM: loading the AWS configuration: %w", loadErr)}
		}
		a, err := chain(ctx)
		if err != nil {
			return aws.Auth{}, &credentialError{fmt.Errorf("AWS_MSK_IAM: no AWS credentials from the default chain "+
				"(IRSA, EKS Pod Identity, environment, shared files, instance metadata): %w", err)}
		}
		return a, nil
	})
}
