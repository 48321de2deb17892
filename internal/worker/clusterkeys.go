package worker

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/tlsconf"
)

// Sluice's own worker keys for the traffic between workers (gossip and the
// actor remote), which Kafka Connect has no keys for. Like Connect's keys
// they come from --prop or the worker properties file; the flags
// --gossip-key and --cluster-tls-* win over them.
const (
	// KeyGossipKey is the gossip encryption key, base64; a comma-separated
	// list rotates keys (the first encrypts, all decrypt).
	KeyGossipKey = "sluice.gossip.key"
	// KeyClusterTLSCert, KeyClusterTLSKey and KeyClusterTLSCA are the PEM
	// files of the actor remote's TLS (package clustertls).
	KeyClusterTLSCert = "sluice.cluster.tls.cert"
	KeyClusterTLSKey  = "sluice.cluster.tls.key"
	KeyClusterTLSCA   = "sluice.cluster.tls.ca"
	// KeyClusterTLSREST=true gives the actor remote the certificates of
	// the https REST listeners instead of files of its own: the listeners'
	// keystore is each member's certificate, their truststore the CA
	// (without one, the certificate is its own CA, for one certificate the
	// cluster shares).
	KeyClusterTLSREST = "sluice.cluster.tls.rest"
)

// clusterKeyNames are the keys' names, for errors about their files.
var clusterKeyNames = clustertls.Files{Cert: KeyClusterTLSCert, Key: KeyClusterTLSKey, CA: KeyClusterTLSCA}

// applyClusterKeys takes the gossip key and the cluster TLS files from
// Props where GossipKeys and ClusterTLS are unset. The gossip key is a
// secret: errors name the key, never its value.
func (c *Config) applyClusterKeys() error {
	if v := strings.TrimSpace(c.Props[KeyGossipKey]); v != "" && len(c.GossipKeys) == 0 {
		keys, err := gossip.ParseKeys([]string{v})
		if err != nil {
			return fmt.Errorf("%s: %w", KeyGossipKey, err)
		}
		c.GossipKeys = keys
	}
	files := clustertls.Files{
		Cert: strings.TrimSpace(c.Props[KeyClusterTLSCert]),
		Key:  strings.TrimSpace(c.Props[KeyClusterTLSKey]),
		CA:   strings.TrimSpace(c.Props[KeyClusterTLSCA]),
	}
	fromREST, err := parseBoolKey(c.Props, KeyClusterTLSREST)
	if err != nil {
		return err
	}
	switch {
	case c.ClusterTLS != nil:
		return nil
	case fromREST && files != (clustertls.Files{}):
		return fmt.Errorf("%s=true and %s, %s or %s: give the actor remote either the REST listeners' certificates or files of its own, not both",
			KeyClusterTLSREST, KeyClusterTLSCert, KeyClusterTLSKey, KeyClusterTLSCA)
	case fromREST:
		c.ClusterTLS, err = clusterTLSFromREST(c.Props)
		return err
	case files == (clustertls.Files{}):
		return nil
	}
	tlsc, err := clustertls.Load(files, clusterKeyNames)
	if err != nil {
		return err
	}
	c.ClusterTLS = tlsc
	return nil
}

// parseBoolKey reads a true/false worker key (absent is false), as Java's
// ConfigDef reads a BOOLEAN: case-insensitive, nothing else.
func parseBoolKey(props map[string]string, key string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(props[key])); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is not true or false", key, props[key])
}

// clusterTLSFromREST is the actor remote's TLS made of the https
// listeners' ssl keys (listeners.https.ssl.*, else the worker's ssl.*),
// which must name a keystore.
func clusterTLSFromREST(props map[string]string) (*clustertls.Config, error) {
	ssl, from := sslProps(props, listenersHTTPSPrefix)
	m, err := tlsconf.Load(ssl)
	if err != nil {
		return nil, fmt.Errorf("%s: the %s keys: %w", KeyClusterTLSREST, from, err)
	}
	if len(m.Certificates) == 0 {
		return nil, fmt.Errorf("%s: the %s keys name no keystore (ssl.keystore.location or ssl.keystore.key): the actor remote needs a certificate", KeyClusterTLSREST, from)
	}
	tlsc, err := clustertls.New(m.Certificates[0], m.RootCAs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyClusterTLSREST, err)
	}
	return tlsc, nil
}
