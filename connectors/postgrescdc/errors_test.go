package postgrescdc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/internal/pgtest"
)

func TestConfigRefusesUnsupportedDebeziumKeys(t *testing.T) {
	base := map[string]string{HostnameKey: "h", UserKey: "u", DBNameKey: "d", TopicPrefixKey: "p"}
	for key, value := range map[string]string{
		"provide.transaction.metadata":        "true",
		"snapshot.select.statement.overrides": "public.t",
		"column.mask.with.10.chars":           "public.t.c",
		"interval.handling.mode":              "string",
		HstoreModeKey:                         "jsonb",
		PluginNameKey:                         "decoderbufs",
		SnapshotModeKey:                       "custom",
		DecimalModeKey:                        "exact",
		MessageKeyColumnsKey:                  "public.t",
		SkippedOpsKey:                         "x",
		MaxQueueSizeKey:                       "10",
	} {
		cfg := map[string]string{key: value}
		for k, v := range base {
			cfg[k] = v
		}
		_, err := parseSettings(cfg)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v does not name the key", key, value, err)
		}
	}
	// Pinned keys at Debezium's default are accepted.
	cfg := map[string]string{"provide.transaction.metadata": "false", "interval.handling.mode": "numeric"}
	for k, v := range base {
		cfg[k] = v
	}
	if _, err := parseSettings(cfg); err != nil {
		t.Errorf("default values refused: %v", err)
	}
	cfg[TableIncludeKey], cfg[TableExcludeKey] = "public.a", "public.b"
	if _, err := parseSettings(cfg); err == nil || !strings.Contains(err.Error(), TableExcludeKey) {
		t.Errorf("include and exclude lists together: %v", err)
	}
}

func TestOpenWithoutReplicationPrivilege(t *testing.T) {
	srv := pgtest.Start(t)
	role := fmt.Sprintf("norepl_%d", time.Now().UnixNano()%1e9)
	srv.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'Secret-pw1'`, role))
	t.Cleanup(func() { srv.Exec(t, `DROP ROLE IF EXISTS `+role) })
	cfg := cdcConfig(srv, UserKey, role, PasswordKey, "Secret-pw1")
	tk := &Task{}
	err := tk.Open(context.Background(), conformance.NewSourceContext(t, "cdc", 0), cfg)
	defer tk.Close()
	if err == nil || !strings.Contains(err.Error(), "REPLICATION") || !strings.Contains(err.Error(), role) {
		t.Fatalf("Open: %v", err)
	}
	if strings.Contains(err.Error(), "Secret-pw1") {
		t.Fatal("the password shows in the error")
	}
	c := &Connector{}
	errs := c.ValidateConfig(cfg)
	if msgs := errs[UserKey]; len(msgs) == 0 || !strings.Contains(msgs[0], "REPLICATION") {
		t.Fatalf("ValidateConfig = %v", errs)
	}
}

func TestValidateReportsAnUnreachableDatabase(t *testing.T) {
	cfg := map[string]string{HostnameKey: "127.0.0.1", PortKey: "1", UserKey: "u", PasswordKey: "pw-not-shown", DBNameKey: "d", TopicPrefixKey: "p", SSLModeKey: "disable"}
	errs := (&Connector{}).ValidateConfig(cfg)
	if len(errs[HostnameKey]) == 0 || strings.Contains(fmt.Sprint(errs), "pw-not-shown") {
		t.Fatalf("ValidateConfig = %v", errs)
	}
}

func TestSlotInUseByAnotherTask(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotNoData)
	h := newHarness(t, cfg)
	h.open()
	h.streaming() // the first task streams
	// The second task opens (the slot may be a killed predecessor's,
	// released soon) and its polls fail retriably until the slot is free.
	second := &Task{}
	defer second.Close()
	if err := second.Open(context.Background(), conformance.NewSourceContext(t, "cdc", 0), cfg); err != nil {
		t.Fatalf("second Open: %v", err)
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
		_, err = second.Poll(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || !connectors.IsRetriable(err) {
		t.Fatalf("second Poll: %v (retriable %v)", err, connectors.IsRetriable(err))
	}
	// Once the first task stops, the second one streams.
	h.close()
	srv.Exec(t, `INSERT INTO t VALUES (1)`)
	var got []*connectors.SourceRecord
	for deadline := time.Now().Add(20 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		recs, _ := second.Poll(context.Background())
		got = append(got, recs...)
	}
	if len(got) != 1 || keyOf(got[0]) != "1" {
		t.Fatalf("second task after the first stopped: %v", describe(got))
	}
}

func TestPublicationDroppedWhileStreaming(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotNoData)
	h := newHarness(t, cfg)
	h.open()
	h.streaming()
	srv.Exec(t, `DROP PUBLICATION `+cfg[PublicationNameKey])
	srv.Exec(t, `INSERT INTO t VALUES (1)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, err := h.tk.Poll(context.Background())
		if err != nil {
			if !strings.Contains(err.Error(), "was dropped") || connectors.IsRetriable(err) {
				t.Fatalf("Poll error: %v", err)
			}
			return
		}
	}
	t.Fatal("no error after the publication was dropped")
}

func TestDisabledPublicationMustExist(t *testing.T) {
	srv := pgtest.Start(t)
	cfg := cdcConfig(srv, PublicationAutoKey, "disabled")
	tk := &Task{}
	defer tk.Close()
	err := tk.Open(context.Background(), conformance.NewSourceContext(t, "cdc", 0), cfg)
	if err == nil || !strings.Contains(err.Error(), cfg[PublicationNameKey]) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open: %v", err)
	}
}

