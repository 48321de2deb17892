package kafkatest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The environment variables that point the secure tests at a broker with
// SASL_SSL and SASL_PLAINTEXT listeners, as test/kafka/kafka.sh writes them
// to its secure.env. Either all are set or none.
const (
	SASLSSLBootstrapEnv       = "SLUICE_TEST_SASL_SSL_BOOTSTRAP"
	SASLPlaintextBootstrapEnv = "SLUICE_TEST_SASL_PLAINTEXT_BOOTSTRAP"
	// TLSDirEnv names the directory test/kafka/gencerts wrote: the CA
	// the broker's certificate is signed by, and the stores.
	TLSDirEnv = "SLUICE_TEST_TLS_DIR"
	// SASLUsersEnv lists the broker's users, MECHANISM:user:password,
	// comma-separated.
	SASLUsersEnv = "SLUICE_TEST_SASL_USERS"
)

// The security protocols and SASL mechanisms of the secure environment,
// under Kafka's names (security.protocol, sasl.mechanism).
const (
	SASLSSL       = "SASL_SSL"
	SASLPlaintext = "SASL_PLAINTEXT"

	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// The truststore formats Connect's ssl.truststore.type takes.
const (
	TruststoreJKS    = "JKS"
	TruststorePKCS12 = "PKCS12"
	TruststorePEM    = "PEM"
)

// SASLUser is a user the secure broker knows, with the mechanism it
// authenticates with.
type SASLUser struct {
	Mechanism, Name, Password string
}

// embeddedUsers are the users of the embedded secure broker: those that
// kafka.sh gives Apache Kafka, so that both modes have the same shape.
var embeddedUsers = []SASLUser{
	{ScramSHA512, "sluice512", "sluice512-secret"},
	{ScramSHA512, "sluiceother", "sluiceother-secret"},
	{ScramSHA256, "sluice256", "sluice256-secret"},
	{Plain, "sluiceplain", "sluiceplain-secret"},
}

// Secure is a broker that requires authentication: a SASL_SSL and a
// SASL_PLAINTEXT listener that both take PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512, with the TLS files its certificate comes from.
type Secure struct {
	// External reports whether it is the Apache Kafka the environment
	// names rather than embedded kfake brokers.
	External bool
	// SASLSSL and SASLPlaintext are the listeners' bootstrap addresses,
	// comma-separated host:port.
	SASLSSL, SASLPlaintext string
	TLS                    *TLSFiles
	Users                  []SASLUser
}

// NewSecure returns the secure broker the environment names (see
// SASLSSLBootstrapEnv), or else starts embedded ones closed with the test:
// kfake with SASL and TLS, and kfake with SASL alone, for a kfake broker
// has one listener. The tests that use it run in both modes, never skip.
func NewSecure(tb testing.TB) *Secure {
	tb.Helper()
	s, err := secureFromEnv()
	if err != nil {
		tb.Fatal(err)
	}
	if s != nil {
		return s
	}
	tlsFiles := NewTLS(tb)
	serverTLS, err := tlsFiles.ServerTLS()
	if err != nil {
		tb.Fatal(err)
	}
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1)}
	for _, u := range embeddedUsers {
		opts = append(opts, kfake.User(u.Mechanism, u.Name, u.Password))
	}
	withTLS, _ := NewCluster(tb, append(opts, kfake.TLS(serverTLS))...)
	withoutTLS, _ := NewCluster(tb, opts...)
	return &Secure{
		SASLSSL:       strings.Join(withTLS.ListenAddrs(), ","),
		SASLPlaintext: strings.Join(withoutTLS.ListenAddrs(), ","),
		TLS:           tlsFiles,
		Users:         embeddedUsers,
	}
}

// secureFromEnv is the broker the environment names, nil if it names
// none, and an error naming the variable that is missing or malformed.
func secureFromEnv() (*Secure, error) {
	vars := []string{SASLSSLBootstrapEnv, SASLPlaintextBootstrapEnv, TLSDirEnv, SASLUsersEnv}
	var set, unset []string
	for _, v := range vars {
		if strings.TrimSpace(os.Getenv(v)) != "" {
			set = append(set, v)
		} else {
			unset = append(unset, v)
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	if len(unset) > 0 {
		return nil, fmt.Errorf("%s set but not %s: test/kafka/kafka.sh's secure.env sets them together", strings.Join(set, ", "), strings.Join(unset, ", "))
	}
	tlsFiles, err := LoadTLS(os.Getenv(TLSDirEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TLSDirEnv, err)
	}
	users, err := ParseSASLUsers(os.Getenv(SASLUsersEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SASLUsersEnv, err)
	}
	return &Secure{
		External:      true,
		SASLSSL:       strings.TrimSpace(os.Getenv(SASLSSLBootstrapEnv)),
		SASLPlaintext: strings.TrimSpace(os.Getenv(SASLPlaintextBootstrapEnv)),
		TLS:           tlsFiles,
		Users:         users,
	}, nil
}

// ParseSASLUsers reads SASLUsersEnv's format: MECHANISM:user:password,
// comma-separated. The password may contain colons; the error quotes no
// password.
func ParseSASLUsers(s string) ([]SASLUser, error) {
	var users []SASLUser
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("entry %d is not MECHANISM:user:password", i+1)
		}
		switch parts[0] {
		case Plain, ScramSHA256, ScramSHA512:
		default:
			return nil, fmt.Errorf("entry %d: mechanism %q is none of %s, %s, %s", i+1, parts[0], Plain, ScramSHA256, ScramSHA512)
		}
		users = append(users, SASLUser{Mechanism: parts[0], Name: parts[1], Password: parts[2]})
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("no user")
	}
	return users, nil
}

