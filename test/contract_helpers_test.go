package test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// contract is the one cluster of three `sluice worker` processes that a
// contract test talks to. Writes go to a follower (a worker that is not the
// group leader), so that forwarding to the leader is part of every write;
// reads go to each worker in turn, and since a worker answers reads from its
// own view, reads that follow a write are polled.
type contract struct {
	t       *testing.T
	c       *cluster
	workers []*workerProc
	rr      int // round robin over readers and followers
}

// startContract starts a broker (or uses SLUICE_TEST_BOOTSTRAP's) and three
// workers, and waits until GET /workers names all three and one leader.
func startContract(t *testing.T, name string) *contract {
	t.Helper()
	c, ws := startWorkers(t, name, 3)
	k := &contract{t: t, c: c, workers: ws}
	k.poll(t, "GET /workers shows 3 workers and exactly one leader", func() (bool, string) {
		leader, n, body := k.leader(ws[0])
		return leader != "" && n == 3, body
	})
	return k
}

// leader asks w for GET /workers and returns the leader's worker id ("" if
// none or more than one), how many workers it lists, and the raw answer.
func (k *contract) leader(w *workerProc) (string, int, string) {
	code, _, body, err := doReq("GET", "http://"+w.rest+"/workers", "")
	if err != nil {
		return "", 0, err.Error()
	}
	var out workersList
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil {
		return "", 0, fmt.Sprintf("%d %s", code, body)
	}
	var leaders []string
	for _, x := range out.Workers {
		if x.Leader {
			leaders = append(leaders, x.WorkerID)
		}
	}
	if len(leaders) != 1 {
		return "", len(out.Workers), string(body)
	}
	return leaders[0], len(out.Workers), string(body)
}

// follower returns a worker that GET /workers does not name as the leader,
// a different one on each call when it can.
func (k *contract) follower() *workerProc {
	k.rr++
	leader := ""
	for i := 0; i < len(k.workers) && leader == ""; i++ {
		w := k.workers[(k.rr+i)%len(k.workers)]
		if !w.Exited() {
			leader, _, _ = k.leader(w)
		}
	}
	for i := 0; i < len(k.workers); i++ {
		w := k.workers[(k.rr+i)%len(k.workers)]
		if w.id != leader && !w.Exited() {
			return w
		}
	}
	k.t.Fatalf("no live follower (leader %q)", leader)
	return nil
}

// reader returns the next worker in turn.
func (k *contract) reader() *workerProc {
	k.rr++
	return k.workers[k.rr%len(k.workers)]
}

// name makes a connector (or topic) name; unique on a shared real broker,
// where consumer groups connect-<name> are shared with other runs.
func (k *contract) name(s string) string { return k.c.topic(s) }

// onePartitionTopic creates a topic of one partition named after base
// (see name) and returns its name.
func (k *contract) onePartitionTopic(t *testing.T, base string) string {
	t.Helper()
	topic := k.name(base)
	createOnePartitionTopic(t, k.c.bootstrap, topic)
	return topic
}

// write sends a write to a follower.
func (k *contract) write(t *testing.T, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	w := k.follower()
	code, hdr, b, err := doReq(method, "http://"+w.rest+path, body)
	if err != nil {
		t.Fatalf("%s %s via follower %s: %v", method, path, w.id, err)
	}
	return code, hdr, b
}

// read sends a request to the next worker in turn.
func (k *contract) read(t *testing.T, method, path string) (int, http.Header, []byte) {
	t.Helper()
	return k.on(t, k.reader(), method, path, "")
}

// request sends a GET to the next worker in turn, as read does, and any
// other method, without a body, to a follower, as write does.
func (k *contract) request(t *testing.T, method, path string) (int, http.Header, []byte) {
	t.Helper()
	if method == "GET" {
		return k.read(t, method, path)
	}
	return k.write(t, method, path, "")
}

// getJSON reads path from the next worker in turn and requires 200 with a
// JSON Content-Type.
func (k *contract) getJSON(t *testing.T, path string) []byte {
	t.Helper()
	code, hdr, body := k.read(t, "GET", path)
	expectJSON(t, "GET "+path, code, hdr, body, http.StatusOK)
	return body
}

