package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file reads, normalises and compares the change events of two CDC
// connectors. It has no build tag: its unit test (events_unit_test.go)
// runs in the hermetic suite, so that a comparison that stopped seeing
// differences fails there and not only in the Debezium step.

// event is one record of a CDC topic as the JSON converter (with its schema
// envelope) wrote it.
type event struct {
	Topic  string
	Offset int64
	// Key and Value are the decoded JSON ({"schema":..., "payload":...});
	// nil for a record without a key, and a nil Value is a tombstone.
	Key   any
	Value any
	// Headers are the record's headers, in order, as "name=value".
	Headers []string
}

// decodeEvent decodes one record. Numbers stay json.Number: a 64-bit id or
// a decimal must not go through float64 before it is compared.
func decodeEvent(topic string, offset int64, key, value []byte, headers []string) (event, error) {
	e := event{Topic: topic, Offset: offset, Headers: headers}
	var err error
	if e.Key, err = decodeJSON(key); err != nil {
		return e, fmt.Errorf("%s@%d: key: %v", topic, offset, err)
	}
	if e.Value, err = decodeJSON(value); err != nil {
		return e, fmt.Errorf("%s@%d: value: %v", topic, offset, err)
	}
	return e, nil
}

func decodeJSON(b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Placeholders that normalisation puts where two correct connectors
// legitimately differ.
const (
	prefixMark = "<prefix>"
	timingMark = "<timing>"
)

// normalise rewrites one connector's events so that they compare equal to
// another connector's on the same workload when, and only when, they
// differ just where they must:
//   - the topic prefix: topics lose "<prefix>.", and every string that is
//     the prefix or starts with "<prefix>." (schema names, source.name)
//     gets prefixMark instead;
//   - timings: ts_ms, ts_us and ts_ns of the envelope and of source become
//     timingMark when they hold a number (null stays null);
//   - headers: the prefix in values, the run id (normaliseHeader);
//   - the positions of the snapshot: the LSNs (source.lsn, the elements of
//     source.sequence) and transaction ids (source.txId, source.xmin) of
//     the snapshot's reads (op r) become their rank among this connector's
//     snapshot values ("snapshot-lsn#1", "snapshot-tx#1"), wherever they
//     appear. Each connector's slot is created at its own moment, so its
//     snapshot has its own position; which reads share one must still be
//     the same.
//
// The positions of streamed changes stay as they are: both slots decode
// the same WAL, so a change's LSN and transaction id are the same numbers
// on both sides (the Debezium control run shows they are).
func normalise(events []event, prefix string) []event {
	lsns, txs := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		src := source(e)
		if src == nil || payloadOf(e.Value)["op"] != "r" {
			continue
		}
		addNumber(lsns, src["lsn"])
		for _, s := range sequence(src["sequence"]) {
			addNumber(lsns, s)
		}
		addNumber(txs, src["txId"])
		addNumber(txs, src["xmin"])
	}
	lsnRank, txRank := ranks(lsns, "snapshot-lsn#"), ranks(txs, "snapshot-tx#")

	out := make([]event, len(events))
	for i, e := range events {
		n := e
		n.Topic = strings.TrimPrefix(e.Topic, prefix+".")
		n.Key = replacePrefix(e.Key, prefix)
		n.Value = replacePrefix(e.Value, prefix)
		n.Headers = make([]string, len(e.Headers))
		for j, h := range e.Headers {
			n.Headers[j] = normaliseHeader(h, prefix)
		}
		if payload := payloadOf(n.Value); payload != nil {
			markTimings(payload)
			if src, ok := payload["source"].(map[string]any); ok {
				markTimings(src)
				rankField(src, "lsn", lsnRank)
				rankField(src, "txId", txRank)
				rankField(src, "xmin", txRank)
				// A sequence with no snapshot position in it stays the
				// string it is, compared byte for byte.
				if seq := sequence(src["sequence"]); seq != nil {
					ranked, changed := make([]string, len(seq)), false
					for j, s := range seq {
						ranked[j] = rankOf(s, lsnRank)
						if n, ok := numberText(s); ok && lsnRank[n] != "" {
							changed = true
						}
					}
					if changed {
						src["sequence"] = "[" + strings.Join(ranked, ",") + "]"
					}
				}
			}
		}
		out[i] = n
	}
	return out
}

// runIDHeader is the header in which Debezium (extended.headers.enabled,
// on by default) names the run of the task: a random UUID each start.
const runIDHeader = "__debezium.context.runId"

// normaliseHeader is a "name=value" header with prefixMark for the prefix
// in its value (__debezium.context.connectorLogicalName holds it) and
// "<run id>" for a UUID in the run id header.
func normaliseHeader(h, prefix string) string {
	name, value, _ := strings.Cut(h, "=")
	if name == runIDHeader && uuidShape.MatchString(value) {
		return name + "=<run id>"
	}
	if v, ok := replacePrefix(value, prefix).(string); ok {
		value = v
	}
	return name + "=" + value
}

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// replacePrefix returns a copy of v with prefixMark for the prefix in
// every string that is the prefix or starts with "<prefix>.".
func replacePrefix(v any, prefix string) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = replacePrefix(x, prefix)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = replacePrefix(x, prefix)
		}
		return s
	case string:
		if v == prefix {
			return prefixMark
		}
		if strings.HasPrefix(v, prefix+".") {
			return prefixMark + v[len(prefix):]
		}
	}
	return v
}