// User returns the n-th (from 0) user with mechanism, failing the test if
// the broker has fewer.
func (s *Secure) User(tb testing.TB, mechanism string, n int) SASLUser {
	tb.Helper()
	for _, u := range s.Users {
		if u.Mechanism != mechanism {
			continue
		}
		if n == 0 {
			return u
		}
		n--
	}
	tb.Fatalf("the secure broker has too few %s users", mechanism)
	return SASLUser{}
}

// Client is how a client reaches the secure broker: the listener, the
// user, and for SASL_SSL the format the CA is given in.
type Client struct {
	Protocol   string // SASLSSL or SASLPlaintext
	User       SASLUser
	Truststore string // TruststoreJKS, TruststorePKCS12 or TruststorePEM; SASL_SSL only
}

// Bootstrap is the address of the listener for protocol.
func (s *Secure) Bootstrap(tb testing.TB, protocol string) string {
	tb.Helper()
	switch protocol {
	case SASLSSL:
		return s.SASLSSL
	case SASLPlaintext:
		return s.SASLPlaintext
	}
	tb.Fatalf("no listener for security.protocol %q", protocol)
	return ""
}

// JAASConfig is Connect's sasl.jaas.config for u.
func JAASConfig(u SASLUser) string {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if u.Mechanism == Plain {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	return fmt.Sprintf(`%s required username="%s" password="%s";`, module, u.Name, u.Password)
}

// ClientProps are the Kafka client keys (security.protocol, sasl.*,
// ssl.truststore.*) of c, unprefixed, as in a Kafka client's
// properties file.
func (s *Secure) ClientProps(tb testing.TB, c Client) map[string]string {
	tb.Helper()
	props := map[string]string{
		"security.protocol": c.Protocol,
		"sasl.mechanism":    c.User.Mechanism,
		"sasl.jaas.config":  JAASConfig(c.User),
	}
	if c.Protocol != SASLSSL {
		return props
	}
	switch c.Truststore {
	case TruststoreJKS:
		props["ssl.truststore.location"] = s.TLS.TruststoreJKS
		props["ssl.truststore.password"] = StorePassword
	case TruststorePKCS12:
		props["ssl.truststore.location"] = s.TLS.TruststorePKCS12
		props["ssl.truststore.password"] = StorePassword
	case TruststorePEM:
		// Kafka refuses a password with a PEM file: it is not encrypted.
		props["ssl.truststore.location"] = s.TLS.CAPEM
	default:
		tb.Fatalf("truststore type %q is none of JKS, PKCS12, PEM", c.Truststore)
	}
	props["ssl.truststore.type"] = c.Truststore
	return props
}

// WorkerProps are the Connect worker keys that make every client of a
// worker reach the broker as c says: bootstrap.servers and the client
// keys, unprefixed for the worker's own clients (group membership,
// internal topics, admin), and again with producer. and consumer. for its
// tasks' clients, which in Connect take only the prefixed keys.
func (s *Secure) WorkerProps(tb testing.TB, c Client) map[string]string {
	tb.Helper()
	props := map[string]string{"bootstrap.servers": s.Bootstrap(tb, c.Protocol)}
	for k, v := range s.ClientProps(tb, c) {
		props[k] = v
		props["producer."+k] = v
		props["consumer."+k] = v
	}
	return props
}

// ClientOpts are franz-go options that reach the broker as c says, for
// a test's own clients.
func (s *Secure) ClientOpts(tb testing.TB, c Client) []kgo.Opt {
	tb.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(s.Bootstrap(tb, c.Protocol), ",")...), kgo.SASL(Mechanism(tb, c.User))}
	if c.Protocol == SASLSSL {
		cfg, err := s.TLS.ClientTLS()
		if err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	return opts
}

// Mechanism is u as a franz-go SASL mechanism.
func Mechanism(tb testing.TB, u SASLUser) sasl.Mechanism {
	tb.Helper()
	switch u.Mechanism {
	case Plain:
		return plain.Auth{User: u.Name, Pass: u.Password}.AsMechanism()
	case ScramSHA256:
		return scram.Auth{User: u.Name, Pass: u.Password}.AsSha256Mechanism()
	case ScramSHA512:
		return scram.Auth{User: u.Name, Pass: u.Password}.AsSha512Mechanism()
	}
	tb.Fatalf("SASL mechanism %q is none of %s, %s, %s", u.Mechanism, Plain, ScramSHA256, ScramSHA512)
	return nil
}
