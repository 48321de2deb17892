package postgrescdc

import (
	"context"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/internal/pgtest"
)

var slotSeq atomic.Int64

// cdcConfig is a config for srv's database with a slot of the test's own.
func cdcConfig(srv *pgtest.Server, extra ...string) map[string]string {
	n := slotSeq.Add(1)
	cfg := map[string]string{
		HostnameKey: srv.Host(), PortKey: strconv.Itoa(srv.Port()), UserKey: srv.User(), PasswordKey: srv.Password(),
		DBNameKey: srv.Database(), TopicPrefixKey: "srv", SSLModeKey: "disable",
		SlotNameKey:        fmt.Sprintf("sluice_test_%d_%d", time.Now().UnixNano()%1e9, n),
		PublicationNameKey: fmt.Sprintf("sluice_pub_%d", n), PollIntervalKey: "100",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

// harness runs a task against a SourceContext that stores offsets as the
// runtime would.
type harness struct {
	t   *testing.T
	sc  *conformance.SourceContext
	cfg map[string]string
	tk  *Task
}

func newHarness(t *testing.T, cfg map[string]string) *harness {
	h := &harness{t: t, sc: conformance.NewSourceContext(t, "cdc", 0), cfg: cfg}
	t.Cleanup(func() {
		if h.tk != nil {
			h.tk.Close()
		}
		// The slot would hold WAL on the shared server after the test.
		srvDrop(t, cfg)
	})
	return h
}

func srvDrop(t *testing.T, cfg map[string]string) {
	s, err := parseSettings(cfg)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := s.connect(ctx)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", s.slot)
}

func (h *harness) open() {
	h.t.Helper()
	h.tk = &Task{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.tk.Open(ctx, h.sc, h.cfg); err != nil {
		h.t.Fatalf("Open: %v", err)
	}
}

// poll collects n records (failing after a while), committing each
// batch's offsets and calling Commit, as the runtime does.
func (h *harness) poll(n int) []*connectors.SourceRecord {
	h.t.Helper()
	var out []*connectors.SourceRecord
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("got %d records, want %d: %v", len(out), n, describe(out))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		recs, err := h.tk.Poll(ctx)
		cancel()
		if err != nil && connectors.IsRetriable(err) {
			// As the runtime does: a retriable failure is polled
			// again (after a restart the server may still hold the
			// slot for the old connection for a moment).
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil {
			h.t.Fatalf("Poll: %v", err)
		}
		out = append(out, recs...)
		if len(recs) > 0 {
			if err := h.sc.Commit(recs...); err != nil {
				h.t.Fatal(err)
			}
			if err := h.tk.Commit(context.Background()); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	return out
}

// streaming waits until the task streams from its slot: with
// snapshot.mode=no_data, changes made before the slot exists are not
// captured, and creating a slot waits for running transactions.
func (h *harness) streaming() {
	h.t.Helper()
	s, _ := parseSettings(h.cfg)
	ctx := context.Background()
	conn, err := s.connect(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A slot being created is active already; its confirmed position
	// is set once it has found its consistent point.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ready bool
		err := conn.QueryRow(ctx, "SELECT coalesce(bool_and(active AND confirmed_flush_lsn IS NOT NULL), false) FROM pg_replication_slots WHERE slot_name = $1", s.slot).Scan(&ready)
		if err != nil {
			h.t.Fatal(err)
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("slot %s is not streaming", s.slot)
		}
	}
}

// quiet checks that no further record arrives for a while.
func (h *harness) quiet() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	recs, err := h.tk.Poll(ctx)
	if err != nil || len(recs) > 0 {
		h.t.Fatalf("expected nothing more, got %v, %v", describe(recs), err)
	}
}

func (h *harness) close() {
	h.t.Helper()
	if err := h.tk.Close(); err != nil {
		h.t.Fatalf("Close: %v", err)
	}
	h.tk = nil
}

// describe renders records as "topic op key" lines.
func describe(recs []*connectors.SourceRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Topic+" "+opOf(r)+" "+keyOf(r))
	}
	return out
}

func opOf(r *connectors.SourceRecord) string {
	v, ok := r.Value.(*connectors.StructValue)
	if !ok || v == nil {
		return "tombstone"
	}
	if op, ok := v.Get("op").(string); ok {
		return op
	}
	return "?"
}

func keyOf(r *connectors.SourceRecord) string {
	k, ok := r.Key.(*connectors.StructValue)
	if !ok || k == nil {
		return "null"
	}
	return fmt.Sprint(k.Values...)
}

func field(r *connectors.SourceRecord, part, name string) any {
	v := r.Value.(*connectors.StructValue)
	p, _ := v.Get(part).(*connectors.StructValue)
	if p == nil {
		return nil
	}
	return p.Get(name)
}

func TestSnapshotThenStream(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), note varchar(20))`)
	srv.Exec(t, `CREATE TABLE other (k text PRIMARY KEY)`)
	srv.Exec(t, `INSERT INTO items VALUES (1, 'a', 1.50, NULL), (2, 'b', 2.25, 'x')`)
	srv.Exec(t, `INSERT INTO other VALUES ('z')`)
	h := newHarness(t, cdcConfig(srv))
	h.open()
	snap := h.poll(3)
	if got := describe(snap); strings.Join(got, "|") != "srv.public.items r 1|srv.public.items r 2|srv.public.other r z" {
		t.Fatalf("snapshot = %v", got)
	}
	for i, want := range []string{"first", "last_in_data_collection", "last"} {
		if got := field(snap[i], "source", "snapshot"); got != want {
			t.Errorf("record %d: source.snapshot = %v, want %s", i, got, want)
		}
	}
	if last := snap[2].Offset; last["last_snapshot_record"] != true || last["snapshot"] != "INITIAL" {
		t.Errorf("last snapshot offset = %v", last)
	}
	// The records before the last share one offset (one map, not a map
	// each held until Kafka acknowledges them), which says so.
	if first := snap[0].Offset; first["last_snapshot_record"] != false || first["snapshot"] != "INITIAL" || first["lsn"] == nil {
		t.Errorf("snapshot offset = %v", first)
	}
	if reflect.ValueOf(snap[0].Offset).Pointer() != reflect.ValueOf(snap[1].Offset).Pointer() {
		t.Error("the snapshot's records before the last have offset maps of their own")
	}
	if got := field(snap[0], "after", "price"); got.(*big.Rat).Cmp(big.NewRat(3, 2)) != 0 {
		t.Errorf("price = %v", got)
	}
	if snap[0].ValueSchema.Name != "srv.public.items.Envelope" || snap[0].KeySchema.Name != "srv.public.items.Key" {
		t.Errorf("schema names %q %q", snap[0].ValueSchema.Name, snap[0].KeySchema.Name)
	}

	srv.Exec(t, `INSERT INTO items VALUES (3, 'c', 3, NULL)`)
	srv.Exec(t, `UPDATE items SET name = 'bb' WHERE id = 2`)
	srv.Exec(t, `DELETE FROM items WHERE id = 1`)
	changes := h.poll(4)
	if got := strings.Join(describe(changes), "|"); got != "srv.public.items c 3|srv.public.items u 2|srv.public.items d 1|srv.public.items tombstone 1" {
		t.Fatalf("changes = %v", got)
	}
	if got := field(changes[1], "after", "name"); got != "bb" {
		t.Errorf("update after.name = %v", got)
	}
	if got := field(changes[1], "before", "name"); got != nil {
		t.Errorf("update before without REPLICA IDENTITY FULL = %v, want null", got)
	}
	// Default replica identity: a delete's before holds the key, and the
	// type's zero in required columns, as Debezium's fallback.
	if id, name := field(changes[2], "before", "id"), field(changes[2], "before", "name"); id != int32(1) || name != "" {
		t.Errorf("delete before = %v %v", id, name)
	}
	// lsn_commit is, as Debezium's, the commit LSN of the transaction
	// before: the first one streamed from a new slot has none.
	if _, ok := changes[0].Offset["lsn_commit"]; ok {
		t.Errorf("first streamed offset has lsn_commit: %v", changes[0].Offset)
	}
	if seq, _ := field(changes[0], "source", "sequence").(string); !strings.HasPrefix(seq, `[null,"`) {
		t.Errorf("first source.sequence = %q", seq)
	}
	o := changes[1].Offset
	if o["messageType"] != "UPDATE" {
		t.Errorf("update offset messageType = %v", o["messageType"])
	}
	for _, k := range []string{"lsn", "lsn_commit", "lsn_proc", "txId", "ts_usec"} {
		if _, ok := o[k]; !ok {
			t.Errorf("streaming offset lacks %q: %v", k, o)
		}
	}
	want := fmt.Sprintf(`["%d","%d"]`, o["lsn_commit"], o["lsn"])
	if seq := field(changes[1], "source", "sequence"); seq != want {
		t.Errorf("source.sequence = %v, want %s", seq, want)
	}
	if snap := field(changes[1], "source", "snapshot"); snap != nil {
		t.Errorf("streamed source.snapshot = %v, want null (its default, false)", snap)
	}
	h.quiet()
	h.close()

	// Changes while stopped arrive after a restart, nothing twice.
	srv.Exec(t, `INSERT INTO items VALUES (4, 'd', 4, NULL)`)
	h.open()
	again := h.poll(1)
	if got := strings.Join(describe(again), "|"); got != "srv.public.items c 4" {
		t.Fatalf("after restart = %v", got)
	}
	h.quiet()
}

