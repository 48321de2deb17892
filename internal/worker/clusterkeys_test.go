package worker

import (
	"bytes"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/internal/testutil"
)

// sluice.cluster.tls.rest=true gives the actor remote the https
// listeners' certificate and CA; without a keystore, with files of its
// own as well, or with a value that is not a boolean, the worker does not
// start, and the error names the key.
func TestClusterTLSFromRESTListeners(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, dir, "cluster")
	certFile, keyFile := ca.Issue(t, dir, "worker")
	keystore := filepath.Join(dir, "keystore.pem")
	if err := os.WriteFile(keystore, append(readFile(t, keyFile), readFile(t, certFile)...), 0o600); err != nil {
		t.Fatal(err)
	}
	https := map[string]string{
		"listeners":                               "https://127.0.0.1:0",
		"listeners.https.ssl.keystore.type":       "PEM",
		"listeners.https.ssl.keystore.location":   keystore,
		"listeners.https.ssl.truststore.type":     "PEM",
		"listeners.https.ssl.truststore.location": ca.File,
		KeyClusterTLSREST:                         "TRUE",
	}
	c, err := resolve(t, Config{Cluster: "x", Bootstrap: []string{"b"}, Props: https})
	if err != nil {
		t.Fatal(err)
	}
	if c.ClusterTLS == nil || len(c.ClusterTLS.Client.Certificates) != 1 || c.ClusterTLS.Server.ClientCAs == nil {
		t.Fatalf("the actor remote did not get the listeners' certificate and CA: %+v", c.ClusterTLS)
	}
	block, _ := pem.Decode(readFile(t, certFile))
	if block == nil || !bytes.Equal(c.ClusterTLS.Client.Certificates[0].Certificate[0], block.Bytes) {
		t.Fatal("the actor remote's certificate is not the listeners' keystore's")
	}

	for name, props := range map[string]map[string]string{
		"no keystore":      {"listeners": "https://127.0.0.1:0", "listeners.https.ssl.truststore.type": "PEM", "listeners.https.ssl.truststore.location": ca.File, KeyClusterTLSREST: "true"},
		"files of its own": withKeys(https, map[string]string{KeyClusterTLSCert: certFile, KeyClusterTLSKey: keyFile}),
		"not a boolean":    withKeys(https, map[string]string{KeyClusterTLSREST: "yes"}),
	} {
		if _, err := resolve(t, Config{Cluster: "x", Bootstrap: []string{"b"}, Props: props}); err == nil || !strings.Contains(err.Error(), KeyClusterTLSREST) {
			t.Errorf("%s: want an error naming %s, got %v", name, KeyClusterTLSREST, err)
		}
	}
}

func withKeys(base, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