// objectOnEach GETs path on every worker, requires 200 with a JSON object
// that has the fields spec gives (see requireFields), and passes it to
// check.
func (k *contract) objectOnEach(t *testing.T, path string, spec map[string]string, check func(w *workerProc, m map[string]any, body []byte)) {
	t.Helper()
	for _, w := range k.workers {
		what := "GET " + path + " on " + w.id
		code, hdr, body := k.on(t, w, "GET", path, "")
		expectJSON(t, what, code, hdr, body, http.StatusOK)
		m := jsonObject(t, what, body)
		requireFields(t, what, m, spec)
		check(w, m, body)
	}
}

// on sends a request to one worker.
func (k *contract) on(t *testing.T, w *workerProc, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	code, hdr, b, err := doReq(method, "http://"+w.rest+path, body)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, w.id, err)
	}
	return code, hdr, b
}

// doReq is send with the response headers.
func doReq(method, url, body string) (int, http.Header, []byte, error) {
	return proctest.Do(httpClient, method, url, body)
}

// errPollFatal, returned as a poll's state prefix, ends the poll at once:
// the answer cannot change by waiting (an endpoint that does not exist).
const errPollFatal = "FATAL: "

// poll calls cond until it holds, failing the test at the deadline with
// cond's last description of where things stand, or at once when the
// description starts with errPollFatal or a worker died.
func (k *contract) poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	alive := func() {
		for _, w := range k.workers {
			w.FailIfExited()
		}
	}
	waitFor(t, alive, stateDeadline, 150*time.Millisecond, what, func() (bool, string) {
		ok, state := cond()
		if !ok && strings.HasPrefix(state, errPollFatal) {
			t.Fatalf("%s: %s", what, strings.TrimPrefix(state, errPollFatal))
		}
		return ok, state
	})
}

// hopeless reports whether an answer means the endpoint is missing, so that
// waiting for a different answer is pointless.
func hopeless(code int, body []byte) bool {
	switch code {
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	case http.StatusNotFound:
		return strings.Contains(string(body), "HTTP 404 Not Found")
	}
	return false
}

// pollGET polls GET path on the workers in turn until cond accepts the
// answer.
func (k *contract) pollGET(t *testing.T, path, what string, cond func(code int, body []byte) bool) []byte {
	t.Helper()
	var last []byte
	k.poll(t, what, func() (bool, string) {
		w := k.reader()
		code, _, body := k.on(t, w, "GET", path, "")
		last = body
		state := fmt.Sprintf("GET %s on %s: %d %s", path, w.id, code, body)
		if cond(code, body) {
			return true, state
		}
		if hopeless(code, body) {
			return false, errPollFatal + state
		}
		return false, state
	})
	return last
}

// waitState polls the connector's status on each worker in turn until
// cond holds, and returns it.
func (k *contract) waitState(t *testing.T, name, what string, cond func(proctest.Status) bool) proctest.Status {
	t.Helper()
	var st proctest.Status
	k.pollGET(t, "/connectors/"+name+"/status", name+": "+what, func(code int, body []byte) bool {
		st = proctest.Status{}
		return code == http.StatusOK && json.Unmarshal(body, &st) == nil && cond(st)
	})
	return st
}

func (k *contract) waitRunning(t *testing.T, name string) proctest.Status {
	t.Helper()
	return k.waitState(t, name, "connector and every task RUNNING", func(s proctest.Status) bool {
		return s.Running()
	})
}

func (k *contract) waitStopped(t *testing.T, name string) proctest.Status {
	t.Helper()
	return k.waitState(t, name, "connector STOPPED with no tasks", func(s proctest.Status) bool {
		return s.Connector.State == "STOPPED" && len(s.Tasks) == 0
	})
}

// create POSTs a connector through a follower and requires 201.
func (k *contract) create(t *testing.T, name string, config map[string]string) {
	t.Helper()
	code, _, body := k.write(t, "POST", "/connectors", connectorJSON(t, name, config))
	if code != http.StatusCreated {
		t.Fatalf("POST /connectors %s: %d, want 201: %s", name, code, body)
	}
}

// expectCode requires a status code, quoting the body.
func expectCode(t *testing.T, what string, code int, body []byte, want int) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: status %d, want %d; body: %s", what, code, want, body)
	}
}

// expectJSON requires a status code and a JSON Content-Type.
func expectJSON(t *testing.T, what string, code int, hdr http.Header, body []byte, want int) {
	t.Helper()
	expectCode(t, what, code, body, want)
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json; body: %s", what, ct, body)
	}
}