func TestRestartMidTransactionResumesWithoutLossOrDuplicate(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData, TombstonesKey, "false"))
	h.open()
	h.streaming()
	srv.Exec(t, `INSERT INTO t SELECT g FROM generate_series(1, 10) g`)
	// Take the records one by one and store the offset of the 4th only:
	// as if the task died with the transaction half in Kafka.
	var got []*connectors.SourceRecord
	for deadline := time.Now().Add(30 * time.Second); len(got) < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("got %v", describe(got))
		}
		recs, err := h.tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	if err := h.sc.Commit(got[3]); err != nil {
		t.Fatal(err)
	}
	h.tk.Commit(context.Background())
	h.close()
	h.open()
	rest := h.poll(6)
	if first, last := keyOf(rest[0]), keyOf(rest[5]); first != "5" || last != "10" {
		t.Fatalf("after restart got %v", describe(rest))
	}
	h.quiet()
}

func TestReplicaIdentityFullKeyChangeAndToast(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE f (id int PRIMARY KEY, v text, big text)`)
	srv.Exec(t, `ALTER TABLE f REPLICA IDENTITY FULL`)
	srv.Exec(t, `CREATE TABLE toasty (id int PRIMARY KEY, n int, big text)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData))
	h.open()
	h.streaming()
	srv.Exec(t, `INSERT INTO f VALUES (1, 'x', 'y')`)
	srv.Exec(t, `UPDATE f SET v = 'x2' WHERE id = 1`)
	srv.Exec(t, `UPDATE f SET id = 2 WHERE id = 1`)
	recs := h.poll(5)
	if got := strings.Join(describe(recs), "|"); got != "srv.public.f c 1|srv.public.f u 1|srv.public.f d 1|srv.public.f tombstone 1|srv.public.f c 2" {
		t.Fatalf("got %v", got)
	}
	if before := field(recs[1], "before", "v"); before != "x" {
		t.Errorf("REPLICA IDENTITY FULL before.v = %v", before)
	}
	// The delete of the old key and its tombstone point at the new key,
	// the create at the old one; Debezium's context headers follow.
	context := "__debezium.context.connectorLogicalName=srv|__debezium.context.taskId=0|__debezium.context.connectorName=postgresql|__debezium.context.runId="
	for i, want := range []string{"__debezium.newkey=", "__debezium.newkey=", "__debezium.oldkey="} {
		if got := headerList(recs[2+i]); !strings.HasPrefix(got, want+"|"+context) {
			t.Errorf("%s headers = %s, want %s|%s<uuid>", describe(recs[2+i : 3+i])[0], got, want, context)
		}
	}
	if got := headerList(recs[0]); !strings.HasPrefix(got, context) || len(got) != len(context)+36 {
		t.Errorf("insert headers = %s, want %s<uuid>", got, context)
	}
	if recs[0].Headers[3].Value != recs[4].Headers[4].Value {
		t.Errorf("run id changed within a run: %v, %v", recs[0].Headers[3].Value, recs[4].Headers[4].Value)
	}
	// A value too large to stay inline, then an update of another column:
	// pgoutput does not resend it, Debezium shows its placeholder.
	srv.Exec(t, `INSERT INTO toasty VALUES (1, 1, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 2000) g))`)
	srv.Exec(t, `UPDATE toasty SET n = 2 WHERE id = 1`)
	recs = h.poll(2)
	if big, _ := field(recs[0], "after", "big").(string); len(big) != 64000 {
		t.Errorf("insert big = %d chars", len(big))
	}
	if got := field(recs[1], "after", "big"); got != unavailableValue {
		t.Errorf("unchanged TOAST value = %.40v, want the placeholder", got)
	}
	// With REPLICA IDENTITY FULL the old row holds the value: Debezium
	// takes it from there.
	srv.Exec(t, `INSERT INTO f VALUES (3, 'z', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 2000) g))`)
	srv.Exec(t, `UPDATE f SET v = 'z2' WHERE id = 3`)
	recs = h.poll(2)
	if after, before := field(recs[1], "after", "big"), field(recs[1], "before", "big"); after != before || len(after.(string)) != 64000 {
		t.Errorf("REPLICA IDENTITY FULL unchanged TOAST value: after = %.40v, before = %.40v, want the whole value in both", after, before)
	}
}

