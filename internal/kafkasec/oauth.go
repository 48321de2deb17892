package kafkasec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/sluice-io/sluice/internal/tlsconf"
)

// The sasl.login.callback.handler.class values that select Kafka's
// client-credentials login (the class moved out of "secured" in 3.4).
var oauthHandlerClasses = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}

// TokenError is a failure to obtain an OAUTHBEARER token: the client
// cannot authenticate until the token endpoint answers.
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return "OAUTHBEARER token: " + e.Reason }

// oauthLogin fetches tokens with the client credentials grant, as Kafka's
// HttpAccessTokenRetriever does, and caches each until its refresh time
// (ExpiringCredentialRefreshingLogin's rules: a share of the token's life
// given by the window factor and jitter, no later than the buffer before
// expiry, no sooner than the minimum period). franz-go asks for a token
// for every new connection and re-authentication, so the refresh happens
// on the first request after the refresh time; no goroutine is needed.
type oauthLogin struct {
	endpoint              string
	clientID, secret      string
	scope                 string
	urlencodeHeader       bool
	extensions            map[string]string
	subClaim, scopeClaim  string
	factor, jitter        float64
	minPeriod, buffer     time.Duration
	retryBackoff, backoff time.Duration // initial and maximum wait between attempts
	http                  *http.Client
	now                   func() time.Time

	mu        sync.Mutex
	token     string
	refreshAt time.Time
	expiresAt time.Time
}

func newOAuthMechanism(props map[string]string, options map[string]string) (sasl.Mechanism, error) {
	l, err := newOAuthLogin(props, options)
	if err != nil {
		return nil, err
	}
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		token, err := l.Token(ctx)
		if err != nil {
			return oauth.Auth{}, err
		}
		return oauth.Auth{Token: token, Extensions: l.extensions}, nil
	}), nil
}

