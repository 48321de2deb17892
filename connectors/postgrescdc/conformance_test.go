package postgrescdc

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// The conformance suite on one table whose rows are numbered from 1: row n
// is the record of ordinal n-1. The suite checks exact resumption at any
// committed offset, which the stream gives; an interrupted snapshot is
// redone from the start, as Debezium's is (TestSnapshotThenStream and
// test/cdc_test.go cover snapshots). So the publication and the slot are
// created with the table, and the connector streams every row from there
// (snapshot.mode=no_data).
func TestConformance(t *testing.T) {
	conformance.RunSource(t, conformance.SourceHarness{
		Plugin: Plugin(),
		Config: func(t *testing.T) map[string]string {
			srv := pgtest.Start(t)
			srv.Exec(t, `CREATE TABLE seq (n int PRIMARY KEY)`)
			cfg := cdcConfig(srv, TombstonesKey, "false", SnapshotModeKey, SnapshotNoData)
			t.Cleanup(func() { srvDrop(t, cfg) })
			srv.Exec(t, `CREATE PUBLICATION `+cfg[PublicationNameKey]+` FOR ALL TABLES`)
			srv.Exec(t, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, cfg[SlotNameKey])
			cfg["_rows"] = "0"
			return cfg
		},
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			s, err := parseSettings(cfg)
			if err != nil {
				t.Fatal(err)
			}
			from, _ := strconv.Atoi(cfg["_rows"])
			ctx := t.Context()
			conn, err := s.connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "INSERT INTO seq SELECT g FROM generate_series($1::int, $2::int) g", from+1, from+n); err != nil {
				t.Fatal(err)
			}
			cfg["_rows"] = strconv.Itoa(from + n)
		},
		Live: true,
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			v, ok := r.Value.(*connectors.StructValue)
			if !ok {
				return "", 0, fmt.Errorf("value %T is not a struct", r.Value)
			}
			after, ok := v.Get("after").(*connectors.StructValue)
			if !ok || after == nil {
				return "", 0, fmt.Errorf("event without after: %v", v.Values)
			}
			return fmt.Sprint(r.Partition["server"]), int64(after.Get("n").(int32)) - 1, nil
		},
		BatchSizeKey: MaxBatchSizeKey,
	})
}