// expectEmpty requires a status code and no body (Connect's 204s and its
// 202s for pause and resume carry none).
func expectEmpty(t *testing.T, what string, code int, body []byte, want int) {
	t.Helper()
	expectCode(t, what, code, body, want)
	if len(strings.TrimSpace(string(body))) != 0 {
		t.Errorf("%s: %d with a body, Connect sends none: %s", what, code, body)
	}
}

// jsonObject decodes a JSON object.
func jsonObject(t *testing.T, what string, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		t.Fatalf("%s: not a JSON object (%v): %s", what, err, body)
	}
	return m
}

// jsonArray decodes a JSON array.
func jsonArray(t *testing.T, what string, body []byte) []any {
	t.Helper()
	var a []any
	if err := json.Unmarshal(body, &a); err != nil || a == nil {
		t.Fatalf("%s: not a JSON array (%v): %s", what, err, body)
	}
	return a
}

// jsonType names the JSON type of a decoded value: string, int (a number
// without fraction), number, bool, null, array or object.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case float64:
		if x == math.Trunc(x) {
			return "int"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// requireFields checks that m has each key of spec with one of the JSON types spec
// allows ("string|null"; "number" also accepts "int"; a leading "?" makes the
// key optional).
func requireFields(t *testing.T, what string, m map[string]any, spec map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		want := spec[key]
		optional := strings.HasPrefix(want, "?")
		want = strings.TrimPrefix(want, "?")
		v, ok := m[key]
		if !ok {
			if !optional {
				t.Errorf("%s: field %q missing (want %s) in %s", what, key, want, compactJSON(m))
			}
			continue
		}
		got := jsonType(v)
		match := false
		for _, w := range strings.Split(want, "|") {
			if w == got || (w == "number" && got == "int") {
				match = true
			}
		}
		if !match {
			t.Errorf("%s: field %q is %s %s, want %s", what, key, got, compactJSON(v), want)
		}
	}
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stringMap checks that v is an object of strings and returns it.
func stringMap(t *testing.T, what string, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: not an object: %s", what, compactJSON(v))
	}
	out := map[string]string{}
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			t.Errorf("%s: %q is %s, Connect configs are maps of strings", what, k, compactJSON(x))
			continue
		}
		out[k] = s
	}
	return out
}

var connectStates = map[string]bool{"UNASSIGNED": true, "RUNNING": true, "PAUSED": true, "FAILED": true, "RESTARTING": true, "STOPPED": true}

// checkStatus checks Connect's ConnectorStateInfo shape:
// {"name","connector":{"state","worker_id"[,"trace"]},"tasks":[{"id","state","worker_id"[,"trace"]}],"type"}.
// trace is @JsonInclude(NON_EMPTY): absent, or a non-empty string.
func checkStatus(t *testing.T, what string, body []byte, name, typ string) proctest.Status {
	t.Helper()
	m := jsonObject(t, what, body)
	requireFields(t, what, m, map[string]string{"name": "string", "connector": "object", "tasks": "array", "type": "string"})
	if m["name"] != name {
		t.Errorf("%s: name %v, want %q", what, m["name"], name)
	}
	if typ != "" && m["type"] != typ {
		t.Errorf("%s: type %v, want %q", what, m["type"], typ)
	}
	checkState := func(w string, s map[string]any, task bool) {
		spec := map[string]string{"state": "string", "worker_id": "string", "trace": "?string"}
		if task {
			spec["id"] = "int"
		}
		requireFields(t, w, s, spec)
		if st, _ := s["state"].(string); !connectStates[st] || (task && st == "STOPPED") {
			t.Errorf("%s: state %q is not one of Connect's", w, s["state"])
		}
		if tr, ok := s["trace"]; ok && tr == "" {
			t.Errorf(`%s: "trace":"" — Connect leaves an empty trace out (@JsonInclude(NON_EMPTY))`, w)
		}
	}
	if c, ok := m["connector"].(map[string]any); ok {
		checkState(what+": connector", c, false)
	}
	if tasks, ok := m["tasks"].([]any); ok {
		for i, x := range tasks {
			o, ok := x.(map[string]any)
			if !ok {
				t.Errorf("%s: tasks[%d] is not an object: %s", what, i, compactJSON(x))
				continue
			}
			checkState(fmt.Sprintf("%s: tasks[%d]", what, i), o, true)
		}
	}
	var st proctest.Status
	_ = json.Unmarshal(body, &st)
	return st
}

