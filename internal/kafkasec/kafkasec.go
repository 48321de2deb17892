// Package kafkasec turns one Kafka client's security keys, as Kafka
// Connect takes them (security.protocol, sasl.*, ssl.*), into franz-go
// options.
//
// Keys the chosen security.protocol does not use are not read, as in
// Kafka: a worker's ssl.* keys also configure its HTTPS listener, and a
// producer.security.protocol=SSL override leaves the worker-level
// sasl.jaas.config unused. Every key that is read is honoured as the Java
// client honours it or refused with an error naming it; errors never carry a
// password, a client secret or a token.
package kafkasec

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-io/sluice/internal/tlsconf"
)

// The login module classes Kafka's clients use for each mechanism.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// IsSecurityKey reports whether key is one of the client keys this package
// reads (security.protocol, sasl.*, ssl.*), so that callers holding a whole
// client configuration can route those keys here.
func IsSecurityKey(key string) bool {
	return key == "security.protocol" || strings.HasPrefix(key, "sasl.") || strings.HasPrefix(key, "ssl.")
}

// Settings is one client's security as its keys describe it.
type Settings struct {
	// Protocol is security.protocol in upper case.
	Protocol string
	// TLS is the dial configuration for SSL and SASL_SSL, else nil.
	TLS *tls.Config
	// Mechanism authenticates SASL_PLAINTEXT and SASL_SSL, else nil.
	Mechanism sasl.Mechanism

	watch *saslWatch // Mechanism, watched for AuthFailure
}

// Options returns the franz-go options for the security keys of props
// (other keys are not looked at); PLAINTEXT gives none.
func Options(props map[string]string) ([]kgo.Opt, error) {
	s, err := Load(props)
	if err != nil {
		return nil, err
	}
	return s.Options(), nil
}

// Options returns the franz-go options that apply s.
func (s *Settings) Options() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS))
	}
	if s.Mechanism != nil {
		opts = append(opts, kgo.SASL(s.Mechanism))
	}
	return opts
}

// Load reads the security keys of props.
func Load(props map[string]string) (*Settings, error) {
	protocol := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	s := &Settings{Protocol: protocol}
	var useTLS, useSASL bool
	switch protocol {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol: %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", props["security.protocol"])
	}
	if useTLS {
		m, err := tlsconf.Load(props)
		if err != nil {
			return nil, err
		}
		// franz-go sets ServerName to each broker's host when it dials.
		s.TLS = m.Client("")
	}
	if useSASL {
		mech, user, err := loadMechanism(props)
		if err != nil {
			return nil, err
		}
		s.watch = &saslWatch{Mechanism: mech, user: user}
		s.Mechanism = s.watch
	}
	return s, nil
}

// oauthKeys are the sasl.* keys of the OAUTHBEARER login (oauth.go). With
// another mechanism Kafka's client would not use them, so they are refused
// there rather than accepted and ignored.
var oauthKeys = []string{
	"sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
	"sasl.oauthbearer.header.urlencode", "sasl.login.callback.handler.class",
	"sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
	"sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
	"sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms",
	"sasl.login.retry.backoff.ms", "sasl.login.retry.backoff.max.ms",
}

// refusedSASLKeys are refused whenever they are set to a non-empty value.
var refusedSASLKeys = map[string]string{
	"sasl.client.callback.handler.class":  "a Java callback handler class cannot be loaded",
	"sasl.login.class":                    "a Java login class cannot be loaded",
	"sasl.kerberos.":                      "Kerberos (GSSAPI) is not supported",
	"sasl.oauthbearer.jwks.endpoint.":     "a broker's token validation key; Sluice's clients fetch tokens, they do not validate them",
	"sasl.oauthbearer.expected.":          "a broker's token validation key; Sluice's clients fetch tokens, they do not validate them",
	"sasl.oauthbearer.clock.skew.seconds": "a broker's token validation key; Sluice's clients fetch tokens, they do not validate them",
}

