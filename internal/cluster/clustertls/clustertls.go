// Package clustertls carries the workers' actor remote (protoactor's gRPC)
// over TLS. Every worker and admin client is both a server (its remote
// listens for messages) and a client (it dials the others' remotes), so
// one certificate serves both roles, and the trust is mutual: a peer is
// accepted when its certificate chains to the cluster's CA. Without a CA
// the certificate itself is the trust anchor, which suits one self-signed
// certificate shared by the whole cluster (docs/adr/0009).
//
// Host names are not checked: a worker's actor address is an IP picked at
// start (its gossip host), and what admits a peer is holding a
// certificate of the cluster's CA, so the CA should be the cluster's own.
package clustertls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Config is the TLS of the actor remote: Server for the listener, Client
// for dialing other members.
type Config struct {
	Server *tls.Config
	Client *tls.Config
}

// Files names the PEM files of a Config: this member's certificate (its
// chain may follow it) and private key, and the CA certificates that
// admit peers (empty: the certificate itself).
type Files struct {
	Cert, Key, CA string
}

// Load reads the PEM files. names says what to call each file in errors
// (the flag or the worker key it came from), so that a start-up error
// names what the user set.
func Load(paths, names Files) (*Config, error) {
	if paths.Cert == "" || paths.Key == "" {
		missing := names.Cert
		if paths.Cert != "" {
			missing = names.Key
		}
		return nil, fmt.Errorf("%s is required with %s", missing, setOne(paths, names))
	}
	cert, err := tls.LoadX509KeyPair(paths.Cert, paths.Key)
	if err != nil {
		return nil, fmt.Errorf("%s / %s: %w", names.Cert, names.Key, err)
	}
	var cas *x509.CertPool
	if paths.CA != "" {
		pem, err := os.ReadFile(paths.CA)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names.CA, err)
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", names.CA, paths.CA)
		}
	}
	c, err := New(cert, cas)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", names.Cert, err)
	}
	return c, nil
}

// setOne names a file that was given, for the error about the one
// missing.
func setOne(paths, names Files) string {
	switch {
	case paths.Cert != "":
		return names.Cert
	case paths.Key != "":
		return names.Key
	default:
		return names.CA
	}
}

// New makes the Config of a member holding cert; cas admits peers, nil
// takes cert's own chain (a shared self-signed certificate). cert must
// itself be admitted, as a server and as a client: a member the others
// would refuse is refused at start, where the error is clear.
func New(cert tls.Certificate, cas *x509.CertPool) (*Config, error) {
	if len(cert.Certificate) == 0 {
		return nil, errors.New("no certificate")
	}
	chain := make([]*x509.Certificate, 0, len(cert.Certificate))
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		chain = append(chain, c)
	}
	if cas == nil {
		cas = x509.NewCertPool()
		for _, c := range chain {
			cas.AddCert(c)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := verify(chain, cas, usage); err != nil {
			return nil, fmt.Errorf("this member's own certificate would be refused by the others (each member serves and dials, so the certificate needs the serverAuth and clientAuth extended key usages, or none): %w", err)
		}
	}
	server := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    cas,
	}
	client := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// The chain is verified below, against the cluster's CAs; only
		// the host name check is left out (see the package comment).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verify(cs.PeerCertificates, cas, x509.ExtKeyUsageServerAuth)
		},
	}
	return &Config{Server: server, Client: client}, nil
}

// verify checks that chain's leaf chains to cas for usage.
func verify(chain []*x509.Certificate, cas *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return errors.New("the peer sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}