func TestTableWithoutPrimaryKeyHasNullKeys(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE nokey (a int, b text)`)
	srv.Exec(t, `CREATE TABLE keyed (a int NOT NULL, b text)`)
	srv.Exec(t, `CREATE UNIQUE INDEX keyed_a ON keyed (a)`)
	srv.Exec(t, `INSERT INTO nokey VALUES (1, 'x')`)
	srv.Exec(t, `INSERT INTO keyed VALUES (1, 'x')`)
	h := newHarness(t, cdcConfig(srv, MessageKeyColumnsKey, "public.nokey2:b"))
	h.open()
	recs := h.poll(2)
	for _, r := range recs {
		switch r.Topic {
		case "srv.public.nokey":
			if r.Key != nil || r.KeySchema != nil {
				t.Errorf("nokey key = %v", r.Key)
			}
		case "srv.public.keyed":
			if keyOf(r) != "1" {
				t.Errorf("unique index key = %v", keyOf(r))
			}
		}
	}
}

func TestMessageKeyColumns(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE mk (id int PRIMARY KEY, tenant text, code int)`)
	srv.Exec(t, `INSERT INTO mk VALUES (1, 'acme', 7)`)
	h := newHarness(t, cdcConfig(srv, MessageKeyColumnsKey, "public\\.mk:tenant,code"))
	h.open()
	recs := h.poll(1)
	if got := keyOf(recs[0]); got != "acme7" || len(recs[0].KeySchema.Fields) != 2 || recs[0].KeySchema.Fields[0].Name != "tenant" {
		t.Fatalf("key = %v %v", got, recs[0].KeySchema.Fields)
	}
}

func TestWalLevelMustBeLogical(t *testing.T) {
	srv := pgtest.StartPrivateWith(t, "wal_level=replica")
	cfg := cdcConfig(srv)
	tk := &Task{}
	defer tk.Close()
	err := tk.Open(context.Background(), conformance.NewSourceContext(t, "cdc", 0), cfg)
	if err == nil || !strings.Contains(err.Error(), "wal_level") || !strings.Contains(err.Error(), `"replica"`) || connectors.IsRetriable(err) {
		t.Fatalf("Open: %v", err)
	}
	if errs := (&Connector{}).ValidateConfig(cfg); len(errs[PluginNameKey]) == 0 || !strings.Contains(errs[PluginNameKey][0], "wal_level=logical") {
		t.Fatalf("ValidateConfig = %v", errs)
	}
}

func TestDatabaseRestartIsRetried(t *testing.T) {
	srv := pgtest.StartPrivate(t)
	srv.Exec(t, `CREATE TABLE r (id int PRIMARY KEY)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData))
	h.open()
	h.streaming()
	srv.Exec(t, `INSERT INTO r VALUES (1)`)
	h.poll(1)
	restartDatabase(t, srv, h)
	srv.Exec(t, `INSERT INTO r VALUES (2)`)
	if got := pollThroughRetries(t, h); keyOf(got[0]) != "2" {
		t.Fatalf("after the restart: %v", describe(got))
	}
}

// A fast shutdown waits for the slot's client to confirm the last WAL.
// With a record polled but not yet stored, the task cannot confirm it: the
// database going down must still end the stream promptly (a retriable
// error). The next reader resumes after the record Poll returned, which is
// on its way to Kafka (the runtime fails the task if it is not written):
// the record does not come again, the next change does.
func TestDatabaseShutdownWithRecordsInFlight(t *testing.T) {
	srv := pgtest.StartPrivate(t)
	srv.Exec(t, `CREATE TABLE r (id int PRIMARY KEY)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData))
	h.open()
	h.streaming()
	srv.Exec(t, `INSERT INTO r VALUES (1)`)
	var inFlight []*connectors.SourceRecord
	for deadline := time.Now().Add(20 * time.Second); len(inFlight) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no record")
		}
		recs, err := h.tk.Poll(context.Background())
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		inFlight = append(inFlight, recs...) // neither stored nor committed
	}
	restartDatabase(t, srv, h)
	srv.Exec(t, `INSERT INTO r VALUES (2)`)
	if got := pollThroughRetries(t, h); keyOf(got[0]) != "2" {
		t.Fatalf("after the restart, want the next change only: %v", describe(got))
	}
}

// restartDatabase stops srv, which must go down promptly (a fast shutdown
// waits for the slot's client), checks that Poll then fails retriably, and
// starts srv again.
func restartDatabase(t *testing.T, srv *pgtest.Server, h *harness) {
	t.Helper()
	start := time.Now()
	srv.Stop() // fails the test when the fast shutdown does not finish
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the fast shutdown took %v", took)
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(deadline); {
		_, err = h.tk.Poll(context.Background())
	}
	if err == nil || !connectors.IsRetriable(err) {
		t.Fatalf("Poll with the database down: %v (retriable %v)", err, connectors.IsRetriable(err))
	}
	srv.Start()
}

// pollThroughRetries polls as the runtime does after a retriable error
// (the reader comes back on its own and resumes from the stored offset)
// until records arrive.
func pollThroughRetries(t *testing.T, h *harness) []*connectors.SourceRecord {
	t.Helper()
	var got []*connectors.SourceRecord
	for deadline := time.Now().Add(30 * time.Second); len(got) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no record after the database came back")
		}
		recs, err := h.tk.Poll(context.Background())
		if err != nil && !connectors.IsRetriable(err) {
			t.Fatalf("Poll: %v", err)
		}
		got = append(got, recs...)
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return got
}
