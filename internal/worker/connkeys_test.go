package worker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The worker keys that govern connector configs are taken, and a bad value
// stops the start, named.
func TestConnectorGoverningWorkerKeys(t *testing.T) {
	ok := Config{Cluster: "x", Bootstrap: []string{"b"}, Props: map[string]string{
		"connector.client.config.override.policy": "None", "topic.creation.enable": "false"}}
	if err := ok.defaults(); err != nil {
		t.Fatalf("refused: %v", err)
	}
	for key, bad := range map[string]string{"connector.client.config.override.policy": "Sometimes", "topic.creation.enable": "maybe"} {
		w, err := Start(Config{Cluster: "x", Bootstrap: []string{"127.0.0.1:1"}, RESTAddr: "127.0.0.1:0",
			Props: map[string]string{key: bad}})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = w.Stop(ctx)
			cancel()
			t.Errorf("%s=%s: started", key, bad)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %q does not name the key", key, bad, err)
		}
	}
}
