package debezium

import (
	"strings"
	"testing"
)

// Two connectors' events on the same change, as the JSON converter writes
// them: what differs between them only where it must (prefix, timings,
// positions) has to compare equal, and anything else has to show.
const (
	dbzUpdate = `{"schema":{"type":"struct","name":"dbz.public.t.Envelope","fields":[{"field":"after","type":"struct","name":"dbz.public.t.Value","optional":true,"fields":[{"field":"id","type":"int32"},{"field":"x","type":"double","optional":true}]}]},
	 "payload":{"after":{"id":1,"x":1.0},"op":"u","ts_ms":1700000000123,
	  "source":{"name":"dbz","ts_ms":1700000000000,"lsn":24023976,"txId":771,"xmin":null,"sequence":"[\"24023928\",\"24023976\"]","table":"t"}}}`
	sluiceUpdate = `{"schema":{"type":"struct","name":"sl.public.t.Envelope","fields":[{"field":"after","type":"struct","name":"sl.public.t.Value","optional":true,"fields":[{"field":"id","type":"int32"},{"field":"x","type":"double","optional":true}]}]},
	 "payload":{"after":{"id":1,"x":1},"op":"u","ts_ms":1700000000456,
	  "source":{"name":"sl","ts_ms":1700000000001,"lsn":24023976,"txId":771,"xmin":null,"sequence":"[\"24023928\",\"24023976\"]","table":"t"}}}`
	dbzKey    = `{"schema":{"type":"struct","name":"dbz.public.t.Key","fields":[{"field":"id","type":"int32"}]},"payload":{"id":1}}`
	sluiceKey = `{"schema":{"type":"struct","name":"sl.public.t.Key","fields":[{"field":"id","type":"int32"}]},"payload":{"id":1}}`
)

