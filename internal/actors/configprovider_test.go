package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// A connector and its tasks start with their placeholders resolved, and
// the task configs the connector computes from the resolved config are
// stored with the placeholders back: the test source copies its topic key
// into each task config, and writes to the topic its task was opened with.
func TestTasksStartResolvedAndTaskConfigsKeepPlaceholders(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.properties")
	k := storetest.Start(t, "t", ProducerOpts()...)
	topic := k.Topic("resolved-out")
	if err := os.WriteFile(file, []byte("topic="+topic+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	providers := configprovider.NewTransformer(map[string]configprovider.Provider{"file": configprovider.NewFileProvider(nil)}, zerolog.Nop())
	e := newEnvOn(t, k, false, func(o *Options) { o.Providers = providers })
	hooksFor("resolved").records = 10
	placeholder := "${file:" + file + ":topic}"
	e.create("resolved", withConv(map[string]string{"name": "resolved", "connector.class": "test.TestSource", "topic": placeholder}))
	e.waitTaskState("resolved", 0, state.StateRunning)
	if recs := e.readTopic(topic, 10); len(recs) != 10 {
		t.Fatalf("%d records in the resolved topic, want 10", len(recs))
	}
	testutil.Eventually(t, 10*time.Second, "task configs stored", func() error {
		conn := e.configs.Snapshot().Connectors["resolved"]
		if conn == nil || len(conn.Tasks) != 1 {
			return fmt.Errorf("connector %+v", conn)
		}
		if got := conn.Tasks[0]["topic"]; got != placeholder {
			return fmt.Errorf("stored task config topic %q, want the placeholder %q", got, placeholder)
		}
		return nil
	})
}

// A placeholder whose file cannot be read fails the connector, and the
// status trace names the key, the provider and the path.
func TestUnreadablePlaceholderFailsNamingProviderAndPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.properties")
	providers := configprovider.NewTransformer(map[string]configprovider.Provider{"file": configprovider.NewFileProvider(nil)}, zerolog.Nop())
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) { o.Providers = providers })
	e.create("unreadable", withConv(map[string]string{"name": "unreadable", "connector.class": "test.TestSource",
		"topic": "${file:" + missing + ":topic}"}))
	testutil.Eventually(t, 20*time.Second, "connector FAILED", func() error {
		st, _ := e.statuses.Connector("unreadable")
		if st.State != state.StateFailed {
			return fmt.Errorf("state %q", st.State)
		}
		for _, want := range []string{"topic", `config provider "file"`, missing} {
			if !strings.Contains(st.Trace, want) {
				return fmt.Errorf("trace %q lacks %q", st.Trace, want)
			}
		}
		return nil
	})
}