func refuseSASLKeys(props map[string]string, mechanism string) error {
	var problems []string
	for k, v := range props {
		if !strings.HasPrefix(k, "sasl.") || k == "sasl.mechanism" || k == "sasl.jaas.config" {
			continue
		}
		if slices.Contains(oauthKeys, k) {
			if mechanism != "OAUTHBEARER" && strings.TrimSpace(v) != "" {
				problems = append(problems, fmt.Sprintf("%s: used only with sasl.mechanism=OAUTHBEARER", k))
			}
			continue
		}
		why := "not a SASL client key Sluice knows"
		for prefix, reason := range refusedSASLKeys {
			if k == prefix || strings.HasSuffix(prefix, ".") && strings.HasPrefix(k, prefix) {
				why = reason
			}
		}
		if strings.TrimSpace(v) == "" && why != "not a SASL client key Sluice knows" {
			continue // the empty value is Kafka's default: nothing asked for
		}
		problems = append(problems, fmt.Sprintf("%s: %s", k, why))
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// loadMechanism returns the mechanism and the user it authenticates as
// (the client id for OAUTHBEARER).
func loadMechanism(props map[string]string) (sasl.Mechanism, string, error) {
	mechanism := strings.TrimSpace(props["sasl.mechanism"])
	if mechanism == "" {
		mechanism = "PLAIN" // Kafka's default
	}
	switch mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
	case "GSSAPI":
		return nil, "", errors.New("sasl.mechanism: GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	default:
		// Kafka compares mechanism names exactly, so "plain" is refused too.
		return nil, "", fmt.Errorf("sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER", mechanism)
	}
	if err := refuseSASLKeys(props, mechanism); err != nil {
		return nil, "", err
	}
	jaas := strings.TrimSpace(props["sasl.jaas.config"])
	if jaas == "" {
		return nil, "", fmt.Errorf("sasl.jaas.config: required with security.protocol=%s (Sluice has no JVM-wide JAAS file to fall back on)", strings.ToUpper(props["security.protocol"]))
	}
	entries, err := ParseJAAS(jaas)
	if err != nil {
		return nil, "", fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if len(entries) != 1 {
		// As Kafka's JaasContext for clients.
		return nil, "", fmt.Errorf("sasl.jaas.config: holds %d login modules; a client takes exactly one", len(entries))
	}
	entry := entries[0]
	if mechanism == "OAUTHBEARER" {
		if entry.LoginModule != oauthLoginModule {
			return nil, "", fmt.Errorf("sasl.jaas.config: sasl.mechanism=OAUTHBEARER needs %s, not %s", oauthLoginModule, entry.LoginModule)
		}
		mech, err := newOAuthMechanism(props, entry.Options)
		return mech, entry.Options["clientId"], err
	}
	user, pass, token, err := passwordCredentials(mechanism, entry)
	if err != nil {
		return nil, "", err
	}
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), user, nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass, IsToken: token}.AsSha256Mechanism(), user, nil
	default:
		return scram.Auth{User: user, Pass: pass, IsToken: token}.AsSha512Mechanism(), user, nil
	}
}

// passwordCredentials reads the username and password of a PLAIN or SCRAM
// login. Either module serves either mechanism, as in Java, where both only
// put the credentials in the login subject for the SASL client to take.
func passwordCredentials(mechanism string, e JAASEntry) (user, pass string, token bool, err error) {
	allowed := []string{"username", "password"}
	switch e.LoginModule {
	case scramLoginModule:
		allowed = append(allowed, "tokenauth")
	case plainLoginModule:
	default:
		return "", "", false, fmt.Errorf("sasl.jaas.config: sasl.mechanism=%s needs %s or %s, not %s", mechanism, plainLoginModule, scramLoginModule, e.LoginModule)
	}
	for k := range e.Options {
		if !slices.Contains(allowed, k) {
			return "", "", false, fmt.Errorf("sasl.jaas.config: option %q is not one of %s's (%s)", k, e.LoginModule, strings.Join(allowed, ", "))
		}
	}
	user, pass = e.Options["username"], e.Options["password"]
	if user == "" {
		return "", "", false, errors.New("sasl.jaas.config: the username option is missing or empty")
	}
	if _, ok := e.Options["password"]; !ok {
		return "", "", false, errors.New("sasl.jaas.config: the password option is missing")
	}
	switch t := strings.ToLower(e.Options["tokenauth"]); t {
	case "", "false":
	case "true":
		if mechanism == "PLAIN" {
			return "", "", false, errors.New("sasl.jaas.config: tokenauth (delegation tokens) works with SCRAM mechanisms only")
		}
		token = true
	default:
		return "", "", false, fmt.Errorf("sasl.jaas.config: tokenauth must be true or false, not %q", e.Options["tokenauth"])
	}
	return user, pass, token, nil
}
