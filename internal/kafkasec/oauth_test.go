package kafkasec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The embedded broker (kfake) does not implement OAUTHBEARER, so these
// tests check the client side, the token fetching and its caching,
// against a token endpoint served by httptest.

func jwt(claims map[string]any) string {
	enc := base64.RawURLEncoding
	payload, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(payload) + ".sig"
}

type tokenEndpoint struct {
	*httptest.Server
	calls  atomic.Int32
	claims func() map[string]any
}

func newTokenEndpoint(t *testing.T, lifetime time.Duration) *tokenEndpoint {
	e := &tokenEndpoint{}
	e.claims = func() map[string]any {
		return map[string]any{"sub": "connect-client", "exp": time.Now().Add(lifetime).Unix(), "scope": "kafka"}
	}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if !ok || id != "client-1" || secret != "Client-Secret-5" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
			return
		}
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("scope") != "kafka" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": jwt(e.claims()), "token_type": "bearer", "expires_in": 3600})
	}))
	t.Cleanup(e.Close)
	return e
}

func oauthProps(endpoint, secret string) (map[string]string, map[string]string) {
	props := map[string]string{"sasl.oauthbearer.token.endpoint.url": endpoint, "sasl.login.retry.backoff.ms": "1", "sasl.login.retry.backoff.max.ms": "4"}
	options := map[string]string{"clientId": "client-1", "clientSecret": secret, "scope": "kafka", "extension_logicalCluster": "lkc-1"}
	return props, options
}

func TestOAuthTokenIsFetchedCachedAndRefreshed(t *testing.T) {
	e := newTokenEndpoint(t, time.Hour)
	props, options := oauthProps(e.URL, "Client-Secret-5")
	l, err := newOAuthLogin(props, options)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	l.now = func() time.Time { return now }
	first, err := l.Token(context.Background())
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if again, _ := l.Token(context.Background()); again != first || e.calls.Load() != 1 {
		t.Fatalf("the second Token call fetched again (%d calls) or changed the token", e.calls.Load())
	}
	if l.extensions["logicalCluster"] != "lkc-1" {
		t.Errorf("extension_logicalCluster was not kept as a SASL extension: %v", l.extensions)
	}
	// Defaults: refresh at 80..85% of the hour, and no later than 5 minutes before expiry.
	if d := l.refreshAt.Sub(now); d < 48*time.Minute || d > 51*time.Minute+time.Second {
		t.Errorf("refresh scheduled %v after the fetch, want 48..51 minutes", d)
	}
	now = l.refreshAt.Add(time.Second)
	if _, err := l.Token(context.Background()); err != nil || e.calls.Load() != 2 {
		t.Fatalf("after the refresh time: %d calls, err %v; want a second fetch", e.calls.Load(), err)
	}
}

func TestOAuthKeepsAValidTokenWhenARefreshFails(t *testing.T) {
	e := newTokenEndpoint(t, time.Hour)
	props, options := oauthProps(e.URL, "Client-Secret-5")
	l, _ := newOAuthLogin(props, options)
	now := time.Now()
	l.now = func() time.Time { return now }
	first, err := l.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.Close() // the endpoint goes away
	now = l.refreshAt.Add(time.Second)
	if tok, err := l.Token(context.Background()); err != nil || tok != first {
		t.Fatalf("a failed refresh before expiry gave %v; want the still-valid token", err)
	}
	now = l.expiresAt.Add(time.Second)
	if _, err := l.Token(context.Background()); err == nil {
		t.Fatal("an expired token was used after the refresh failed")
	}
}

func TestOAuthFailuresAreAuthErrorsWithoutTheSecret(t *testing.T) {
	e := newTokenEndpoint(t, time.Hour)
	props, options := oauthProps(e.URL, "Wrong-Secret-8")
	l, _ := newOAuthLogin(props, options)
	_, err := l.Token(context.Background())
	if err == nil || !IsAuthError(err) {
		t.Fatalf("a refused client secret gave %v, want an auth error", err)
	}
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("error %q does not say the endpoint answered 401 invalid_client", err)
	}
	if strings.Contains(err.Error(), "Wrong-Secret-8") {
		t.Errorf("error %q shows the client secret", err)
	}
	if e.calls.Load() != 1 {
		t.Errorf("a 401 was retried: %d calls", e.calls.Load())
	}

	// A token without the sub claim is refused as Kafka's client validator refuses it.
	e.claims = func() map[string]any { return map[string]any{"exp": time.Now().Add(time.Hour).Unix()} }
	props, options = oauthProps(e.URL, "Client-Secret-5")
	l, _ = newOAuthLogin(props, options)
	var tokenErr *TokenError
	if _, err := l.Token(context.Background()); !errors.As(err, &tokenErr) || !strings.Contains(err.Error(), `"sub"`) {
		t.Errorf("a token without sub gave %v", err)
	}
	props["sasl.oauthbearer.sub.claim.name"] = "client_id"
	e.claims = func() map[string]any {
		return map[string]any{"client_id": "c", "exp": time.Now().Add(time.Hour).Unix()}
	}
	l, _ = newOAuthLogin(props, options)
	if _, err := l.Token(context.Background()); err != nil {
		t.Errorf("sasl.oauthbearer.sub.claim.name=client_id: %v", err)
	}
}

func TestOAuthUnreachableEndpointIsRetriedWithBackoff(t *testing.T) {
	e := newTokenEndpoint(t, time.Hour)
	url := e.URL
	e.Close()
	props, options := oauthProps(url, "Client-Secret-5")
	l, _ := newOAuthLogin(props, options)
	start := time.Now()
	_, err := l.Token(context.Background())
	if err == nil || !IsAuthError(err) {
		t.Fatalf("an unreachable endpoint gave %v", err)
	}
	// Waits of 1, 2 and 4 ms (sasl.login.retry.backoff.ms=1, max 4).
	if d := time.Since(start); d < 7*time.Millisecond {
		t.Errorf("gave up after %v, before the backoff waits", d)
	}
}