// payloadOf is the "payload" object of a decoded envelope, or nil.
func payloadOf(v any) map[string]any {
	env, _ := v.(map[string]any)
	p, _ := env["payload"].(map[string]any)
	return p
}

// source is an event's payload.source, or nil.
func source(e event) map[string]any {
	src, _ := payloadOf(e.Value)["source"].(map[string]any)
	return src
}

func markTimings(m map[string]any) {
	for _, k := range []string{"ts_ms", "ts_us", "ts_ns"} {
		if _, ok := m[k].(json.Number); ok {
			m[k] = timingMark
		}
	}
}

// sequence splits Debezium's source.sequence, a string holding a JSON
// array of LSNs as strings or nulls (["24023928","24023976"]). Another
// shape is returned as nil and compared as it is.
func sequence(v any) []any {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	var parts []any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if d.Decode(&parts) != nil {
		return nil
	}
	return parts
}

// addNumber records v in set when it is a number or a string of digits.
func addNumber(set map[string]bool, v any) {
	if s, ok := numberText(v); ok {
		set[s] = true
	}
}

func numberText(v any) (string, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return "", false
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return "", false
	}
	return s, true
}

// ranks numbers the values of set from 1 in ascending numeric order.
func ranks(set map[string]bool, label string) map[string]string {
	vals := make([]uint64, 0, len(set))
	for s := range set {
		n, _ := strconv.ParseUint(s, 10, 64)
		vals = append(vals, n)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	out := make(map[string]string, len(vals))
	for i, n := range vals {
		out[strconv.FormatUint(n, 10)] = label + strconv.Itoa(i+1)
	}
	return out
}

// rankField replaces m[k] with its rank when it has one.
func rankField(m map[string]any, k string, rank map[string]string) {
	// Only a JSON number: a position written as a string is a difference
	// the comparison must still see.
	if n, ok := m[k].(json.Number); ok && rank[n.String()] != "" {
		m[k] = rank[n.String()]
	}
}

// rankOf is v's rank when it has one, else v as JSON.
func rankOf(v any, rank map[string]string) string {
	if n, ok := numberText(v); ok && rank[n] != "" {
		return rank[n]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fieldDiff is one place where two events differ.
type fieldDiff struct {
	Path       string // key.payload.id, value.payload.after.num, headers[0]
	Left       string // rendered value; "(absent)" where the field is missing
	Right      string
	Generalise string // Path without array indices, to count alike differences
}

const absent = "(absent)"

// diffEvents lists where a and b (normalised) differ: key, value and
// headers. Numbers are equal when they are the same number, however
// written (1.0 and 1, 1E+1 and 10).
func diffEvents(a, b event) []fieldDiff {
	var out []fieldDiff
	diffValues("key", a.Key, b.Key, &out)
	diffValues("value", a.Value, b.Value, &out)
	ha, hb := make([]any, len(a.Headers)), make([]any, len(b.Headers))
	for i, h := range a.Headers {
		ha[i] = h
	}
	for i, h := range b.Headers {
		hb[i] = h
	}
	diffValues("headers", ha, hb, &out)
	return out
}

func diffValues(path string, a, b any, out *[]fieldDiff) {
	add := func(l, r string) {
		*out = append(*out, fieldDiff{Path: path, Left: l, Right: r, Generalise: stripIndices(path)})
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			add(render(a), render(b))
			return
		}
		// a's fields, then the fields only b has, each sorted.
		var onlyB []string
		for k := range bv {
			if _, inA := av[k]; !inA {
				onlyB = append(onlyB, k)
			}
		}
		slices.Sort(onlyB)
		for _, k := range append(slices.Sorted(maps.Keys(av)), onlyB...) {
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				*out = append(*out, fieldDiff{Path: path + "." + k, Left: absent, Right: render(y), Generalise: stripIndices(path + "." + k)})
			case !inB:
				*out = append(*out, fieldDiff{Path: path + "." + k, Left: render(x), Right: absent, Generalise: stripIndices(path + "." + k)})
			default:
				diffValues(path+"."+k, x, y, out)
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			add(render(a), render(b))
			return
		}
		for i := 0; i < len(av) || i < len(bv); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(av):
				*out = append(*out, fieldDiff{Path: p, Left: absent, Right: render(bv[i]), Generalise: stripIndices(p)})
			case i >= len(bv):
				*out = append(*out, fieldDiff{Path: p, Left: render(av[i]), Right: absent, Generalise: stripIndices(p)})
			default:
				diffValues(p, av[i], bv[i], out)
			}
		}
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok || !sameNumber(av, bv) {
			add(render(a), render(b))
		}
	default:
		// string, bool, nil
		if a != b {
			add(render(a), render(b))
		}
	}
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, okX := new(big.Rat).SetString(a.String())
	y, okY := new(big.Rat).SetString(b.String())
	return okX && okY && x.Cmp(y) == 0
}

