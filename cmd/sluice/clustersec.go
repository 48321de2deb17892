package main

import (
	"cmp"
	"flag"
	"fmt"

	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/worker"
)

// clusterSecFlags secure the traffic between workers, and between the
// admin commands and the workers: the gossip key and the actor remote's
// TLS. Workers and admin commands take them with the same meaning.
type clusterSecFlags struct {
	gossipKeys             secretList
	tlsCert, tlsKey, tlsCA string
}

// The flags' names, for errors.
var clusterTLSFlagNames = clustertls.Files{Cert: "--cluster-tls-cert", Key: "--cluster-tls-key", CA: "--cluster-tls-ca"}

func (f *clusterSecFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.gossipKeys, "gossip-key", "encrypt gossip with this key: base64 of 16, 24 or 32 random bytes (AES-128/192/256; make one with: head -c 32 /dev/urandom | base64). "+
		"Repeatable or comma-separated to rotate keys: the first encrypts, all decrypt. Every worker and admin command of the cluster needs it (worker key sluice.gossip.key)")
	fs.StringVar(&f.tlsCert, "cluster-tls-cert", "", "PEM certificate (chain) of this member for the TLS between workers' actor remotes; with --cluster-tls-key (worker key sluice.cluster.tls.cert)")
	fs.StringVar(&f.tlsKey, "cluster-tls-key", "", "PEM private key of --cluster-tls-cert (worker key sluice.cluster.tls.key)")
	fs.StringVar(&f.tlsCA, "cluster-tls-ca", "", "PEM CA certificates that admit a worker or admin command to the cluster (mutual TLS); default: --cluster-tls-cert itself, for one certificate shared by the cluster (worker key sluice.cluster.tls.ca)")
}

// resolve turns the flags into the gossip keys and the cluster TLS, each
// file taken from its flag if set and else from the worker key in props
// (nil for the admin commands). Results left empty let the worker take
// its keys itself.
func (f *clusterSecFlags) resolve(props map[string]string) (keys [][]byte, tlsc *clustertls.Config, err error) {
	if len(f.gossipKeys) > 0 {
		if keys, err = gossip.ParseKeys(f.gossipKeys); err != nil {
			// Never the value: the key is a secret.
			return nil, nil, usageError{fmt.Errorf("--gossip-key (or SLUICE_GOSSIP_KEY): %v", err)}
		}
	}
	if f.tlsCert == "" && f.tlsKey == "" && f.tlsCA == "" {
		return keys, nil, nil
	}
	paths, names := clustertls.Files{}, clusterTLSFlagNames
	pick := func(flagValue, key string, path, name *string) {
		*path = cmp.Or(flagValue, props[key])
		if flagValue == "" && props[key] != "" {
			*name = key
		}
	}
	pick(f.tlsCert, worker.KeyClusterTLSCert, &paths.Cert, &names.Cert)
	pick(f.tlsKey, worker.KeyClusterTLSKey, &paths.Key, &names.Key)
	pick(f.tlsCA, worker.KeyClusterTLSCA, &paths.CA, &names.CA)
	if tlsc, err = clustertls.Load(paths, names); err != nil {
		return nil, nil, usageError{err}
	}
	return keys, tlsc, nil
}

// secretList is a repeatable flag whose values are secrets: it never
// shows them (not as a default in the help, not in an error), and it
// accepts any value, so that the flag package, which quotes a refused
// value in its error, never sees one refused; resolve checks them.
type secretList []string

func (s *secretList) String() string { return "" }

func (s *secretList) Set(v string) error {
	*s = append(*s, v)
	return nil
}
