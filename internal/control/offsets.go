package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
)

// OffsetsBackend reads and changes connectors' offsets in Kafka
// (*offsets.ConnectorOffsets): a source connector's in the offsets topic, a
// sink connector's in its consumer group connect-<name>. The Controller
// checks the request (the connector exists, is stopped, the offsets are well
// formed) before it calls a method that changes anything.
//
// Sink errors wrapping offsets.ErrGroupNotEmpty mean the consumer group
// still has members; offsets.ErrUnknownPartition, that an offset was given
// for a topic partition that does not exist.
type OffsetsBackend interface {
	// ownTopic is the source connector's offsets.storage.topic, "" for
	// none.
	SourceOffsets(ctx context.Context, connector, ownTopic string) ([]offsets.PartitionOffset, error)
	AlterSourceOffsets(ctx context.Context, connector, ownTopic string, offs []offsets.PartitionOffset) error
	ResetSourceOffsets(ctx context.Context, connector, ownTopic string) error
	SinkOffsets(ctx context.Context, connector string) ([]offsets.SinkOffset, error)
	AlterSinkOffsets(ctx context.Context, connector string, offs []offsets.SinkOffset) error
	ResetSinkOffsets(ctx context.Context, connector string) error
}

var _ OffsetsBackend = (*offsets.ConnectorOffsets)(nil)

// ConnectorOffsets answers GET /connectors/{c}/offsets and is the body of
// PATCH /connectors/{c}/offsets.
type ConnectorOffsets struct {
	Offsets []ConnectorOffset `json:"offsets"`
}

// ConnectorOffset is one partition's offset. For a sink connector the
// partition is {"kafka_topic","kafka_partition"} and the offset
// {"kafka_offset"}. A null offset in an alter request deletes the
// partition's offset.
type ConnectorOffset struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

// Message is Connect's answer to an offsets change.
type Message struct {
	Message string `json:"message"`
}

// Keys of a sink connector's partitions and offsets, as Connect's SinkUtils
// names them.
const (
	KafkaTopicKey     = "kafka_topic"
	KafkaPartitionKey = "kafka_partition"
	KafkaOffsetKey    = "kafka_offset"
)

// Connect's messages: the caveat about external offsets is left out when
// the connector vouched for the change (connectors.OffsetsAlterer).
const (
	msgAlteredByConnector = "The offsets for this connector have been altered successfully"
	msgResetByConnector   = "The offsets for this connector have been reset successfully"

	msgAltered = "The Connect framework-managed offsets for this connector have been altered successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	msgReset = "The Connect framework-managed offsets for this connector have been reset successfully. " +
		"However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
	msgNoOffsets = "Partitions / offsets need to be provided for an alter offsets request"
)

func notStopped(name string) *Error {
	return errorf(http.StatusBadRequest, "Connectors must be in the STOPPED state before their offsets can be modified. "+
		"This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
}

// groupNotEmpty is Connect's message for a sink whose consumer group still
// has members: some task has not stopped, or the connector was resumed.
func groupNotEmpty(verb, name string, err error) *Error {
	return errorf(http.StatusInternalServerError, "Failed to %s consumer group offsets for connector %s either because its tasks "+
		"haven't stopped completely yet or the connector was resumed before the request to %s its offsets could be successfully "+
		"completed. If the connector is in a stopped state, this operation can be safely retried. If it doesn't eventually succeed, the "+
		"Connect cluster may need to be restarted to get rid of the zombie sink tasks. (%v)", verb, name, verb, err)
}

func (c *Controller) offsetsBackend() (OffsetsBackend, error) {
	if c.o.Offsets == nil {
		return nil, errorf(http.StatusNotImplemented, "The connector offsets API is not available on this worker: it was started without access to the offsets topic and consumer groups")
	}
	return c.o.Offsets, nil
}

// offsetsType is the connector's type, which decides where its offsets
// are: without its plugin, a worker cannot tell.
func (c *Controller) offsetsType(conn *state.Connector) (connectors.Type, error) {
	class := conn.Config[connconfig.ConnectorClass]
	p, err := c.o.Plugins.Lookup(class)
	if err != nil {
		return "", errorf(http.StatusInternalServerError, "Cannot tell whether connector %s is a source or a sink connector, so its offsets cannot be found: %v", conn.Name, err)
	}
	return p.Type, nil
}

// offsetsFailure turns a backend error into an Error; what completes
// "Failed to ...", as Connect words it.
func offsetsFailure(what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errorf(http.StatusInternalServerError, "Timed out while attempting to %s: %v", what, err)
	}
	return errorf(http.StatusInternalServerError, "Failed to %s: %v", what, err)
}