// stripIndices turns "a[3].b[0]" into "a[].b[]".
func stripIndices(p string) string {
	var b strings.Builder
	skip := false
	for _, r := range p {
		switch {
		case r == '[':
			skip = true
			b.WriteRune(r)
		case r == ']':
			skip = false
			b.WriteRune(r)
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// render is a value as compact JSON, long strings cut (a TOASTed value is
// kilobytes long, and a diff of it needs its start and its length).
func render(v any) string {
	b, err := json.Marshal(shorten(v))
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

const shortenAt = 80

func shorten(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = shorten(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = shorten(x)
		}
		return s
	case string:
		if len(v) > shortenAt {
			return fmt.Sprintf("%s...(%d bytes)", v[:shortenAt], len(v))
		}
	}
	return v
}

// summary is an event in a few words: its op (or "tombstone") and its key
// payload, e.g. `u {"id":1}`, to list and compare op sequences.
func summary(e event) string {
	key := "null"
	if env, ok := e.Key.(map[string]any); ok {
		key = render(env["payload"])
	}
	if e.Value == nil {
		return "tombstone " + key
	}
	op, _ := payloadOf(e.Value)["op"].(string)
	if op == "" {
		op = "(no op)"
	}
	return op + " " + key
}

// byTopic groups events by topic, each topic's in offset order.
func byTopic(events []event) map[string][]event {
	m := map[string][]event{}
	for _, e := range events {
		m[e.Topic] = append(m[e.Topic], e)
	}
	for _, es := range m {
		sort.Slice(es, func(i, j int) bool { return es[i].Offset < es[j].Offset })
	}
	return m
}

// compareTopics compares two connectors' normalised events topic by topic
// and returns a readable report of every difference, empty when there is
// none: topics only one side has, op sequences that differ, and for each
// topic the first differing event in full (both sides, every differing
// field), then how many events differ in each field across all topics.
func compareTopics(leftName string, left []event, rightName string, right []event) string {
	lt, rt := byTopic(left), byTopic(right)
	topics := map[string]bool{}
	for t := range lt {
		topics[t] = true
	}
	for t := range rt {
		topics[t] = true
	}
	var r strings.Builder
	fieldCounts := map[string]int{}
	fieldExample := map[string]fieldDiff{}
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		a, b := lt[topic], rt[topic]
		if len(a) == 0 || len(b) == 0 {
			fmt.Fprintf(&r, "topic %s: %s has %d events, %s has %d\n", topic, leftName, len(a), rightName, len(b))
			continue
		}
		sa, sb := summaries(a), summaries(b)
		if strings.Join(sa, "|") != strings.Join(sb, "|") {
			fmt.Fprintf(&r, "topic %s: the op sequences differ\n  %-8s %s\n  %-8s %s\n", topic, leftName, strings.Join(sa, ", "), rightName, strings.Join(sb, ", "))
		}
		first := true
		for i := 0; i < len(a) && i < len(b); i++ {
			diffs := diffEvents(a[i], b[i])
			if len(diffs) == 0 {
				continue
			}
			counted := map[string]bool{} // a field counts once an event
			for _, d := range diffs {
				if fieldCounts[d.Generalise] == 0 {
					fieldExample[d.Generalise] = d
				}
				if !counted[d.Generalise] {
					counted[d.Generalise] = true
					fieldCounts[d.Generalise]++
				}
			}
			if !first {
				continue
			}
			first = false
			fmt.Fprintf(&r, "topic %s: first differing event, #%d (%s offset %d: %s; %s offset %d: %s):\n",
				topic, i, leftName, a[i].Offset, sa[i], rightName, b[i].Offset, sb[i])
			for _, d := range diffs {
				fmt.Fprintf(&r, "  %s\n    %-8s %s\n    %-8s %s\n", d.Path, leftName, d.Left, rightName, d.Right)
			}
			fmt.Fprintf(&r, "  %s's event: %s\n  %s's event: %s\n", leftName, renderEvent(a[i]), rightName, renderEvent(b[i]))
		}
	}
	if len(fieldCounts) > 0 {
		fmt.Fprintf(&r, "differing fields, with the number of events (all topics) and a first example:\n")
		for _, k := range slices.Sorted(maps.Keys(fieldCounts)) {
			ex := fieldExample[k]
			fmt.Fprintf(&r, "  %-60s %4d  (%s %s, %s %s)\n", k, fieldCounts[k], leftName, ex.Left, rightName, ex.Right)
		}
	}
	return r.String()
}

func summaries(es []event) []string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = summary(e)
	}
	return s
}

// renderEvent is an event as one line of JSON, long strings cut.
func renderEvent(e event) string {
	return render(map[string]any{"key": e.Key, "value": e.Value, "headers": e.Headers})
}
