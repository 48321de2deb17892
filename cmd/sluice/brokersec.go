package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The mechanisms each --sasl-user is created for.
var brokerMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

const brokerSecurityHelp = `
Security (the embedded broker can require what a production Kafka requires):
  --sasl-user USER:PASSWORD   require SASL; the user is created for PLAIN,
                              SCRAM-SHA-256 and SCRAM-SHA-512 (repeatable;
                              SLUICE_SASL_USER takes one, or several on separate lines)
  --tls-cert FILE --tls-key FILE
                              require TLS with this PEM certificate (chain) and key
  Example, a SASL_SSL broker:
    sluice broker --sasl-user connect:connect-secret --tls-cert broker.pem --tls-key broker-key.pem
  and a worker that reaches it (connect-distributed.properties, or --prop):
    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="connect" password="connect-secret";
    ssl.truststore.type=PEM
    ssl.truststore.location=ca.pem
`

// saslUser is one --sasl-user.
type saslUser struct{ name, password string }

// saslUsersFlag collects --sasl-user USER:PASSWORD values. A bad value is
// kept as err and reported by kfakeOpts rather than by Set: the flag
// package (and applyEnv) would quote the value, which holds a password.
type saslUsersFlag struct {
	users []saslUser
	err   error
}

func (f *saslUsersFlag) String() string {
	names := make([]string, len(f.users))
	for i, u := range f.users {
		names[i] = u.name + ":***"
	}
	return strings.Join(names, ",")
}

// Set takes one USER:PASSWORD, or several on separate lines (so that
// SLUICE_SASL_USER can give several; a password may hold commas).
func (f *saslUsersFlag) Set(v string) error {
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, password, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			f.err = fmt.Errorf("a value is not USER:PASSWORD (no colon)")
		case strings.TrimSpace(name) == "":
			f.err = fmt.Errorf("a value has an empty user name")
		case password == "":
			f.err = fmt.Errorf("user %q has an empty password", name)
		default:
			f.users = append(f.users, saslUser{name: strings.TrimSpace(name), password: password})
		}
	}
	return nil
}

// brokerSecurityFlags are the security flags of 'broker' and 'dev'.
type brokerSecurityFlags struct {
	users           saslUsersFlag
	tlsCert, tlsKey string
}

func (b *brokerSecurityFlags) register(fs *flag.FlagSet) {
	fs.Var(&b.users, "sasl-user", "USER:PASSWORD the embedded broker accepts over SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; giving one makes SASL required (repeatable)")
	fs.StringVar(&b.tlsCert, "tls-cert", "", "PEM certificate (chain) of the embedded broker; with --tls-key, the broker accepts only TLS")
	fs.StringVar(&b.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
}

// kfakeOpts are the broker options the flags ask for.
func (b *brokerSecurityFlags) kfakeOpts() ([]kfake.Opt, error) {
	if b.users.err != nil {
		return nil, usageError{fmt.Errorf("--sasl-user (or SLUICE_SASL_USER): %v", b.users.err)}
	}
	var opts []kfake.Opt
	if len(b.users.users) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range b.users.users {
			for _, m := range brokerMechanisms {
				opts = append(opts, kfake.Superuser(m, u.name, u.password))
			}
		}
	}
	switch {
	case b.tlsCert == "" && b.tlsKey == "":
	case b.tlsCert == "" || b.tlsKey == "":
		return nil, usageError{fmt.Errorf("--tls-cert and --tls-key go together")}
	default:
		cert, err := tls.LoadX509KeyPair(b.tlsCert, b.tlsKey)
		if err != nil {
			return nil, usageError{fmt.Errorf("--tls-cert/--tls-key: %v", err)}
		}
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	return opts, nil
}

// describe is what the banner says of the broker's security.
func (b *brokerSecurityFlags) describe() string {
	var parts []string
	if b.tlsCert != "" {
		parts = append(parts, "TLS")
	}
	if n := len(b.users.users); n > 0 {
		parts = append(parts, fmt.Sprintf("SASL PLAIN/SCRAM-SHA-256/SCRAM-SHA-512 for %d user(s)", n))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (requires " + strings.Join(parts, " and ") + ")"
}

// workerProps sets the security keys with which 'sluice dev' runs its own
// worker against the broker: the first --sasl-user over SCRAM-SHA-512,
// and --tls-cert as the truststore (a self-signed certificate trusts
// itself). Keys the user gave with --prop win.
func (b *brokerSecurityFlags) workerProps(props map[string]string) {
	set := func(k, v string) {
		if _, given := props[k]; !given {
			props[k] = v
		}
	}
	useSASL, useTLS := len(b.users.users) > 0, b.tlsCert != ""
	if useSASL {
		u := b.users.users[0]
		set("sasl.mechanism", "SCRAM-SHA-512")
		set("sasl.jaas.config", fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`,
			jaasEscape(u.name), jaasEscape(u.password)))
	}
	if useTLS {
		set("ssl.truststore.type", "PEM")
		set("ssl.truststore.location", b.tlsCert)
	}
	switch {
	case useSASL && useTLS:
		set("security.protocol", "SASL_SSL")
	case useSASL:
		set("security.protocol", "SASL_PLAINTEXT")
	case useTLS:
		set("security.protocol", "SSL")
	}
}

// jaasEscape quotes s for a "..." value of sasl.jaas.config.
func jaasEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(s)
}
