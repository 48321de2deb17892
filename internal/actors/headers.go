package actors

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// headersToKafka turns a source record's headers into the bytes the
// connector's header.converter makes of them, in order.
func headersToKafka(hc converters.HeaderConverter, topic string, hs []connectors.Header) ([]kgo.RecordHeader, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		b, err := hc.FromConnectHeader(topic, h.Key, h.Schema, h.Value)
		if err != nil {
			return nil, fmt.Errorf("convert header %q for topic %q: %w", h.Key, topic, err)
		}
		out[i] = kgo.RecordHeader{Key: h.Key, Value: b}
	}
	return out, nil
}

// headerMemo is the last converted headers of a pipeline with what they
// were converted from. A source that puts the same headers on every record
// (Debezium's context headers) then shares one converted copy among its
// records, instead of a copy of its own in each record held until Kafka
// acknowledges it. Converters are deterministic, and nothing changes a
// record's headers once converted (franz-go only reads them), so records
// may share them.
//
// The memo keeps its own copy of the strings it compares, not the
// headers' interface values: a task may box a string in place (strbox) in
// memory it writes over at its next Poll (connectors.RecordLender), and a
// kept interface value would then read the new string and match headers it
// was not converted from (TestLentRecordsArriveAsPolledThoughWrittenOver).
type headerMemo struct {
	topic string
	from  []memoHeader
	to    []kgo.RecordHeader
}

// memoHeader is a header the memo holds: its value a string, or null.
type memoHeader struct {
	key    string
	schema *connectors.Schema
	value  string
	null   bool
}

// convert is headersToKafka, answered from the memo when hs are the
// headers it holds for topic.
func (m *headerMemo) convert(hc converters.HeaderConverter, topic string, hs []connectors.Header) ([]kgo.RecordHeader, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	if m.to != nil && topic == m.topic && m.holds(hs) {
		return m.to, nil
	}
	out, err := headersToKafka(hc, topic, hs)
	if err != nil {
		return nil, err
	}
	m.remember(topic, hs, out)
	return out, nil
}

// holds says hs have the memo's keys and schemas and its values, all
// strings or nulls; other values (bytes, structs) never match, so that
// only what compares cheaply and surely is shared.
func (m *headerMemo) holds(hs []connectors.Header) bool {
	if len(hs) != len(m.from) {
		return false
	}
	for i, h := range hs {
		f := &m.from[i]
		if h.Key != f.key || h.Schema != f.schema {
			return false
		}
		switch v := h.Value.(type) {
		case nil:
			if !f.null {
				return false
			}
		case string:
			if f.null || v != f.value {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// remember keeps hs, converted to out, when every value is a string or
// null; otherwise the memo holds nothing.
func (m *headerMemo) remember(topic string, hs []connectors.Header, out []kgo.RecordHeader) {
	m.to, m.from = nil, m.from[:0]
	for _, h := range hs {
		mh := memoHeader{key: h.Key, schema: h.Schema}
		switch v := h.Value.(type) {
		case nil:
			mh.null = true
		case string:
			mh.value = v // the string itself, not the interface value holding it
		default:
			m.from = m.from[:0]
			return
		}
		m.from = append(m.from, mh)
	}
	m.topic, m.to = topic, out
}

// headersFromKafka reads a consumed record's headers with the connector's
// header.converter, in order.
func headersFromKafka(hc converters.HeaderConverter, r *kgo.Record) ([]connectors.Header, error) {
	if len(r.Headers) == 0 {
		return nil, nil
	}
	out := make([]connectors.Header, len(r.Headers))
	for i, h := range r.Headers {
		s, v, err := hc.ToConnectHeader(r.Topic, h.Key, h.Value)
		if err != nil {
			return nil, fmt.Errorf("convert header %q of %s-%d@%d: %w", h.Key, r.Topic, r.Partition, r.Offset, err)
		}
		out[i] = connectors.Header{Key: h.Key, Schema: s, Value: v}
	}
	return out, nil
}

// keyMemo is the last string key a pipeline converted, with what it was
// converted for and into. A source that gives many records one key (a
// task's name, a device id, a tenant) then shares one converted copy among
// them, as headerMemo does for headers: converters are deterministic and
// nothing changes a record's key bytes once converted. Only string keys
// are memoised: they compare cheaply and surely, and a miss costs one
// comparison that usually ends at the first bytes.
type keyMemo struct {
	topic  string
	schema *connectors.Schema
	key    string
	bytes  []byte
	held   bool
}

// convert is kc.FromConnect of rec's key, answered from the memo when the
// key is the string it holds, with the same schema and topic.
func (m *keyMemo) convert(kc converters.Converter, rec *connectors.SourceRecord) ([]byte, error) {
	s, isString := rec.Key.(string)
	if !isString {
		// A null key (most file and log sources) or another type: nothing
		// to remember, and the memo is left alone unless it holds
		// something, so that a run of null keys writes nothing.
		if m.held {
			*m = keyMemo{}
		}
		return kc.FromConnect(rec.Topic, rec.KeySchema, rec.Key)
	}
	if m.held && s == m.key && rec.KeySchema == m.schema && rec.Topic == m.topic {
		return m.bytes, nil
	}
	b, err := kc.FromConnect(rec.Topic, rec.KeySchema, rec.Key)
	if err != nil {
		*m = keyMemo{}
		return nil, err
	}
	*m = keyMemo{topic: rec.Topic, schema: rec.KeySchema, key: s, bytes: b, held: true}
	return b, nil
}
