package actors

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/strbox"
)

// Records that carry the same string headers share one converted copy;
// anything else is converted afresh, to the same bytes headersToKafka makes.
func TestHeaderMemoSharesOnlyWhatRepeats(t *testing.T) {
	hc := &converters.SimpleHeaderConverter{}
	ctx := func(run string) []connectors.Header {
		return []connectors.Header{
			{Key: "__debezium.context.taskId", Schema: connectors.StringSchema, Value: "0"},
			{Key: "__debezium.context.runId", Schema: connectors.StringSchema, Value: run},
			{Key: "none", Schema: connectors.OptionalStringSchema, Value: nil},
		}
	}
	var m headerMemo
	convert := func(topic string, hs []connectors.Header) []kgo.RecordHeader {
		t.Helper()
		got, err := m.convert(hc, topic, hs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := headersToKafka(hc, topic, hs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b kgo.RecordHeader) bool { return a.Key == b.Key && string(a.Value) == string(b.Value) }) {
			t.Fatalf("memo gave %v, the converter %v", got, want)
		}
		return got
	}
	first := convert("t", ctx("a"))
	if again := convert("t", ctx("a")); &again[0] != &first[0] {
		t.Error("the same headers were converted again")
	}
	if other := convert("t", ctx("b")); &other[0] == &first[0] {
		t.Error("a header with another value got the memo's copy")
	}
	if otherTopic := convert("u", ctx("b")); &otherTopic[0] == &first[0] {
		t.Error("another topic got the memo's copy")
	}
	bytesHeader := []connectors.Header{{Key: "b", Schema: connectors.BytesSchema, Value: []byte("x")}}
	one := convert("t", bytesHeader)
	if two := convert("t", bytesHeader); &two[0] == &one[0] {
		t.Error("a bytes header was shared: only strings and nulls compare surely")
	}
	if got, err := m.convert(hc, "t", nil); got != nil || err != nil {
		t.Errorf("no headers gave %v, %v", got, err)
	}
	// A null and an empty string are not the same header.
	empty := ctx("b")
	empty[2].Value = ""
	nulls := convert("t", ctx("b"))
	if e := convert("t", empty); &e[0] == &nulls[0] {
		t.Error("an empty string header got the copy of a null one")
	}
	// A value boxed in place (strbox) in memory its task writes over
	// (connectors.RecordLender): the memo compares with the string it was
	// converted from, not with what the box reads now.
	run := "a"
	boxed := []connectors.Header{{Key: "run", Schema: connectors.StringSchema, Value: strbox.Of(&run)}}
	before := convert("t", boxed)
	run = "b"
	if after := convert("t", boxed); &after[0] == &before[0] {
		t.Error("a header boxed in place got the copy made of its earlier value")
	}
}

// Records with the same string key share one converted copy; another key,
// schema or topic, or a key that is not a string, is converted afresh, to
// the bytes the converter makes.
func TestKeyMemoSharesOnlyWhatRepeats(t *testing.T) {
	kc := &converters.JSONConverter{}
	if err := kc.Configure(map[string]string{"schemas.enable": "true"}, true); err != nil {
		t.Fatal(err)
	}
	var m keyMemo
	convert := func(topic string, schema *connectors.Schema, key any) []byte {
		t.Helper()
		rec := &connectors.SourceRecord{Topic: topic, KeySchema: schema, Key: key}
		got, err := m.convert(kc, rec)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kc.FromConnect(topic, schema, key)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("memo gave %s, the converter %s", got, want)
		}
		return got
	}
	same := func(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }
	first := convert("t", connectors.StringSchema, "device-1")
	if again := convert("t", connectors.StringSchema, "device-1"); !same(again, first) {
		t.Error("the same key was converted again")
	}
	if other := convert("t", connectors.StringSchema, "device-2"); same(other, first) {
		t.Error("another key got the memo's copy")
	}
	base := convert("t", connectors.StringSchema, "device-2")
	if optional := convert("t", connectors.OptionalStringSchema, "device-2"); same(optional, base) {
		t.Error("a key with another schema got the memo's copy")
	}
	if otherTopic := convert("u", connectors.OptionalStringSchema, "device-2"); same(otherTopic, base) {
		t.Error("another topic got the memo's copy")
	}
	n1 := convert("t", connectors.Int64Schema, int64(1))
	if n2 := convert("t", connectors.Int64Schema, int64(1)); same(n1, n2) {
		t.Error("a number key was shared: only strings are memoised")
	}
	// A failed conversion is not remembered.
	if _, err := m.convert(kc, &connectors.SourceRecord{Topic: "t", KeySchema: connectors.Int64Schema, Key: "x"}); err == nil {
		t.Fatal("a string under an int64 schema converted")
	}
	if _, err := m.convert(kc, &connectors.SourceRecord{Topic: "t", KeySchema: connectors.Int64Schema, Key: "x"}); err == nil {
		t.Fatal("the memo answered for a key that failed to convert")
	}
}