// headerList is a record's headers as "key=value|key=value"; a struct
// value shows as empty.
func headerList(r *connectors.SourceRecord) string {
	var out []string
	for _, h := range r.Headers {
		v, _ := h.Value.(string)
		out = append(out, h.Key+"="+v)
	}
	return strings.Join(out, "|")
}

func TestExtendedHeadersDisabled(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE plain (id int PRIMARY KEY)`)
	srv.Exec(t, `INSERT INTO plain VALUES (1)`)
	h := newHarness(t, cdcConfig(srv, ExtendedHeadersKey, "false"))
	h.open()
	recs := h.poll(1)
	if len(recs[0].Headers) != 0 {
		t.Errorf("extended.headers.enabled=false: headers = %s", headerList(recs[0]))
	}
}

// confirmedFlush reads the slot's confirmed_flush_lsn.
func confirmedFlush(t *testing.T, srv *pgtest.Server, slot string) uint64 {
	t.Helper()
	conn := srv.Conn(t)
	var lsn string
	if err := conn.QueryRow(context.Background(), "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	var hi, lo uint64
	fmt.Sscanf(lsn, "%X/%X", &hi, &lo)
	return hi<<32 | lo
}

func TestSlotConfirmedOnlyAfterOffsetsAreStoredAndHeartbeatsAdvanceIt(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE captured (id int PRIMARY KEY)`)
	srv.Exec(t, `CREATE TABLE other (id int PRIMARY KEY)`)
	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotNoData, TableIncludeKey, "public.captured", HeartbeatIntervalKey, "200")
	h := newHarness(t, cfg)
	h.open()
	h.streaming()
	start := confirmedFlush(t, srv, cfg[SlotNameKey])

	// Records polled but whose offsets are not stored: the slot stays.
	srv.Exec(t, `INSERT INTO captured VALUES (1)`)
	srv.Exec(t, `INSERT INTO captured VALUES (2)`)
	var recs []*connectors.SourceRecord
	for deadline := time.Now().Add(20 * time.Second); len(recs) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("got %v", describe(recs))
		}
		got, err := h.tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if !strings.HasPrefix(r.Topic, "__debezium-heartbeat") {
				recs = append(recs, r)
			}
		}
	}
	h.tk.Commit(context.Background()) // nothing stored: nothing to confirm
	time.Sleep(1500 * time.Millisecond)
	if now := confirmedFlush(t, srv, cfg[SlotNameKey]); now != start {
		t.Fatalf("confirmed_flush_lsn moved from %X to %X before any offset was stored", start, now)
	}

	// Changes to a table not captured, then heartbeats: once their
	// offsets are stored, the slot moves past all of it.
	srv.Exec(t, `INSERT INTO other SELECT g FROM generate_series(1, 100) g`)
	var hb *connectors.SourceRecord
	for deadline := time.Now().Add(20 * time.Second); hb == nil || hb.Offset["lsn_commit"] == nil; {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat after the other table's transaction")
		}
		got, err := h.tk.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if r.Topic == "__debezium-heartbeat.srv" {
				hb = r
				if k := r.Key.(*connectors.StructValue); k.Get("serverName") != "srv" {
					t.Fatalf("heartbeat key %v", k.Values)
				}
			}
		}
	}
	if err := h.sc.Commit(append(recs, hb)...); err != nil {
		t.Fatal(err)
	}
	h.tk.Commit(context.Background())
	var moved uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if moved = confirmedFlush(t, srv, cfg[SlotNameKey]); moved > uint64(number(recs[1].Offset["lsn"])) {
			return
		}
	}
	t.Fatalf("confirmed_flush_lsn %X did not move past the captured changes (%v) after the heartbeat's offset was stored", moved, recs[1].Offset)
}