// Offsets returns a connector's offsets, whatever its state: a source
// connector's from the offsets topic, a sink connector's committed offsets
// of its consumer group.
func (c *Controller) Offsets(ctx context.Context, name string) (ConnectorOffsets, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	b, err := c.offsetsBackend()
	if err != nil {
		return ConnectorOffsets{}, err
	}
	typ, err := c.offsetsType(conn)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	// Reading goes to Kafka too: bound it like a write (invariant 8).
	rctx, cancel := context.WithTimeout(ctx, c.o.WriteTimeout)
	defer cancel()
	out := ConnectorOffsets{Offsets: []ConnectorOffset{}}
	if typ == connectors.Sink {
		offs, err := b.SinkOffsets(rctx, name)
		if err != nil {
			return ConnectorOffsets{}, offsetsFailure("retrieve consumer group offsets for sink connector "+name, err)
		}
		for _, o := range offs {
			if o.Offset == nil {
				continue
			}
			out.Offsets = append(out.Offsets, ConnectorOffset{
				Partition: map[string]any{KafkaTopicKey: o.Topic, KafkaPartitionKey: o.Partition},
				Offset:    map[string]any{KafkaOffsetKey: *o.Offset},
			})
		}
		return out, nil
	}
	own, err := c.ownOffsetsTopic(conn)
	if err != nil {
		return ConnectorOffsets{}, err
	}
	offs, err := b.SourceOffsets(rctx, name, own)
	if err != nil {
		return ConnectorOffsets{}, offsetsFailure("retrieve offsets for source connector "+name, err)
	}
	for _, o := range offs {
		out.Offsets = append(out.Offsets, ConnectorOffset{Partition: o.Partition, Offset: o.Offset})
	}
	return out, nil
}

// AlterOffsets writes the given offsets of a stopped connector; a null
// offset deletes the partition's offset. The connector must be STOPPED with
// no task configs (400 otherwise, as in Connect), and every entry must be
// well formed (400 naming each bad one) before anything is written.
func (c *Controller) AlterOffsets(ctx context.Context, name string, offs []ConnectorOffset) (Message, error) {
	if len(offs) == 0 {
		return Message{}, errorf(http.StatusBadRequest, msgNoOffsets)
	}
	b, conn, wctx, done, err := c.beginOffsets(ctx, name)
	if err != nil {
		return Message{}, err
	}
	defer done()
	typ, err := c.offsetsType(conn)
	if err != nil {
		return Message{}, err
	}
	if typ == connectors.Sink {
		parsed, err := parseSinkOffsets(offs)
		if err != nil {
			return Message{}, err
		}
		msg, err := c.consult(conn, offs, msgAltered, msgAlteredByConnector)
		if err != nil {
			return Message{}, err
		}
		if err := b.AlterSinkOffsets(wctx, name, parsed); err != nil {
			return Message{}, sinkFailure("alter", name, err)
		}
		return Message{Message: msg}, nil
	}
	parsed, err := parseSourceOffsets(offs)
	if err != nil {
		return Message{}, err
	}
	msg, err := c.consult(conn, offs, msgAltered, msgAlteredByConnector)
	if err != nil {
		return Message{}, err
	}
	if err := c.fenceZombies(wctx, conn); err != nil {
		return Message{}, err
	}
	own, err := c.ownOffsetsTopic(conn)
	if err != nil {
		return Message{}, err
	}
	if err := b.AlterSourceOffsets(wctx, name, own, parsed); err != nil {
		return Message{}, offsetsFailure("modify offsets for source connector "+name, err)
	}
	return Message{Message: msg}, nil
}

