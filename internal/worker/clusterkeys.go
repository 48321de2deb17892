package worker

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
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
	if files == (clustertls.Files{}) || c.ClusterTLS != nil {
		return nil
	}
	tlsc, err := clustertls.Load(files, clusterKeyNames)
	if err != nil {
		return err
	}
	c.ClusterTLS = tlsc
	return nil
}