func newOAuthLogin(props map[string]string, options map[string]string) (*oauthLogin, error) {
	if h := strings.TrimSpace(props["sasl.login.callback.handler.class"]); h != "" && !slices.Contains(oauthHandlerClasses, h) {
		return nil, fmt.Errorf("sasl.login.callback.handler.class: %q cannot be loaded; Sluice implements %s (the client credentials grant)", h, oauthHandlerClasses[0])
	}
	l := &oauthLogin{extensions: map[string]string{}, now: time.Now}
	endpoint := strings.TrimSpace(props["sasl.oauthbearer.token.endpoint.url"])
	u, err := url.Parse(endpoint)
	switch {
	case endpoint == "":
		return nil, errors.New("sasl.oauthbearer.token.endpoint.url: required with sasl.mechanism=OAUTHBEARER " +
			"(Sluice implements the client credentials login; Kafka's unsecured test tokens are not supported)")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return nil, errors.New("sasl.oauthbearer.token.endpoint.url: not an http:// or https:// URL (a file: token is not supported)")
	}
	l.endpoint = endpoint
	var tlsProps = map[string]string{}
	for k, v := range options {
		switch {
		case k == "clientId":
			l.clientID = v
		case k == "clientSecret":
			l.secret = v
		case k == "scope":
			l.scope = v
		case strings.HasPrefix(k, "extension_"):
			// SASL extensions sent with the token, as Kafka's login module sends them.
			l.extensions[strings.TrimPrefix(k, "extension_")] = v
		case strings.HasPrefix(k, "ssl."):
			// Kafka's login reads the token endpoint's TLS settings from
			// the module's options (JaasOptionsUtils.createSSLSocketFactory).
			tlsProps[k] = v
		case strings.HasPrefix(k, "unsecuredLogin"):
			return nil, fmt.Errorf("sasl.jaas.config: option %q belongs to Kafka's unsecured (unsigned test token) login, which Sluice does not implement", k)
		default:
			return nil, fmt.Errorf("sasl.jaas.config: option %q is not one of %s's (clientId, clientSecret, scope, extension_*, ssl.*)", k, oauthLoginModule)
		}
	}
	if l.clientID == "" {
		return nil, errors.New("sasl.jaas.config: the clientId option is missing or empty")
	}
	if l.secret == "" {
		return nil, errors.New("sasl.jaas.config: the clientSecret option is missing or empty")
	}
	if l.subClaim = strings.TrimSpace(props["sasl.oauthbearer.sub.claim.name"]); l.subClaim == "" {
		l.subClaim = "sub"
	}
	if l.scopeClaim = strings.TrimSpace(props["sasl.oauthbearer.scope.claim.name"]); l.scopeClaim == "" {
		l.scopeClaim = "scope"
	}
	if l.urlencodeHeader, err = boolKey(props, "sasl.oauthbearer.header.urlencode", false); err != nil {
		return nil, err
	}
	if l.factor, err = floatKey(props, "sasl.login.refresh.window.factor", 0.8, 0.5, 1.0); err != nil {
		return nil, err
	}
	if l.jitter, err = floatKey(props, "sasl.login.refresh.window.jitter", 0.05, 0, 0.25); err != nil {
		return nil, err
	}
	secs, err := floatKey(props, "sasl.login.refresh.min.period.seconds", 60, 0, 900)
	if err != nil {
		return nil, err
	}
	l.minPeriod = time.Duration(secs) * time.Second
	if secs, err = floatKey(props, "sasl.login.refresh.buffer.seconds", 300, 0, 3600); err != nil {
		return nil, err
	}
	l.buffer = time.Duration(secs) * time.Second
	ms, err := floatKey(props, "sasl.login.retry.backoff.ms", 100, 0, 1<<31)
	if err != nil {
		return nil, err
	}
	l.retryBackoff = time.Duration(ms) * time.Millisecond
	if ms, err = floatKey(props, "sasl.login.retry.backoff.max.ms", 10000, 0, 1<<31); err != nil {
		return nil, err
	}
	l.backoff = time.Duration(ms) * time.Millisecond
	connectMS, err := floatKey(props, "sasl.login.connect.timeout.ms", 0, 0, 1<<31)
	if err != nil {
		return nil, err
	}
	readMS, err := floatKey(props, "sasl.login.read.timeout.ms", 0, 0, 1<<31)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: time.Duration(connectMS) * time.Millisecond}).DialContext
	transport.ResponseHeaderTimeout = time.Duration(readMS) * time.Millisecond
	if len(tlsProps) > 0 {
		m, err := tlsconf.Load(tlsProps)
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		transport.TLSClientConfig = m.Client(u.Hostname())
	}
	l.http = &http.Client{Transport: transport}
	return l, nil
}