// consult shows the changes to the connector when it checks offsets
// itself (connectors.OffsetsAlterer) and returns the message to answer
// with: byConnector when it vouched for them, else the framework's caveat.
// A connector that refuses them refuses the request (400).
func (c *Controller) consult(conn *state.Connector, offs []ConnectorOffset, framework, byConnector string) (string, error) {
	p, err := c.o.Plugins.Lookup(conn.Config[connconfig.ConnectorClass])
	if err != nil {
		return framework, nil // offsetsType found it; it cannot vanish
	}
	changes := make([]connectors.OffsetChange, len(offs))
	for i, o := range offs {
		changes[i] = connectors.OffsetChange{Partition: o.Partition, Offset: o.Offset}
	}
	// The connector sees its config resolved, as Connect hands it over
	// (ClusterConfigState.connectorConfig).
	config, err := c.o.Providers.Transform(conn.Config)
	if err != nil {
		return "", errorf(http.StatusInternalServerError, "Connector %s: %v", conn.Name, err)
	}
	var vouched bool
	var refused error
	if err := safely(p.Class, "checking offsets", func() {
		if a, ok := p.New().(connectors.OffsetsAlterer); ok {
			vouched, refused = a.AlterOffsets(maps.Clone(config), changes)
		}
	}); err != nil {
		return "", errorf(http.StatusInternalServerError, "%v", err)
	}
	if refused != nil {
		return "", errorf(http.StatusBadRequest, "Connector %s refused the offsets: %v", conn.Name, refused)
	}
	if vouched {
		return byConnector, nil
	}
	return framework, nil
}

// ResetOffsets deletes every offset of a stopped connector: tombstones for
// each of a source connector's partitions, or a sink connector's consumer
// group. The same STOPPED rule as for AlterOffsets applies.
func (c *Controller) ResetOffsets(ctx context.Context, name string) (Message, error) {
	b, conn, wctx, done, err := c.beginOffsets(ctx, name)
	if err != nil {
		return Message{}, err
	}
	defer done()
	// The connector sees every current partition with a null offset.
	current, err := c.Offsets(wctx, name)
	if err != nil {
		return Message{}, err
	}
	for i := range current.Offsets {
		current.Offsets[i].Offset = nil
	}
	msg, err := c.consult(conn, current.Offsets, msgReset, msgResetByConnector)
	if err != nil {
		return Message{}, err
	}
	if typ, err := c.offsetsType(conn); err != nil {
		return Message{}, err
	} else if typ == connectors.Sink {
		if err := b.ResetSinkOffsets(wctx, name); err != nil {
			return Message{}, sinkFailure("reset", name, err)
		}
		return Message{Message: msg}, nil
	}
	if err := c.fenceZombies(wctx, conn); err != nil {
		return Message{}, err
	}
	own, err := c.ownOffsetsTopic(conn)
	if err != nil {
		return Message{}, err
	}
	if err := b.ResetSourceOffsets(wctx, name, own); err != nil {
		return Message{}, offsetsFailure("modify offsets for source connector "+name, err)
	}
	return Message{Message: msg}, nil
}

func sinkFailure(verb, name string, err error) error {
	switch {
	case errors.Is(err, offsets.ErrGroupNotEmpty):
		return groupNotEmpty(verb, name, err)
	case errors.Is(err, offsets.ErrUnknownPartition):
		return errorf(http.StatusBadRequest, "Failed to %s consumer group offsets for connector %s: %v", verb, name, err)
	}
	what := "alter consumer group offsets for connector " + name
	if verb == "reset" {
		what = "reset consumer group offsets for sink connector " + name
	}
	return offsetsFailure(what, err)
}

