package transforms_test

// The differential test: every case of testdata/cases.json runs through
// Sluice's transforms and predicates, and what comes out must be what
// Apache Kafka Connect 4.1.1's own classes produced for the same case
// (testdata/expected.json, written by test/transforms/run.sh; see
// test/transforms/README.md). Nothing here needs Java.
//
// One transform's cases: go test ./connectors/transforms/ -run 'TestDifferential/Cast'

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/connectors/transforms"
	"github.com/sluice-io/sluice/internal/transform"
)

// diffCase is one element of cases.json.
type diffCase struct {
	Name              string            `json:"name"`
	Kind              string            `json:"kind"`
	ExpectConfigError bool              `json:"expect_config_error"`
	Converter         map[string]string `json:"converter"`
	Config            map[string]string `json:"config"`
	Record            caseRecord        `json:"record"`
}

type caseRecord struct {
	Topic     string          `json:"topic"`
	Partition *int32          `json:"partition"`
	Offset    *int64          `json:"offset"`
	Timestamp *int64          `json:"timestamp"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Headers   []caseHeader    `json:"headers"`
}

type caseHeader struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// diffResult is one element of expected.json: exactly one of Record,
// Dropped, Error and ConfigError is set.
type diffResult struct {
	Name        string          `json:"name"`
	Record      json.RawMessage `json:"record"`
	Dropped     bool            `json:"dropped"`
	Error       string          `json:"error"`
	ConfigError string          `json:"config_error"`
}

// outputConversion prefixes Connect's error when the transforms succeeded
// but JsonConverter refused what they produced.
const outputConversion = "converting the output: "

const (
	transformsPkg = "org.apache.kafka.connect.transforms."
	predicatesPkg = "org.apache.kafka.connect.transforms.predicates."
)

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
}

func TestDifferential(t *testing.T) {
	var cases []diffCase
	var results []diffResult
	readJSON(t, "cases.json", &cases)
	readJSON(t, "expected.json", &results)

	byName := map[string]diffResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("cases.json: two cases are named %q", c.Name)
		}
		seen[c.Name] = true
	}
	var stale []string
	for _, r := range results {
		if !seen[r.Name] {
			stale = append(stale, r.Name)
		}
	}
	if len(stale) > 0 {
		t.Errorf("expected.json has results for cases that cases.json lacks (regenerate it: just transforms-golden): %q", stale)
	}

	reg := connectors.NewRegistry()
	if err := transforms.Register(reg); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := byName[c.Name]
			if !ok {
				t.Fatalf("expected.json has no result for this case: regenerate it (just transforms-golden)")
			}
			if reason, known := knownDifferences[c.Name]; known {
				// The case must still differ: once Sluice matches Connect,
				// the entry goes.
				if differs := caseDiffers(reg, c, want); differs == "" {
					t.Fatalf("listed as a known difference (%s), but Sluice now matches Connect: remove it from knownDifferences", reason)
				} else {
					t.Logf("known difference: %s\n  %s", reason, differs)
				}
				return
			}
			runCase(t, reg, c, want)
		})
	}
}

// knownDifferences are the cases where Sluice deliberately differs from
// Apache Kafka Connect, each with the reason (README.md lists them too).
var knownDifferences = map[string]string{
	"ReplaceField$Value/deprecated whitelist is ignored in 4.1": "whitelist and blacklist were removed in Kafka 4.0 and " +
		"Connect 4.1 ignores them, keeping every field; Sluice refuses them by name, so that a config carried over " +
		"from an older Connect does not silently stop filtering",
	"ReplaceField$Value/deprecated blacklist is ignored in 4.1": "as the whitelist case",
	"MaskField$Value/struct Decimal of scale 2": "a Go decimal (*big.Rat) carries no scale, so a Decimal masked to zero " +
		"converts under the schema's scale; Connect's BigDecimal.ZERO has scale 0, which its JsonConverter refuses for a " +
		"schema of scale 2, failing every such record",
}

// fataler is what runCase needs of a *testing.T, so that a known
// difference can be run without failing the test.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// recorder is a fataler that keeps the first failure and stops the case.
type recorder struct{ msg string }

type stopCase struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(stopCase{})
}

// caseDiffers runs a case and returns how Sluice differs from Connect on
// it, or "" when it matches.
func caseDiffers(reg *connectors.Registry, c diffCase, want diffResult) (msg string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopCase); !ok {
				panic(p)
			}
			msg = r.msg
		}
	}()
	runCase(r, reg, c, want)
	return ""
}

// requireRegistered fails the case when it names one of Connect's
// transforms or predicates that Sluice has not registered: such a case
// must fail, not pass because Sluice refuses its config.
func requireRegistered(t fataler, reg *connectors.Registry, config map[string]string) {
	t.Helper()
	var missing []string
	for _, a := range connectors.SplitList(config["transforms"]) {
		class := strings.TrimSpace(config["transforms."+a+".type"])
		if strings.HasPrefix(class, transformsPkg) && !strings.HasPrefix(class, predicatesPkg) {
			if _, err := reg.LookupTransform(class); err != nil {
				missing = append(missing, "transform "+class)
			}
		}
	}
	for _, p := range connectors.SplitList(config["predicates"]) {
		class := strings.TrimSpace(config["predicates."+p+".type"])
		if strings.HasPrefix(class, predicatesPkg) {
			if _, err := reg.LookupPredicate(class); err != nil {
				missing = append(missing, "predicate "+class)
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("not registered in Sluice (transforms.Register): %s", strings.Join(missing, ", "))
	}
}

func runCase(t fataler, reg *connectors.Registry, c diffCase, want diffResult) {
	requireRegistered(t, reg, c.Config)
	if c.Kind != "source" && c.Kind != "sink" {
		t.Fatalf("kind must be source or sink, not %q", c.Kind)
	}

	chain, err := transform.Build(reg, c.Config)
	if want.ConfigError != "" {
		if err == nil {
			_ = chain.Close()
			t.Fatalf("Connect refuses this config, Sluice accepts it\n  Connect: %s", want.ConfigError)
		}
		return
	}
	if err != nil {
		t.Fatalf("Sluice refuses this config, Connect accepts it\n  Sluice: %v", err)
	}
	defer func() { _ = chain.Close() }()

	keyConv, valueConv, headerConv := caseConverters(t, c.Converter)
	in := inputRecord(t, c, keyConv, valueConv, headerConv)

	out, applyErr := chain.Apply(in)
	wantApplyErr := want.Error != "" && !strings.HasPrefix(want.Error, outputConversion)
	switch {
	case wantApplyErr && applyErr != nil:
		return
	case wantApplyErr:
		t.Fatalf("Connect's transform fails, Sluice's does not\n  Connect: %s\n  Sluice's output: %s", want.Error, describe(out, keyConv, valueConv, headerConv))
	case applyErr != nil && want.Error != "":
		t.Fatalf("Connect's transforms succeed and JsonConverter refuses their output; Sluice's transform fails\n  Connect: %s\n  Sluice: %v", want.Error, applyErr)
	case applyErr != nil && want.Dropped:
		t.Fatalf("Connect drops the record, Sluice fails\n  Sluice: %v", applyErr)
	case applyErr != nil:
		t.Fatalf("Connect transforms the record, Sluice fails\n  Sluice: %v\n  Connect's output: %s", applyErr, compact(want.Record))
	}
	if out == nil {
		if !want.Dropped {
			t.Fatalf("Sluice drops the record, Connect does not\n  Connect: %s", wantText(want))
		}
		return
	}
	if want.Dropped {
		t.Fatalf("Connect drops the record, Sluice does not\n  Sluice's output: %s", describe(out, keyConv, valueConv, headerConv))
	}

	got, convErr := outputRecord(out, keyConv, valueConv, headerConv)
	if want.Error != "" { // an output conversion error
		if convErr == nil {
			t.Fatalf("Connect's JsonConverter refuses the transformed record, Sluice's accepts it\n  Connect: %s\n  Sluice's output: %s", want.Error, got)
		}
		return
	}
	if convErr != nil {
		t.Fatalf("Sluice's JSONConverter refuses the transformed record, Connect's accepts it\n  Sluice: %v\n  Connect's output: %s", convErr, compact(want.Record))
	}
	gotV, err := parseJSON(got)
	if err != nil {
		t.Fatalf("Sluice's output is not JSON: %v\n%s", err, got)
	}
	wantV, err := parseJSON(want.Record)
	if err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	if path, ok := jsonEqual(wantV, gotV, "record"); !ok {
		t.Fatalf("records differ at %s\n  Connect: %s\n  Sluice:  %s", path, compact(want.Record), compact(got))
	}
}

// caseConverters are JsonConverters configured as the harness configures
// Connect's: schemas.enable=true plus the case's converter keys.
func caseConverters(t fataler, extra map[string]string) (key, value, header *converters.JSONConverter) {
	t.Helper()
	props := map[string]string{}
	for k, v := range extra {
		props[k] = v
	}
	props["schemas.enable"] = "true"
	key, value, header = converters.NewJSONConverter(), converters.NewJSONConverter(), converters.NewJSONConverter()
	for _, x := range []struct {
		c     *converters.JSONConverter
		isKey bool
	}{{key, true}, {value, false}, {header, false}} {
		if err := x.c.Configure(props, x.isKey); err != nil {
			t.Fatalf("converter config: %v", err)
		}
	}
	return key, value, header
}

// envelopeBytes is what a converter reads for an envelope: nil (a
// tombstone) for JSON null.
func envelopeBytes(raw json.RawMessage) []byte {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

func inputRecord(t fataler, c diffCase, keyConv, valueConv, headerConv *converters.JSONConverter) *connectors.Record {
	t.Helper()
	cr := c.Record
	r := &connectors.Record{Topic: cr.Topic, KafkaPartition: cr.Partition}
	var err error
	if r.KeySchema, r.Key, err = keyConv.ToConnect(cr.Topic, envelopeBytes(cr.Key)); err != nil {
		t.Fatalf("Sluice's JSONConverter refuses the case's key, Connect's reads it: %v", err)
	}
	if r.ValueSchema, r.Value, err = valueConv.ToConnect(cr.Topic, envelopeBytes(cr.Value)); err != nil {
		t.Fatalf("Sluice's JSONConverter refuses the case's value, Connect's reads it: %v", err)
	}
	for _, h := range cr.Headers {
		s, v, err := headerConv.ToConnect(cr.Topic, envelopeBytes(h.Value))
		if err != nil {
			t.Fatalf("Sluice's JSONConverter refuses the case's header %q, Connect's reads it: %v", h.Key, err)
		}
		r.Headers = append(r.Headers, connectors.Header{Key: h.Key, Schema: s, Value: v})
	}
	if cr.Timestamp != nil {
		r.Timestamp = time.UnixMilli(*cr.Timestamp).UTC()
	}
	if c.Kind == "sink" {
		if cr.Offset == nil {
			t.Fatalf("a sink case needs record.offset")
		}
		off := *cr.Offset
		r.SinkOffset = &off
	}
	return r
}

// outputRecord renders r as the harness renders Connect's records.
func outputRecord(r *connectors.Record, keyConv, valueConv, headerConv *converters.JSONConverter) (json.RawMessage, error) {
	envelope := func(c *converters.JSONConverter, s *connectors.Schema, v any) (json.RawMessage, error) {
		b, err := c.FromConnect(r.Topic, s, v)
		if err != nil {
			return nil, err
		}
		if b == nil {
			return json.RawMessage("null"), nil
		}
		return b, nil
	}
	key, err := envelope(keyConv, r.KeySchema, r.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	value, err := envelope(valueConv, r.ValueSchema, r.Value)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	type header struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	headers := []header{}
	for _, h := range r.Headers {
		v, err := envelope(headerConv, h.Schema, h.Value)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", h.Key, err)
		}
		headers = append(headers, header{h.Key, v})
	}
	out := struct {
		Topic     string          `json:"topic"`
		Partition *int32          `json:"partition"`
		Offset    *int64          `json:"offset,omitempty"`
		Timestamp *int64          `json:"timestamp"`
		Key       json.RawMessage `json:"key"`
		Value     json.RawMessage `json:"value"`
		Headers   []header        `json:"headers"`
	}{Topic: r.Topic, Partition: r.KafkaPartition, Offset: r.SinkOffset, Key: key, Value: value, Headers: headers}
	if !r.Timestamp.IsZero() {
		ms := r.Timestamp.UnixMilli()
		out.Timestamp = &ms
	}
	return json.Marshal(out)
}

// describe renders a record for a failure message.
func describe(r *connectors.Record, keyConv, valueConv, headerConv *converters.JSONConverter) string {
	if r == nil {
		return "(dropped)"
	}
	b, err := outputRecord(r, keyConv, valueConv, headerConv)
	if err != nil {
		return fmt.Sprintf("(not convertible: %v)", err)
	}
	return string(b)
}

func wantText(w diffResult) string {
	switch {
	case w.Error != "":
		return "error " + w.Error
	case w.Dropped:
		return "(dropped)"
	}
	return string(compact(w.Record))
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

func parseJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonEqual compares two parsed JSON values, numbers by value: an integer
// literal (Connect's int8..int64) equals only an integer literal of the
// same value, and a literal with a fraction or exponent (float, double)
// only such a literal of the same float64 value, so that 1 and 1.0 differ
// as Long and Double do. It returns the path of the first difference.
func jsonEqual(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, dup := w[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, inW := w[k]
			gv, inG := g[k]
			if inW != inG {
				return path + "." + k, false
			}
			if p, ok := jsonEqual(wv, gv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := jsonEqual(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !numberEqual(w, g) {
			return path, false
		}
		return "", true
	default: // string, bool, nil
		if want != got {
			return path, false
		}
		return "", true
	}
}

func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	isFloat := func(n json.Number) bool { return strings.ContainsAny(string(n), ".eE") }
	if isFloat(a) != isFloat(b) {
		return false
	}
	if !isFloat(a) {
		x, ok1 := new(big.Int).SetString(string(a), 10)
		y, ok2 := new(big.Int).SetString(string(b), 10)
		return ok1 && ok2 && x.Cmp(y) == 0
	}
	x, err1 := strconv.ParseFloat(string(a), 64)
	y, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && x == y
}
