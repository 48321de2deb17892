package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseOptionsRefusesWhatTheRunCannotUse(t *testing.T) {
	for _, args := range [][]string{
		{"--rows", "0"},
		{"--changes", "301"}, // odd
		{"--tx-rows", "0"},
		{"--lag-rate", "15"},
		{"--lag-duration", "2s"},
		{"--rounds", "0"},
		{"stray"},
		{"--systems", "connect"},
		{"--systems", "sluice,sluice"},
		{"--sluice-prop", "noequals"},
		{"--sluice-env", "=x"},
	} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	o, err := parseOptions(nil, io.Discard)
	if err != nil || o.rows != 1_000_000 || o.changes != 500_000 || o.rounds != 3 || len(o.systems) != 2 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
}

func TestOneSystemRunsAloneAndTheCommandRerunsIt(t *testing.T) {
	o, err := parseOptions([]string{"--systems", "Sluice", "--rounds", "1",
		"--sluice-prop", "producer.buffer.memory=8388608", "--sluice-env", "GODEBUG=gctrace=1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.systems) != 1 || o.systems[0] != "Sluice" {
		t.Fatalf("systems %v", o.systems)
	}
	cmd := o.command()
	for _, want := range []string{"--systems sluice", "--sluice-prop producer.buffer.memory=8388608", "--sluice-env GODEBUG=gctrace=1", "--rounds 1"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("%q lacks %q", cmd, want)
		}
	}
	r := &results{opts: o}
	r.add("Sluice", measured{snapshotRate: 300})
	if table := r.table(); !strings.Contains(table, "| snapshot | rows/s | - | 300 / 300 | - |") {
		t.Errorf("a system that did not run must show as -, with no ratio:\n%s", table)
	}
}

func TestMinMedianTakesTheBestByDirection(t *testing.T) {
	if best, med := minMedian([]float64{3, 1, 2}, true); best != 3 || med != 2 {
		t.Errorf("higher is better: best %v median %v", best, med)
	}
	if best, med := minMedian([]float64{4, 1, 3, 2}, false); best != 1 || med != 2.5 {
		t.Errorf("lower is better: best %v median %v", best, med)
	}
}

func TestTableHasEveryMetricAndTheRatioOfMedians(t *testing.T) {
	r := &results{opts: options{changes: 1_000_000}}
	r.add("Debezium", measured{snapshotRate: 100, streamRate: 50})
	r.add("Sluice", measured{snapshotRate: 300, streamRate: 200})
	table := r.table()
	for _, m := range metrics {
		if !strings.Contains(table, "| "+m.name+" |") {
			t.Errorf("no row for %s in\n%s", m.name, table)
		}
	}
	if !strings.Contains(table, "| snapshot | rows/s | 100 / 100 | 300 / 300 | 3.00 |") ||
		!strings.Contains(table, "| streaming | changes/s | 50.0 / 50.0 | 200 / 200 | 4.00 |") {
		t.Errorf("ratios wrong in\n%s", table)
	}
}

func TestRatioTextKeepsSmallRatiosReadable(t *testing.T) {
	for r, want := range map[float64]string{3.4912: "3.49", 0.14: "0.14", 0.00496: "0.005", 0.087: "0.087"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", r, got, want)
		}
	}
}