// checkInfo checks Connect's ConnectorInfo shape:
// {"name","config":{string:string},"tasks":[{"connector","task"}],"type"}.
func checkInfo(t *testing.T, what string, body []byte, name, typ string) (map[string]string, int) {
	t.Helper()
	m := jsonObject(t, what, body)
	return checkInfoObject(t, what, m, name, typ)
}

func checkInfoObject(t *testing.T, what string, m map[string]any, name, typ string) (map[string]string, int) {
	t.Helper()
	requireFields(t, what, m, map[string]string{"name": "string", "config": "object", "tasks": "array", "type": "string"})
	if m["name"] != name {
		t.Errorf("%s: name %v, want %q", what, m["name"], name)
	}
	if typ != "" && m["type"] != typ {
		t.Errorf("%s: type %v, want %q", what, m["type"], typ)
	}
	cfg := stringMap(t, what+": config", m["config"])
	if cfg["name"] != name {
		t.Errorf(`%s: config "name" is %q, want %q (Connect puts the name into the config)`, what, cfg["name"], name)
	}
	tasks, _ := m["tasks"].([]any)
	for i, x := range tasks {
		o, ok := x.(map[string]any)
		if !ok {
			t.Errorf("%s: tasks[%d] is not an object: %s", what, i, compactJSON(x))
			continue
		}
		requireFields(t, fmt.Sprintf("%s: tasks[%d]", what, i), o, map[string]string{"connector": "string", "task": "int"})
		if o["connector"] != name {
			t.Errorf("%s: tasks[%d].connector %v, want %q", what, i, o["connector"], name)
		}
		if o["task"] != float64(i) {
			t.Errorf("%s: tasks[%d].task %v, want %d", what, i, o["task"], i)
		}
	}
	return cfg, len(tasks)
}

// requireErrorBody is requireError plus the JSON Content-Type.
func requireErrorBody(t *testing.T, what string, code int, hdr http.Header, body []byte, want int) string {
	t.Helper()
	msg := requireError(t, what, code, body, want)
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: error with Content-Type %q, want application/json", what, ct)
	}
	return msg
}

// --- Kafka, through franz-go: an independent client of the topics ---

func newKafkaClient(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createOnePartitionTopic creates a topic with one partition, so that "partition 0"
// means every record.
func createOnePartitionTopic(t *testing.T, bootstrap, topic string) {
	t.Helper()
	adm := kadm.NewClient(newKafkaClient(t, bootstrap))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, 1, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produceValues writes values to partition 0 of topic and waits for the acks.
func produceValues(t *testing.T, bootstrap, topic string, values []string) {
	t.Helper()
	cl := newKafkaClient(t, bootstrap, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Value: []byte(v), Partition: 0}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// readTopicValues returns the values of every record of topic, read from the
// start up to the end offsets it has now.
func readTopicValues(t *testing.T, bootstrap, topic string) []string {
	t.Helper()
	cl := newKafkaClient(t, bootstrap)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	parts := map[int32]kgo.Offset{}
	for p := range want {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cons := newKafkaClient(t, bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	next, err := kafkatest.ConsumeTo(ctx, cons, want, func(r *kgo.Record) { out = append(out, string(r.Value)) }, nil)
	if err != nil {
		t.Fatalf("reading %s: only reached %v of %v", topic, next, want)
	}
	return out
}

// multiplicity counts how often each value occurs.
func multiplicity(values []string) map[string]int {
	m := map[string]int{}
	for _, v := range values {
		m[v]++
	}
	return m
}

// everyTimes reports whether each of want occurs exactly n times in got and
// got has nothing else, and describes the first difference.
func everyTimes(got []string, want []string, n int) (bool, string) {
	m := multiplicity(got)
	for _, w := range want {
		if m[w] != n {
			return false, fmt.Sprintf("%q occurs %d times, want %d (%d values in all, want %d)", w, m[w], n, len(got), n*len(want))
		}
	}
	if len(got) != n*len(want) {
		return false, fmt.Sprintf("%d values, want %d", len(got), n*len(want))
	}
	return true, ""
}
