package postgres_test

import (
	"context"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// TestSourceDecodesNumericsExactly: numeric's binary form (base-10000
// digits, a weight, a sign) becomes the exact Decimal, on the int64 path
// and on the big one, with negative, zero, whole and fractional values.
func TestSourceDecodesNumericsExactly(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE nums (id serial PRIMARY KEY, n numeric(40,10) NOT NULL)")
	want := []string{
		"0", "1", "-1", "0.0000000001", "-0.0000000001", "10000", "-123456789012.5", "9999999999999999.9999999999",
		"123456789012345678901234567890.0123456789", "-100000000000000000000000000000", "0.5", "20000.0001",
		"12345.68", "-0.25", "0.0000000625", "999999999999.9999", "-40.1",
	}
	for _, v := range want {
		s.Exec(t, "INSERT INTO nums (n) VALUES ($1::numeric)", v)
	}
	_, tcs := srcStart(t, srcConfig(s), 1)
	recs := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0)).pollFor(len(want))
	for i, v := range want {
		w, _ := new(big.Rat).SetString(v)
		// RatString too: a Rat must be in lowest terms, as big.Rat keeps it.
		if got := srcField(recs[i], "n").(*big.Rat); got.Cmp(w) != 0 || got.RatString() != w.RatString() {
			t.Errorf("numeric %s read as %s (%s)", v, got.FloatString(10), got.RatString())
		}
	}
}

// TestSourceRowsKeepTheirOwnValues: the values of a batch share
// allocations (one string for its text, one slice for its values); every
// record still holds its own row, across batches and past one slab.
func TestSourceRowsKeepTheirOwnValues(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE many (id serial PRIMARY KEY, name text, note varchar(20), at timestamptz, qty int)")
	s.Exec(t, `INSERT INTO many (name, note, at, qty) SELECT 'name-' || g, CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END,
		'2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second', g FROM generate_series(1, 1500) g`)
	_, tcs := srcStart(t, srcConfig(s, "batch.max.rows", "700"), 1)
	recs := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0)).pollFor(1500)
	for i, r := range recs[:1500] {
		g := i + 1
		if got := srcField(r, "id"); got != int32(g) {
			t.Fatalf("record %d: id %v", i, got)
		}
		if got := srcField(r, "name"); got != "name-"+strconv.Itoa(g) {
			t.Fatalf("record %d: name %v", i, got)
		}
		var note any = "n" + strconv.Itoa(g)
		if g%3 == 0 {
			note = nil
		}
		if got := srcField(r, "note"); got != note {
			t.Fatalf("record %d: note %v, want %v", i, got, note)
		}
		if got := srcField(r, "at").(time.Time); !got.Equal(time.Date(2024, 1, 1, 0, 0, g, 0, time.UTC)) {
			t.Fatalf("record %d: at %v", i, got)
		}
		if got := srcField(r, "qty"); got != int32(g) {
			t.Fatalf("record %d: qty %v", i, got)
		}
		if r.Offset[postgres.OffsetIncrementing] != int64(g) {
			t.Fatalf("record %d: offset %v", i, r.Offset)
		}
	}
}

// TestSourceValuesWithoutConnectForm: infinite timestamps and dates and a
// NaN numeric have no Connect value; the task fails naming the column.
func TestSourceValuesWithoutConnectForm(t *testing.T) {
	s := pgtest.Start(t)
	cases := []struct{ typ, value, want string }{
		{"timestamp", "infinity", `column "v": infinity cannot be a Connect ` + connectors.TimestampLogical},
		{"timestamptz", "-infinity", `column "v": -infinity cannot be a Connect ` + connectors.TimestampLogical},
		{"date", "infinity", `column "v": infinity cannot be a Connect ` + connectors.DateLogical},
		{"numeric(10,2)", "NaN", `column "v": NaN cannot be a Connect Decimal`},
	}
	for i, c := range cases {
		table := "bad" + strconv.Itoa(i)
		s.Exec(t, "CREATE TABLE "+table+" (id serial PRIMARY KEY, v "+c.typ+")")
		s.Exec(t, "INSERT INTO "+table+" (v) VALUES ('"+c.value+"')")
		_, tcs := srcStart(t, srcConfig(s, "table.whitelist", table), 1)
		task := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0)).task
		var err error
		for deadline := time.Now().Add(30 * time.Second); err == nil && time.Now().Before(deadline); {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			_, err = task.Poll(ctx)
			cancel()
		}
		if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want a permanent error with %q", c.typ, c.value, err, c.want)
		}
	}
}