func TestInitialOnlySnapshotsThenStreamsNothingAndFreesTheSlot(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE io (id int PRIMARY KEY)`)
	srv.Exec(t, `INSERT INTO io VALUES (1), (2)`)
	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotInitialOnly)
	h := newHarness(t, cfg)
	h.open()
	h.poll(2)
	srv.Exec(t, `INSERT INTO io VALUES (3)`)
	h.quiet()
	conn := srv.Conn(t)
	var slots int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", cfg[SlotNameKey]).Scan(&slots); err != nil {
			t.Fatal(err)
		}
		if slots == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot outlived the initial_only snapshot")
		}
	}
	h.close()
	h.open() // the snapshot is complete: nothing again
	h.quiet()
}

func TestChangesOfADroppedTableStillArrive(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE doomed (id int PRIMARY KEY, v text NOT NULL)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData))
	h.open()
	h.streaming()
	h.close() // decoded later, after the table is gone
	srv.Exec(t, `INSERT INTO doomed VALUES (1, 'x')`)
	srv.Exec(t, `DROP TABLE doomed`)
	h.open()
	recs := h.poll(1)
	if got := strings.Join(describe(recs), "|"); got != "srv.public.doomed c 1" || field(recs[0], "after", "v") != "x" {
		t.Fatalf("got %v", got)
	}
}

func TestSlotDropOnStop(t *testing.T) {
	srv := pgtest.Start(t)
	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotNoData, SlotDropOnStopKey, "true")
	h := newHarness(t, cfg)
	h.open()
	h.streaming()
	h.close()
	var n int
	if err := srv.Conn(t).QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", cfg[SlotNameKey]).Scan(&n); err != nil || n != 0 {
		t.Fatalf("slot.drop.on.stop=true left %d slots (%v)", n, err)
	}
}

func TestSchemaAndColumnLists(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE SCHEMA hidden`)
	srv.Exec(t, `CREATE TABLE hidden.h (id int PRIMARY KEY)`)
	srv.Exec(t, `CREATE TABLE users (id int PRIMARY KEY, name text, secret text)`)
	srv.Exec(t, `INSERT INTO hidden.h VALUES (1)`)
	srv.Exec(t, `INSERT INTO users VALUES (1, 'a', 's1')`)
	h := newHarness(t, cdcConfig(srv, SchemaExcludeKey, "HIDDEN", ColumnExcludeKey, `public\.users\.secret`))
	h.open()
	snap := h.poll(1)
	srv.Exec(t, `INSERT INTO hidden.h VALUES (2)`)
	srv.Exec(t, `UPDATE users SET secret = 's2', name = 'b'`)
	streamed := h.poll(1)
	h.quiet()
	for _, r := range append(snap, streamed...) {
		after := r.Value.(*connectors.StructValue).Get("after").(*connectors.StructValue)
		if r.Topic != "srv.public.users" || after.Get("secret") != nil || len(after.Schema.Fields) != 2 {
			t.Fatalf("%s: %v", r.Topic, after.Values)
		}
	}
}