func boolKey(props map[string]string, key string, def bool) (bool, error) {
	v := strings.TrimSpace(props[key])
	if v == "" {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s: %q is not true or false", key, v)
}

func floatKey(props map[string]string, key string, def, lo, hi float64) (float64, error) {
	v := strings.TrimSpace(props[key])
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < lo || f > hi {
		return 0, fmt.Errorf("%s: %q is not a number in [%v, %v]", key, v, lo, hi)
	}
	return f, nil
}

// Token returns the cached token, fetching a new one from its refresh
// time on. Concurrent callers wait for one fetch.
func (l *oauthLogin) Token(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.token != "" && now.Before(l.refreshAt) {
		return l.token, nil
	}
	token, expiresAt, err := l.fetchWithRetry(ctx)
	if err != nil {
		if l.token != "" && now.Before(l.expiresAt) {
			// The old token is still valid: use it, try again next time.
			return l.token, nil
		}
		return "", err
	}
	l.token, l.expiresAt = token, expiresAt
	l.refreshAt = l.refreshTime(now, expiresAt)
	return token, nil
}

func (l *oauthLogin) refreshTime(fetched, expires time.Time) time.Time {
	life := expires.Sub(fetched)
	at := fetched.Add(time.Duration(float64(life) * (l.factor + l.jitter*rand.Float64())))
	if latest := expires.Add(-l.buffer); at.After(latest) {
		at = latest
	}
	if earliest := fetched.Add(l.minPeriod); at.Before(earliest) {
		at = earliest
	}
	if at.After(expires) {
		at = expires
	}
	return at
}

// fetchWithRetry retries failed fetches with a doubling wait from
// sasl.login.retry.backoff.ms until the next wait would pass
// sasl.login.retry.backoff.max.ms, as Kafka's login retries. A refusal of
// the credentials (HTTP 4xx) is not retried.
func (l *oauthLogin) fetchWithRetry(ctx context.Context) (string, time.Time, error) {
	wait := l.retryBackoff
	for {
		token, exp, err := l.fetch(ctx)
		var refused *credentialsRefused
		if err == nil || errors.As(err, &refused) || wait > l.backoff || wait <= 0 {
			return token, exp, err
		}
		select {
		case <-ctx.Done():
			return "", time.Time{}, &TokenError{Reason: err.Error() + " (gave up: " + ctx.Err().Error() + ")"}
		case <-time.After(wait):
		}
		wait *= 2
	}
}

type credentialsRefused struct{ TokenError }

func (l *oauthLogin) fetch(ctx context.Context) (string, time.Time, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if l.scope != "" {
		form.Set("scope", l.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, &TokenError{Reason: "sasl.oauthbearer.token.endpoint.url: " + err.Error()}
	}
	id, secret := l.clientID, l.secret
	if l.urlencodeHeader {
		id, secret = url.QueryEscape(id), url.QueryEscape(secret)
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(id+":"+secret)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := l.http.Do(req)
	if err != nil {
		// *url.Error names the URL and the cause; it never holds the body.
		return "", time.Time{}, &TokenError{Reason: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", time.Time{}, &TokenError{Reason: "reading the token endpoint's answer: " + err.Error()}
	}
	var answer struct {
		AccessToken      string `json:"access_token"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &answer)
	if resp.StatusCode/100 != 2 {
		reason := fmt.Sprintf("the token endpoint answered %s", resp.Status)
		if answer.Error != "" {
			// RFC 6749's error fields say why without echoing credentials.
			reason += fmt.Sprintf(" (%s: %s)", answer.Error, answer.ErrorDescription)
		}
		if resp.StatusCode/100 == 4 {
			return "", time.Time{}, &credentialsRefused{TokenError{Reason: reason}}
		}
		return "", time.Time{}, &TokenError{Reason: reason}
	}
	if answer.AccessToken == "" {
		return "", time.Time{}, &TokenError{Reason: "the token endpoint's answer has no access_token"}
	}
	exp, err := l.checkToken(answer.AccessToken)
	if err != nil {
		return "", time.Time{}, err
	}
	return answer.AccessToken, exp, nil
}

// checkToken reads the token's claims as Kafka's ClientJwtValidator does
// (without checking the signature, which is the broker's job): exp is
// required, the sub claim (sasl.oauthbearer.sub.claim.name) must be a
// non-empty string, and the scope claim, when present, a string or a list
// of strings.
func (l *oauthLogin) checkToken(token string) (time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, &TokenError{Reason: "the access token is not a JWT (three dot-separated parts)"}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, &TokenError{Reason: "the access token's payload is not base64url"}
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, &TokenError{Reason: "the access token's payload is not a JSON object"}
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return time.Time{}, &TokenError{Reason: "the access token has no numeric exp claim"}
	}
	if sub, ok := claims[l.subClaim].(string); !ok || strings.TrimSpace(sub) == "" {
		return time.Time{}, &TokenError{Reason: fmt.Sprintf("the access token has no %q claim (sasl.oauthbearer.sub.claim.name)", l.subClaim)}
	}
	switch scope := claims[l.scopeClaim].(type) {
	case nil, string:
	case []any:
		for _, s := range scope {
			if _, ok := s.(string); !ok {
				return time.Time{}, &TokenError{Reason: fmt.Sprintf("the access token's %q claim (sasl.oauthbearer.scope.claim.name) is not a list of strings", l.scopeClaim)}
			}
		}
	default:
		return time.Time{}, &TokenError{Reason: fmt.Sprintf("the access token's %q claim (sasl.oauthbearer.scope.claim.name) is not a string or a list of strings", l.scopeClaim)}
	}
	expires := time.Unix(0, int64(exp*float64(time.Second)))
	if !expires.After(l.now()) {
		return time.Time{}, &TokenError{Reason: "the token endpoint returned an expired token"}
	}
	return expires, nil
}
