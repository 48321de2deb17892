package actors

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
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
}