func TestSkippedOperationsAndTruncate(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE ops (id int PRIMARY KEY, v int)`)
	h := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotNoData, SkippedOpsKey, "u"))
	h.open()
	h.streaming()
	srv.Exec(t, `INSERT INTO ops VALUES (1, 1)`)
	srv.Exec(t, `UPDATE ops SET v = 2`)
	srv.Exec(t, `TRUNCATE ops`)
	recs := h.poll(2)
	h.quiet()
	if got := strings.Join(describe(recs), "|"); got != "srv.public.ops c 1|srv.public.ops t null" {
		t.Fatalf("got %v", got)
	}
	if table := field(recs[1], "source", "table"); table != "ops" {
		t.Errorf("truncate source.table = %v", table)
	}
	// As Debezium's, the publication leaves out what is skipped.
	if got := publishedOps(t, srv, h.cfg[PublicationNameKey]); got != "insert delete truncate" {
		t.Errorf("skipped.operations=u: publication publishes %q, want insert delete truncate", got)
	}
}

// publishedOps lists the operations a publication publishes.
func publishedOps(t *testing.T, srv *pgtest.Server, publication string) string {
	t.Helper()
	var ins, upd, del, trunc bool
	if err := srv.Conn(t).QueryRow(context.Background(), "SELECT pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1",
		publication).Scan(&ins, &upd, &del, &trunc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, op := range []struct {
		on   bool
		name string
	}{{ins, "insert"}, {upd, "update"}, {del, "delete"}, {trunc, "truncate"}} {
		if op.on {
			ops = append(ops, op.name)
		}
	}
	return strings.Join(ops, " ")
}

func TestPublishOptionFollowsSkippedOperations(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		want   string
	}{
		{map[string]string{}, ""}, // Debezium sets no publish option when the key is not set
		{map[string]string{SkippedOpsKey: "none"}, ""},
		{map[string]string{SkippedOpsKey: "t"}, "insert, update, delete"},
		{map[string]string{SkippedOpsKey: "c,d"}, "update, truncate"},
	} {
		cfg := map[string]string{HostnameKey: "localhost", UserKey: "u", DBNameKey: "d", TopicPrefixKey: "p"}
		for k, v := range tc.config {
			cfg[k] = v
		}
		s, err := parseSettings(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.publish != tc.want {
			t.Errorf("%v: publish = %q, want %q", tc.config, s.publish, tc.want)
		}
	}
}

func TestFilteredPublicationHoldsTheCapturedTables(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE a (id int PRIMARY KEY)`)
	srv.Exec(t, `CREATE TABLE b (id int PRIMARY KEY)`)
	cfg := cdcConfig(srv, PublicationAutoKey, "filtered", TableIncludeKey, `public\.a`)
	h := newHarness(t, cfg)
	h.open()
	h.quiet()
	var tables []string
	if err := srv.Conn(t).QueryRow(context.Background(), "SELECT array_agg(schemaname || '.' || tablename) FROM pg_publication_tables WHERE pubname = $1",
		cfg[PublicationNameKey]).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tables, ",") != "public.a" {
		t.Fatalf("publication tables = %v", tables)
	}
}

