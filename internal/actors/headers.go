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
