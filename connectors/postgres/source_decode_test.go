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
		if r.SourceOffset()[postgres.OffsetIncrementing] != int64(g) {
			t.Fatalf("record %d: offset %v", i, r.SourceOffset())
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

// TestSourceDecimalsKeepTheirOwnWords: the decimals of a batch share the
// allocations of their Rats and words; every record still holds its own
// value, past one slab, and changing one value (as a transform may) changes
// no other.
func TestSourceDecimalsKeepTheirOwnWords(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE decs (id serial PRIMARY KEY, amount numeric(14,2), whole numeric(12,0))")
	s.Exec(t, `INSERT INTO decs (amount, whole) SELECT (g - 300) * 1.25, CASE WHEN g % 7 = 0 THEN NULL ELSE g * 1000 END
		FROM generate_series(1, 700) g`)
	_, tcs := srcStart(t, srcConfig(s, "table.whitelist", "decs", "batch.max.rows", "600"), 1)
	recs := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0)).pollFor(700)
	check := func(skip int) {
		t.Helper()
		for i, r := range recs[:700] {
			if i == skip {
				continue
			}
			g := int64(i + 1)
			if got, want := srcField(r, "amount").(*big.Rat), big.NewRat((g-300)*125, 100); got.Cmp(want) != 0 || got.RatString() != want.RatString() {
				t.Fatalf("record %d: amount %s, want %s", i, got.RatString(), want.RatString())
			}
			w := srcField(r, "whole")
			if g%7 == 0 {
				if w != nil {
					t.Fatalf("record %d: whole %v, want NULL", i, w)
				}
				continue
			}
			if got := w.(*big.Rat); !got.IsInt() || got.Num().Int64() != g*1000 {
				t.Fatalf("record %d: whole %s, want %d", i, got.RatString(), g*1000)
			}
		}
	}
	check(-1)
	for _, i := range []int{0, 1, 255, 256, 599} {
		a := srcField(recs[i], "amount").(*big.Rat)
		a.Add(a, big.NewRat(1, 3))
		a.Num().Lsh(a.Num(), 200) // wider than the word it had
		a.Denom().Lsh(a.Denom(), 1)
		w := srcField(recs[i], "whole").(*big.Rat)
		w.SetFrac64(-7, 9)
		check(i)
		srcField(recs[i], "amount").(*big.Rat).SetFrac64((int64(i+1)-300)*125, 100)
		w.SetInt64(int64(i+1) * 1000)
	}
	check(-1)
}