func TestSnapshotModesAlwaysAndWhenNeeded(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE m (id int PRIMARY KEY)`)
	srv.Exec(t, `INSERT INTO m VALUES (1)`)
	always := newHarness(t, cdcConfig(srv, SnapshotModeKey, SnapshotAlways))
	always.open()
	always.poll(1)
	always.close()
	always.open() // a complete snapshot is stored: always snapshots again
	if got := strings.Join(describe(always.poll(1)), "|"); got != "srv.public.m r 1" {
		t.Fatalf("always: %v", got)
	}
	always.close()

	cfg := cdcConfig(srv, SnapshotModeKey, SnapshotWhenNeeded)
	needed := newHarness(t, cfg)
	needed.open()
	needed.poll(1)
	needed.close()
	needed.open() // the offset and the slot are there: no snapshot
	needed.quiet()
	needed.close()
	srvDrop(t, cfg) // the slot is gone: a snapshot is needed
	needed.open()
	if got := strings.Join(describe(needed.poll(1)), "|"); got != "srv.public.m r 1" {
		t.Fatalf("when_needed without the slot: %v", got)
	}
}

func TestSnapshotOrderFollowsTableIncludeList(t *testing.T) {
	tables := [][2]string{{"inventory", "orders"}, {"public", "a"}, {"public", "kinds"}, {"public", "z"}, {"inventory", "items"}}
	for _, tc := range []struct{ include, want string }{
		{"", "inventory.items inventory.orders public.a public.kinds public.z"},
		{`public\.z,inventory\..*,PUBLIC\..*`, "public.z inventory.items inventory.orders public.a public.kinds"},
	} {
		cfg := map[string]string{HostnameKey: "localhost", UserKey: "u", DBNameKey: "d", TopicPrefixKey: "p"}
		if tc.include != "" {
			cfg[TableIncludeKey] = tc.include
		}
		s, err := parseSettings(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tn := range s.snapshotOrder(tables) {
			got = append(got, tn[0]+"."+tn[1])
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("table.include.list %q: snapshot order %v, want %s", tc.include, got, tc.want)
		}
	}
}

// Domains are captured as their base types with the domain's precision
// and scale (a domain over a domain too), arrays of a domain are left out,
// and hstore is a JSON string by default, in snapshot and stream alike, as
// Debezium does (test/debezium compares them with Debezium itself).
func TestDomainsAndHstore(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE EXTENSION hstore`)
	srv.Exec(t, `CREATE DOMAIN price AS numeric(8,2)`)
	srv.Exec(t, `CREATE DOMAIN posint AS int CHECK (VALUE > 0)`)
	srv.Exec(t, `CREATE DOMAIN small AS posint CHECK (VALUE < 10)`)
	srv.Exec(t, `CREATE TABLE d (id int PRIMARY KEY, cost price, n small, tags posint[], attrs hstore)`)
	srv.Exec(t, `INSERT INTO d VALUES (1, 12.5, 3, '{1,2}', 'a=>1, n=>NULL')`)
	h := newHarness(t, cdcConfig(srv))
	h.open()
	srv.Exec(t, `INSERT INTO d VALUES (2, 0.01, 9, '{}', '"b c"=>"d\"e"')`)
	recs := h.poll(2)
	for _, r := range recs {
		after := r.Value.(*connectors.StructValue).Get("after").(*connectors.StructValue)
		s := after.Schema
		if _, c := s.Field("cost"); c == nil || c.Name != connectors.DecimalLogical || c.Parameters["scale"] != "2" || c.Parameters["connect.decimal.precision"] != "8" {
			t.Errorf("cost schema %+v", c)
		}
		if _, n := s.Field("n"); n == nil || n.Type != connectors.Int32 {
			t.Errorf("n schema %+v", n)
		}
		if i, _ := s.Field("tags"); i >= 0 {
			t.Error("an array of a domain was captured; Debezium leaves it out")
		}
		if _, a := s.Field("attrs"); a == nil || a.Name != jsonName {
			t.Errorf("attrs schema %+v", a)
		}
	}
	if got := recs[0].Value.(*connectors.StructValue).Get("after").(*connectors.StructValue).Get("attrs"); got != `{"a":"1","n":null}` {
		t.Errorf("snapshot hstore %v", got)
	}
	if got := recs[1].Value.(*connectors.StructValue).Get("after").(*connectors.StructValue).Get("attrs"); got != `{"b c":"d\"e"}` {
		t.Errorf("streamed hstore %v", got)
	}
	if got := recs[1].Value.(*connectors.StructValue).Get("after").(*connectors.StructValue).Get("n"); got != int32(9) {
		t.Errorf("streamed domain over a domain: %v (%T)", got, got)
	}
}
