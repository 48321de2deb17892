// Package tlsconf turns Kafka's ssl.* keys (as Kafka clients, brokers and
// Connect's REST listener take them) into Go TLS configurations.
//
// Callers pass the keys without their prefix: a worker's
// "producer.ssl.truststore.location" or "listeners.https.ssl.keystore.type"
// reach Load as "ssl.truststore.location" and "ssl.keystore.type". Every
// ssl.* key is either honoured as Java's default SSL engine factory honours
// it or refused by name: a TLS setting read and then ignored would give a
// weaker connection than the operator asked for.
//
// No error this package returns carries a password or key material: the
// values of password keys are never formatted, and the errors of the store
// libraries (which see the passwords) are reduced to what went wrong.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Material is the TLS material and policy a set of ssl.* keys describes.
// It is immutable once loaded; Client and Server return fresh tls.Configs.
type Material struct {
	// Certificates is the keystore's key and chain (empty without a keystore).
	Certificates []tls.Certificate
	// RootCAs is the truststore (nil: the system's roots, as a JVM without
	// ssl.truststore.location uses its default cacerts).
	RootCAs *x509.CertPool
	// MinVersion and MaxVersion come from ssl.enabled.protocols and ssl.protocol.
	MinVersion, MaxVersion uint16
	// CipherSuites is ssl.cipher.suites' TLS 1.2-and-older part (nil: Go's defaults).
	CipherSuites []uint16
	// VerifyHostname is ssl.endpoint.identification.algorithm=https (Kafka's default).
	VerifyHostname bool
	// ClientAuth is ssl.client.auth, for servers: "none", "requested" or "required".
	ClientAuth string
}

// knownKeys are the ssl.* keys Load reads. Any other ssl.* key is refused
// (refusedUnlessDefault keys are refused unless they carry Java's default).
var knownKeys = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.keystore.certificate.chain": true, "ssl.keystore.key": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.password": true,
	"ssl.truststore.certificates": true, "ssl.enabled.protocols": true, "ssl.protocol": true,
	"ssl.endpoint.identification.algorithm": true, "ssl.cipher.suites": true, "ssl.client.auth": true,
}

// refusedUnlessDefault maps keys that select Java machinery to the values
// that mean "Java's default", which Go's TLS stack provides; anything else
// names a Java class or provider Sluice cannot load.
var refusedUnlessDefault = map[string][]string{
	"ssl.keymanager.algorithm":         {"", "sunx509"},
	"ssl.trustmanager.algorithm":       {"", "pkix"},
	"ssl.provider":                     {""},
	"ssl.secure.random.implementation": {""},
	"ssl.engine.factory.class":         {""},
}

// Load reads the ssl.* keys of props (other keys are not looked at) into
// Material. A key set to a value Sluice cannot honour is an error naming it.
func Load(props map[string]string) (*Material, error) {
	if err := refuseUnknown(props); err != nil {
		return nil, err
	}
	m := &Material{}
	var err error
	if m.MinVersion, m.MaxVersion, err = protocolVersions(props); err != nil {
		return nil, err
	}
	if err = m.loadCipherSuites(props["ssl.cipher.suites"]); err != nil {
		return nil, err
	}
	switch alg := strings.TrimSpace(valueOr(props, "ssl.endpoint.identification.algorithm", "https")); strings.ToLower(alg) {
	case "https":
		m.VerifyHostname = true
	case "":
		m.VerifyHostname = false
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm: %q is not supported: use https (check the server's host name) or an empty value (skip only that check)", alg)
	}
	switch ca := strings.ToLower(strings.TrimSpace(valueOr(props, "ssl.client.auth", "none"))); ca {
	case "none", "requested", "required":
		m.ClientAuth = ca
	default:
		return nil, fmt.Errorf("ssl.client.auth: %q is not one of none, requested, required", props["ssl.client.auth"])
	}
	if m.RootCAs, err = loadTrustStore(props); err != nil {
		return nil, err
	}
	if m.Certificates, err = loadKeyStore(props); err != nil {
		return nil, err
	}
	return m, nil
}

func refuseUnknown(props map[string]string) error {
	var problems []string
	for k, v := range props {
		if !strings.HasPrefix(k, "ssl.") || knownKeys[k] {
			continue
		}
		defaults, selectsJava := refusedUnlessDefault[k]
		switch {
		case !selectsJava:
			problems = append(problems, fmt.Sprintf("%s: not a TLS key Sluice knows", k))
		case !slices.Contains(defaults, strings.ToLower(strings.TrimSpace(v))):
			problems = append(problems, fmt.Sprintf("%s: %q selects Java security machinery Sluice cannot load; remove the key to use the default", k, v))
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Client returns the configuration for dialling a server. serverName may
// be empty when the dialler fills it in per connection (franz-go sets it to
// the broker's host). With hostname identification off the server's chain
// is still verified against the truststore, as Java does; only the name
// check is skipped.
func (m *Material) Client(serverName string) *tls.Config {
	cfg := m.base()
	cfg.ServerName = serverName
	cfg.Certificates = m.Certificates
	if !m.VerifyHostname {
		// crypto/tls can only skip the host name check by skipping all of its
		// verification, so the chain is verified here instead.
		cfg.InsecureSkipVerify = true
		roots := m.RootCAs
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChainOnly(cs.PeerCertificates, roots)
		}
	}
	return cfg
}

// Server returns the configuration for a listener. clientAuth is
// "none", "requested" or "required" (empty: the loaded ssl.client.auth);
// client certificates are verified against the truststore.
func (m *Material) Server(clientAuth string) (*tls.Config, error) {
	if len(m.Certificates) == 0 {
		return nil, errors.New("ssl.keystore.location: a TLS listener needs a keystore (or ssl.keystore.key with ssl.keystore.certificate.chain)")
	}
	if clientAuth == "" {
		clientAuth = m.ClientAuth
	}
	cfg := m.base()
	cfg.Certificates = m.Certificates
	cfg.ClientCAs = m.RootCAs
	switch strings.ToLower(clientAuth) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth: %q is not one of none, requested, required", clientAuth)
	}
	return cfg, nil
}

func (m *Material) base() *tls.Config {
	return &tls.Config{
		RootCAs:      m.RootCAs,
		MinVersion:   m.MinVersion,
		MaxVersion:   m.MaxVersion,
		CipherSuites: slices.Clone(m.CipherSuites),
	}
}

func verifyChainOnly(peers []*x509.Certificate, roots *x509.CertPool) error {
	if len(peers) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range peers[1:] {
		intermediates.AddCert(c)
	}
	_, err := peers[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// valueOr is props[key], or def when the key is absent. A key present with
// an empty value stays empty: for ssl.endpoint.identification.algorithm the
// empty value is meaningful.
func valueOr(props map[string]string, key, def string) string {
	if v, ok := props[key]; ok {
		return v
	}
	return def
}

// readLocation reads the file a *.location key names; the error names the
// key and the path (never the contents).
func readLocation(key, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return data, nil
}