// ownOffsetsTopic is a source connector's offsets.storage.topic, its
// placeholders resolved as the runtime resolves them; "" for none.
func (c *Controller) ownOffsetsTopic(conn *state.Connector) (string, error) {
	raw, ok := conn.Config[connconfig.OffsetsStorageTopic]
	if !ok {
		return "", nil
	}
	resolved, err := c.o.Providers.Transform(map[string]string{connconfig.OffsetsStorageTopic: raw})
	if err != nil {
		return "", errorf(http.StatusInternalServerError, "Failed to resolve %s of connector %s: %v", connconfig.OffsetsStorageTopic, conn.Name, err)
	}
	return strings.TrimSpace(resolved[connconfig.OffsetsStorageTopic]), nil
}

// fenceZombies fences the producers of a stopped source connector's last
// generation of tasks before its offsets change, on a worker that fences
// (exactly-once sources), as Connect does: a task still alive on a frozen
// worker could otherwise commit its own offsets over the new ones.
func (c *Controller) fenceZombies(ctx context.Context, conn *state.Connector) error {
	if !c.fencesTasksOf(conn) || conn.TaskCount == 0 {
		return nil
	}
	if err := c.o.FenceSources(ctx, conn.Name, conn.TaskCount); err != nil {
		return storeError("fencing the tasks of connector "+conn.Name+" before modifying its offsets", err)
	}
	return nil
}

// configReader is a config store that can catch up with the config topic
// (*state.ConfigLog).
type configReader interface {
	ReadToEnd(ctx context.Context) error
}