func mustEvent(t *testing.T, topic string, offset int64, key, value string) event {
	t.Helper()
	var k, v []byte
	if key != "" {
		k = []byte(key)
	}
	if value != "" {
		v = []byte(value)
	}
	e, err := decodeEvent(topic, offset, k, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCompareEqualAfterNormalising(t *testing.T) {
	left := normalise([]event{mustEvent(t, "dbz.public.t", 0, dbzKey, dbzUpdate)}, "dbz")
	right := normalise([]event{mustEvent(t, "sl.public.t", 0, sluiceKey, sluiceUpdate)}, "sl")
	if report := compareTopics("debezium", left, "sluice", right); report != "" {
		t.Fatalf("events that differ only in prefix, timings and number spelling compare unequal:\n%s", report)
	}
	src := source(left[0])
	if src["name"] != prefixMark || src["ts_ms"] != timingMark {
		t.Fatalf("normalised source: %v", src)
	}
}

func TestCompareShowsEveryKindOfDifference(t *testing.T) {
	cases := []struct {
		name       string
		edit       func(string) string
		wantInDiff string
	}{
		{"payload value", func(s string) string { return strings.Replace(s, `"x":1}`, `"x":2}`, 1) }, "value.payload.after.x"},
		{"schema type", func(s string) string {
			return strings.Replace(s, `"field":"x","type":"double"`, `"field":"x","type":"float"`, 1)
		}, "value.schema.fields[0].fields[1].type"},
		{"source.name other than the prefix", func(s string) string {
			return strings.Replace(s, `"name":"sl","ts_ms"`, `"name":"connector-1","ts_ms"`, 1)
		}, "value.payload.source.name"},
		{"missing source field", func(s string) string { return strings.Replace(s, `"xmin":null,`, ``, 1) }, "value.payload.source.xmin"},
		{"timing null", func(s string) string { return strings.Replace(s, `"ts_ms":1700000000456`, `"ts_ms":null`, 1) }, "value.payload.ts_ms"},
		{"op", func(s string) string { return strings.Replace(s, `"op":"u"`, `"op":"c"`, 1) }, "op sequences differ"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			left := normalise([]event{mustEvent(t, "dbz.public.t", 0, dbzKey, dbzUpdate)}, "dbz")
			right := normalise([]event{mustEvent(t, "sl.public.t", 0, sluiceKey, c.edit(sluiceUpdate))}, "sl")
			report := compareTopics("debezium", left, "sluice", right)
			if !strings.Contains(report, c.wantInDiff) {
				t.Fatalf("report does not name %q:\n%s", c.wantInDiff, report)
			}
		})
	}
}

// The snapshot's positions are compared by rank, a streamed change's as
// they are: a connector that gives a change another LSN or transaction
// than Debezium does, or that places its snapshot reads at more than one
// position, differs.
func TestComparePositions(t *testing.T) {
	type change struct{ op, lsn, tx, seq string }
	mk := func(prefix string, changes ...change) []event {
		var es []event
		for i, c := range changes {
			v := `{"payload":{"op":"` + c.op + `","after":{"id":1},"source":{"name":"` + prefix + `","lsn":` + c.lsn + `,"txId":` + c.tx + `,"sequence":"` + c.seq + `"}}}`
			es = append(es, mustEvent(t, prefix+".public.t", int64(i), `{"payload":{"id":1}}`, v))
		}
		return normalise(es, prefix)
	}
	left := mk("dbz",
		change{"r", "100", "7", `[null,\"100\"]`}, change{"r", "100", "7", `[null,\"100\"]`},
		change{"c", "300", "9", `[null,\"300\"]`}, change{"u", "400", "10", `[\"350\",\"400\"]`})
	if src := source(left[1]); src["lsn"] != "snapshot-lsn#1" || src["txId"] != "snapshot-tx#1" || src["sequence"] != "[null,snapshot-lsn#1]" {
		t.Fatalf("normalised snapshot source: %v", src)
	}
	if src := source(left[3]); src["sequence"] != `["350","400"]` || render(src["lsn"]) != "400" {
		t.Fatalf("normalised streamed source: %v", src)
	}
	same := mk("sl",
		change{"r", "200", "8", `[null,\"200\"]`}, change{"r", "200", "8", `[null,\"200\"]`},
		change{"c", "300", "9", `[null,\"300\"]`}, change{"u", "400", "10", `[\"350\",\"400\"]`})
	if report := compareTopics("debezium", left, "sluice", same); report != "" {
		t.Fatalf("snapshots at other positions, the same streamed positions, compare unequal:\n%s", report)
	}
	for name, c := range map[string]struct {
		changes []change
		field   string
	}{
		"snapshot reads at two positions": {[]change{
			{"r", "200", "8", `[null,\"200\"]`}, {"r", "201", "8", `[null,\"201\"]`},
			{"c", "300", "9", `[null,\"300\"]`}, {"u", "400", "10", `[\"350\",\"400\"]`}}, "value.payload.source.lsn"},
		"another LSN for a change": {[]change{
			{"r", "200", "8", `[null,\"200\"]`}, {"r", "200", "8", `[null,\"200\"]`},
			{"c", "300", "9", `[null,\"300\"]`}, {"u", "390", "10", `[\"350\",\"390\"]`}}, "value.payload.source.lsn"},
		"another transaction for a change": {[]change{
			{"r", "200", "8", `[null,\"200\"]`}, {"r", "200", "8", `[null,\"200\"]`},
			{"c", "300", "9", `[null,\"300\"]`}, {"u", "400", "9", `[\"350\",\"400\"]`}}, "value.payload.source.txId"},
		"another last commit LSN": {[]change{
			{"r", "200", "8", `[null,\"200\"]`}, {"r", "200", "8", `[null,\"200\"]`},
			{"c", "300", "9", `[\"310\",\"300\"]`}, {"u", "400", "10", `[\"350\",\"400\"]`}}, "value.payload.source.sequence"},
		"snapshot LSN as a string": {[]change{
			{"r", `"200"`, "8", `[null,\"200\"]`}, {"r", "200", "8", `[null,\"200\"]`},
			{"c", "300", "9", `[null,\"300\"]`}, {"u", "400", "10", `[\"350\",\"400\"]`}}, "value.payload.source.lsn"},
		"sequence elements as numbers": {[]change{
			{"r", "200", "8", `[null,\"200\"]`}, {"r", "200", "8", `[null,\"200\"]`},
			{"c", "300", "9", `[null,\"300\"]`}, {"u", "400", "10", `[350,400]`}}, "value.payload.source.sequence"},
	} {
		t.Run(name, func(t *testing.T) {
			if report := compareTopics("debezium", left, "sluice", mk("sl", c.changes...)); !strings.Contains(report, c.field) {
				t.Fatalf("not reported as a difference in %s:\n%s", c.field, report)
			}
		})
	}
}

func TestCompareTombstonesAndMissingTopics(t *testing.T) {
	left := normalise([]event{
		mustEvent(t, "dbz.public.t", 0, dbzKey, dbzUpdate),
		mustEvent(t, "dbz.public.t", 1, dbzKey, ""),
		mustEvent(t, "dbz.public.u", 0, dbzKey, dbzUpdate),
	}, "dbz")
	right := normalise([]event{mustEvent(t, "sl.public.t", 0, sluiceKey, sluiceUpdate)}, "sl")
	report := compareTopics("debezium", left, "sluice", right)
	for _, want := range []string{"tombstone {\"id\":1}", "topic public.u: debezium has 1 events, sluice has 0"} {
		if !strings.Contains(report, want) {
			t.Errorf("report does not say %q:\n%s", want, report)
		}
	}
}

func TestRenderCutsLongStrings(t *testing.T) {
	got := render(map[string]any{"s": strings.Repeat("toast-", 2000)})
	if len(got) > 200 || !strings.Contains(got, "(12000 bytes)") {
		t.Fatalf("render of a 12000-byte string: %s", got)
	}
}

func TestCompareHeaders(t *testing.T) {
	withHeaders := func(prefix string, headers ...string) []event {
		e, err := decodeEvent(prefix+".public.t", 0, []byte(`{"payload":{"id":1}}`), []byte(`{"payload":{"op":"c"}}`), headers)
		if err != nil {
			t.Fatal(err)
		}
		return normalise([]event{e}, prefix)
	}
	left := withHeaders("dbz", "__debezium.context.connectorLogicalName=dbz", "__debezium.context.runId=01a234a7-8bf9-74b4-b86b-bd142937aece")
	same := withHeaders("sl", "__debezium.context.connectorLogicalName=sl", "__debezium.context.runId=7d3c0a52-0000-4000-8000-000000000001")
	if report := compareTopics("debezium", left, "sluice", same); report != "" {
		t.Fatalf("headers that differ in prefix and run id compare unequal:\n%s", report)
	}
	for _, other := range [][]string{
		{"__debezium.context.connectorLogicalName=sl"},
		{"__debezium.context.connectorLogicalName=sluice-connector", "__debezium.context.runId=7d3c0a52-0000-4000-8000-000000000001"},
		{"__debezium.context.connectorLogicalName=sl", "__debezium.context.runId=1"},
	} {
		if report := compareTopics("debezium", left, "sluice", withHeaders("sl", other...)); !strings.Contains(report, "headers[") {
			t.Errorf("headers %q compare equal to Debezium's:\n%s", other, report)
		}
	}
}
