package worker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

// startWithProps starts a worker whose Kafka is unreachable (the REST
// listeners serve regardless) with the given worker keys.
func startWithProps(t *testing.T, props map[string]string) *Worker {
	t.Helper()
	return startUnconnected(t, Config{Cluster: "lt", Props: props})
}

// startUnconnected starts cfg's worker against a broker that is not there,
// which serves its REST listeners all the same, and stops it at the end.
func startUnconnected(t *testing.T, cfg Config) *Worker {
	t.Helper()
	cfg.Bootstrap, cfg.Log = []string{"127.0.0.1:1"}, zerolog.Nop()
	w, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

func status(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// admin.listeners: an entry equal to a main listener shares it (one
// listener serving everything); an empty value turns /admin off.
func TestAdminListenersShareOrTurnOff(t *testing.T) {
	addr := proctest.FreeAddr(t)
	shared := startWithProps(t, map[string]string{"listeners": "http://" + addr, "admin.listeners": "http://" + addr})
	main, admin := shared.ListenerURLs()
	if len(main) != 1 || len(admin) != 0 {
		t.Fatalf("shared listener: main %v, admin %v; want one listener", main, admin)
	}
	if code := status(t, http.DefaultClient, main[0]+"/admin/loggers"); code != 200 {
		t.Fatalf("/admin/loggers on the shared listener: %d", code)
	}
	if code := status(t, http.DefaultClient, main[0]+"/connectors"); code == 404 {
		t.Fatal("/connectors on the shared listener: 404")
	}

	off := startWithProps(t, map[string]string{"listeners": "http://127.0.0.1:0", "admin.listeners": " "})
	main, admin = off.ListenerURLs()
	if len(admin) != 0 {
		t.Fatalf("admin.listeners empty opened %v", admin)
	}
	if code := status(t, http.DefaultClient, main[0]+"/admin/loggers"); code != 404 {
		t.Fatalf("/admin/loggers with admin.listeners empty: %d, want 404", code)
	}
}

// An http and an https listener both serve the API; rest.advertised.listener
// picks the https one's URL, which becomes the worker's id and REST URL.
func TestHTTPAndHTTPSListeners(t *testing.T) {
	pki := tlstest.New(t)
	keystore := tlstest.WriteFile(t, "server.pem", []byte(tlstest.KeyPEM(t, pki.ServerKey)+tlstest.CertPEM(pki.ServerCert, pki.CA)))
	httpsAddr := proctest.FreeAddr(t)
	w := startWithProps(t, map[string]string{
		"listeners":                             "http://127.0.0.1:0, https://" + httpsAddr,
		"listeners.https.ssl.keystore.type":     "PEM",
		"listeners.https.ssl.keystore.location": keystore,
		"rest.advertised.listener":              "HTTPS",
	})
	if w.restURL != "https://"+httpsAddr || w.ID() != httpsAddr || w.RESTAddr() != httpsAddr {
		t.Fatalf("advertised %s, id %s, RESTAddr %s; want the https listener's", w.restURL, w.ID(), w.RESTAddr())
	}
	main, _ := w.ListenerURLs()
	if len(main) != 2 || !strings.HasPrefix(main[0], "http://") || main[1] != "https://"+httpsAddr {
		t.Fatalf("listeners %v", main)
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.CA)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code := status(t, client, main[1]+"/admin/loggers"); code != 200 {
		t.Fatalf("https: %d", code)
	}
	if code := status(t, http.DefaultClient, main[0]+"/admin/loggers"); code != 200 {
		t.Fatalf("http: %d", code)
	}
}

// Connect's all-or-nothing prefix rule: one listeners.https. key makes the
// https listener ignore the worker's ssl.* keys altogether.
func TestSSLPropsPrefixRule(t *testing.T) {
	props := map[string]string{"ssl.keystore.location": "/worker.jks", "ssl.truststore.location": "/trust.jks"}
	got, from := sslProps(props, listenersHTTPSPrefix)
	if from != "ssl.*" || got["ssl.truststore.location"] != "/trust.jks" {
		t.Fatalf("without prefixed keys: %v from %s, want the worker's", got, from)
	}
	props["listeners.https.ssl.keystore.location"] = "/rest.jks"
	got, from = sslProps(props, listenersHTTPSPrefix)
	if from != "listeners.https.ssl.*" || got["ssl.keystore.location"] != "/rest.jks" || got["ssl.truststore.location"] != "" {
		t.Fatalf("with a prefixed key: %v from %s, want only the prefixed keys", got, from)
	}
}

// Without listeners.https.* keys, an https listener serves the worker's own
// ssl.* keystore, and ssl.client.auth=required refuses a client without a
// certificate.
func TestHTTPSListenerTakesTheWorkersSSLKeys(t *testing.T) {
	pki := tlstest.New(t)
	keystore := tlstest.WriteFile(t, "server.pem", []byte(tlstest.KeyPEM(t, pki.ServerKey)+tlstest.CertPEM(pki.ServerCert, pki.CA)))
	trust := tlstest.WriteFile(t, "ca.pem", []byte(tlstest.CertPEM(pki.CA)))
	w := startWithProps(t, map[string]string{
		"listeners":             "https://127.0.0.1:0",
		"ssl.keystore.type":     "PEM",
		"ssl.keystore.location": keystore,
		"ssl.truststore.type":   "PEM", "ssl.truststore.location": trust,
		"ssl.client.auth": "required",
	})
	main, _ := w.ListenerURLs()
	if !strings.HasPrefix(w.restURL, "https://") || len(main) != 1 {
		t.Fatalf("advertised %s, listeners %v", w.restURL, main)
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.CA)
	if _, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}).Get(main[0] + "/admin/loggers"); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{pki.ClientCert.Raw}, PrivateKey: pki.ClientKey}}}}}
	if code := status(t, withCert, main[0]+"/admin/loggers"); code != 200 {
		t.Fatalf("a client with a certificate: %d", code)
	}
}