// beginOffsets starts an offsets change: it takes this worker's write
// turn, reads the config topic to its end when the store can, so that a
// stop or resume just made on another worker counts, and checks, as
// Connect does, that the connector is STOPPED and has no task configs, so
// that no task writes offsets meanwhile.
func (c *Controller) beginOffsets(ctx context.Context, name string) (OffsetsBackend, *state.Connector, context.Context, func(), error) {
	b, err := c.offsetsBackend()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	wctx, done, err := c.begin(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	fail := func(err error) (OffsetsBackend, *state.Connector, context.Context, func(), error) {
		done()
		return nil, nil, nil, nil, err
	}
	if r, ok := c.o.Configs.(configReader); ok {
		if err := r.ReadToEnd(wctx); err != nil {
			return fail(storeError("reading the config topic to its end before modifying the offsets of connector "+name, err))
		}
	}
	conn, ok := c.exists(name)
	if !ok {
		return fail(notFound(name))
	}
	if conn.TargetState != state.TargetStopped || len(conn.Tasks) != 0 {
		return fail(notStopped(name))
	}
	return b, conn, wctx, done, nil
}

// offsetErrors collects what is wrong with an alter request, each line
// naming the entry and field.
type offsetErrors []string

func (e *offsetErrors) add(i int, field, format string, args ...any) {
	*e = append(*e, fmt.Sprintf("offsets[%d].%s: %s", i, field, fmt.Sprintf(format, args...)))
}

func (e offsetErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return errorf(http.StatusBadRequest, "The offsets in the request are invalid and contain the following %d error(s):\n%s",
		len(e), strings.Join(e, "\n"))
}

// parseSinkOffsets checks every entry as Connect's SinkUtils does, with
// its messages, and reports all bad ones at once. Like Connect, it takes
// partitions and offsets given as numeric strings ("10") too.
func parseSinkOffsets(offs []ConnectorOffset) ([]offsets.SinkOffset, error) {
	var bad offsetErrors
	out := make([]offsets.SinkOffset, 0, len(offs))
	for i, o := range offs {
		if o.Partition == nil {
			bad.add(i, "partition", "The partition for a sink connector offset cannot be null or missing")
			continue
		}
		rawTopic, hasTopic := o.Partition[KafkaTopicKey]
		rawPart, hasPart := o.Partition[KafkaPartitionKey]
		if !hasTopic || !hasPart {
			bad.add(i, "partition", "The partition for a sink connector offset must contain the keys '%s' and '%s'", KafkaTopicKey, KafkaPartitionKey)
			continue
		}
		so := offsets.SinkOffset{}
		ok := true
		if topic, isString := rawTopic.(string); !isString || topic == "" {
			bad.add(i, "partition."+KafkaTopicKey, "Kafka topic names must be valid strings and may not be null (got %s)", describe(rawTopic))
			ok = false
		} else {
			so.Topic = topic
		}
		if rawPart == nil {
			bad.add(i, "partition."+KafkaPartitionKey, "Kafka partitions must be valid numbers and may not be null")
			ok = false
		} else if p, perr := integer(rawPart, math.MaxInt32); perr != nil {
			bad.add(i, "partition."+KafkaPartitionKey, "Failed to parse the following Kafka partition value in the provided offsets: '%s'. "+
				"Partition values for sink connectors need to be integers (%v).", text(rawPart), perr)
			ok = false
		} else {
			so.Partition = int32(p)
		}
		if o.Offset != nil {
			rawOff, hasOff := o.Offset[KafkaOffsetKey]
			if !hasOff {
				bad.add(i, "offset", "The offset for a sink connector should either be null or contain the key '%s'", KafkaOffsetKey)
				ok = false
			} else if off, oerr := integer(rawOff, math.MaxInt64); oerr != nil {
				bad.add(i, "offset."+KafkaOffsetKey, "Failed to parse the following Kafka offset value in the provided offsets: '%s'. "+
					"Offset values for sink connectors need to be integers (%v).", text(rawOff), oerr)
				ok = false
			} else {
				so.Offset = &off
			}
		}
		if ok {
			out = append(out, so)
		}
	}
	if err := bad.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// integer reads a non-negative integer up to limit from a JSON number or
// a numeric string.
func integer(v any, limit int64) (int64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x):
			return 0, fmt.Errorf("not an integer")
		case x < 0:
			return 0, fmt.Errorf("must not be negative")
		case x >= float64(limit)+1: // float64(MaxInt64) rounds up to 2^63
			return 0, fmt.Errorf("must be at most %d", limit)
		}
		return int64(x), nil
	case int:
		s = strconv.Itoa(x)
	case int32:
		s = strconv.FormatInt(int64(x), 10)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		return 0, fmt.Errorf("not a number but %s", describe(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("must be at most %d", limit)
	case err != nil:
		return 0, fmt.Errorf("not an integer")
	case n < 0:
		return 0, fmt.Errorf("must not be negative")
	case n > limit:
		return 0, fmt.Errorf("must be at most %d", limit)
	}
	return n, nil
}

// parseSourceOffsets checks every entry as Connect's OffsetUtils does:
// a partition is an object, an offset an object or null, and their values
// are primitives (no objects or arrays). Partitions stay as given; the
// store writes them canonically.
func parseSourceOffsets(offs []ConnectorOffset) ([]offsets.PartitionOffset, error) {
	var bad offsetErrors
	out := make([]offsets.PartitionOffset, 0, len(offs))
	for i, o := range offs {
		ok := true
		if o.Partition == nil {
			bad.add(i, "partition", "The partition for a source connector offset cannot be null or missing")
			ok = false
		}
		for _, f := range []struct {
			name string
			m    map[string]any
		}{{"partition", o.Partition}, {"offset", o.Offset}} {
			for _, k := range sortedKeys(f.m) {
				if !primitive(f.m[k]) {
					bad.add(i, f.name+"."+k, "Offsets may only contain primitive types as values, but field %s contains %s", k, describe(f.m[k]))
					ok = false
				}
			}
		}
		if ok {
			out = append(out, offsets.PartitionOffset{Partition: o.Partition, Offset: o.Offset})
		}
	}
	if err := bad.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func primitive(v any) bool {
	switch v.(type) {
	case nil, string, bool, json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names a JSON value's kind for messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if primitive(v) {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// text shows a value as it appeared in the request.
func text(v any) string {
	if b, err := json.Marshal(v); err == nil {
		return strings.Trim(string(b), `"`)
	}
	return fmt.Sprint(v)
}
