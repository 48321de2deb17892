package schemaregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/kafkatest"
)

// TestSurvivesRestart registers, configures and deletes through one
// instance, closes it, and checks a new instance on the same topic answers
// the same.
func TestSurvivesRestart(t *testing.T) {
	opts, topic := testBroker(t)
	_, srv, stop := openRegistry(t, opts, topic)
	do(t, srv, "POST", "/subjects/a/versions", body("", userV1)).want(t, "v1", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/a/versions", body("", userV2)).want(t, "v2", 200, `{"id":2}`)
	do(t, srv, "PUT", "/config/a", `{"compatibility":"FULL"}`).want(t, "config", 200, "")
	do(t, srv, "PUT", "/mode/b", `{"mode":"READONLY"}`).want(t, "mode", 200, "")
	do(t, srv, "DELETE", "/subjects/a/versions/1", "").want(t, "soft delete", 200, "")
	do(t, srv, "POST", "/subjects/c/versions", body("", `"int"`)).want(t, "c", 200, `{"id":3}`)
	do(t, srv, "DELETE", "/subjects/c", "").want(t, "soft delete c", 200, "")
	stop()

	_, srv2, _ := openRegistry(t, opts, topic)
	do(t, srv2, "GET", "/subjects/a/versions?deleted=true", "").want(t, "versions after restart", 200, `[1,2]`)
	do(t, srv2, "GET", "/subjects/a/versions", "").want(t, "live versions after restart", 200, `[2]`)
	do(t, srv2, "GET", "/subjects", "").want(t, "subjects after restart", 200, `["a"]`)
	do(t, srv2, "GET", "/schemas/ids/2", "").want(t, "id after restart", 200, fmt.Sprintf(`{"schema":%q}`, userV2))
	do(t, srv2, "GET", "/config/a", "").want(t, "config after restart", 200, `{"compatibilityLevel":"FULL"}`)
	do(t, srv2, "GET", "/mode/b", "").want(t, "mode after restart", 200, `{"mode":"READONLY"}`)
	do(t, srv2, "POST", "/subjects/d/versions", body("", `"long"`)).want(t, "ids continue", 200, `{"id":4}`)
}

// TestInstancesAgree runs two instances on one topic: each sees the
// other's writes, and concurrent registrations through both never give
// one id to two schemas or one version to two ids.
func TestInstancesAgree(t *testing.T) {
	opts, topic := testBroker(t)
	_, a, _ := openRegistry(t, opts, topic)
	_, b, _ := openRegistry(t, opts, topic)

	do(t, a, "PUT", "/config", `{"compatibility":"NONE"}`).want(t, "level NONE", 200, "")
	do(t, a, "POST", "/subjects/s/versions", body("", userV1)).want(t, "register on a", 200, `{"id":1}`)
	// b has not necessarily read the record yet: a miss reads to the end
	// before answering.
	do(t, b, "GET", "/schemas/ids/1", "").want(t, "read on b", 200, "")
	do(t, b, "POST", "/subjects/s/versions", body("", userV1)).want(t, "same schema on b", 200, `{"id":1}`)

	const perInstance = 6
	var wg sync.WaitGroup
	ids := make(chan [2]int, 2*perInstance)
	for i, srv := range []*struct {
		name string
		url  string
	}{{"a", a.URL}, {"b", b.URL}} {
		for n := 0; n < perInstance; n++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, err := sr.NewClient(sr.URLs(srv.url))
				if err != nil {
					t.Error(err)
					return
				}
				k := i*perInstance + n
				schema := fmt.Sprintf(`{"type":"fixed","name":"F%d","size":%d}`, k, k+1)
				id, err := cl.RegisterSchema(context.Background(), fmt.Sprintf("subject-%d", k%3), sr.Schema{Schema: schema}, -1, -1)
				if err != nil {
					t.Errorf("register on %s: %v", srv.name, err)
					return
				}
				ids <- [2]int{k, id}
			}()
		}
	}
	wg.Wait()
	close(ids)
	seen := map[int]int{}
	for p := range ids {
		if k, dup := seen[p[1]]; dup {
			t.Fatalf("schemas %d and %d both got id %d", k, p[0], p[1])
		}
		seen[p[1]] = p[0]
	}
	if len(seen) != 2*perInstance {
		t.Fatalf("%d schemas registered, want %d", len(seen), 2*perInstance)
	}
	// Both instances list the same versions, numbered without gaps, once
	// each has read the other's last writes (an instance answers a
	// listing from what it has read so far, as Confluent's followers do).
	for s := 0; s < 3; s++ {
		path := fmt.Sprintf("/subjects/subject-%d/versions", s)
		deadline := time.Now().Add(10 * time.Second)
		for {
			va, vb := do(t, a, "GET", path, ""), do(t, b, "GET", path, "")
			if va.body == "[1,2,3,4]" && vb.body == va.body {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: a says %s, b says %s, want [1,2,3,4]", path, va.body, vb.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestTopicFormat reads the topic back and checks its records are
// Confluent's: keys with keytype and magic, schema values with subject,
// version, id, schema and deleted, and a record written by Confluent's
// registry (not by Sluice) is read as such.
func TestTopicFormat(t *testing.T) {
	opts, topic := testBroker(t)
	// Records as Confluent's registry writes them, before Sluice starts.
	cl := kafkatest.NewClient(t, opts)
	compact := "compact"
	kafkatest.CreateTopic(t, opts, topic, 1, map[string]*string{"cleanup.policy": &compact})
	kafkatest.Produce(t, cl,
		&kgo.Record{Topic: topic, Key: []byte(`{"keytype":"NOOP","magic":0}`)},
		&kgo.Record{Topic: topic, Key: []byte(`{"keytype":"SCHEMA","subject":"legacy","version":1,"magic":1}`),
			Value: []byte(`{"subject":"legacy","version":1,"id":7,"schema":"\"string\"","deleted":false}`)},
		&kgo.Record{Topic: topic, Key: []byte(`{"keytype":"SCHEMA","subject":"proto","version":1,"magic":1}`),
			Value: []byte(`{"subject":"proto","version":1,"id":8,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message M { int32 a = 1; }","deleted":false}`)},
		&kgo.Record{Topic: topic, Key: []byte(`{"keytype":"CONFIG","subject":null,"magic":0}`), Value: []byte(`{"compatibilityLevel":"FORWARD"}`)},
		&kgo.Record{Topic: topic, Key: []byte(`{"keytype":"SOMETHING_NEW","magic":0}`), Value: []byte(`{}`)},
	)
	_, srv, stop := openRegistry(t, opts, topic)
	do(t, srv, "GET", "/schemas/ids/7", "").want(t, "Confluent-written schema", 200, `{"schema":"\"string\""}`)
	do(t, srv, "GET", "/schemas/ids/8", "").want(t, "Confluent-written protobuf", 200, "")
	do(t, srv, "GET", "/config", "").want(t, "Confluent-written config", 200, `{"compatibilityLevel":"FORWARD"}`)
	do(t, srv, "POST", "/subjects/new/versions", body("", `"int"`)).want(t, "next id after Confluent's", 200, `{"id":9}`)
	do(t, srv, "PUT", "/config/new", `{"compatibility":"NONE"}`).want(t, "subject config", 200, "")
	do(t, srv, "PUT", "/mode", `{"mode":"READWRITE"}`).want(t, "global mode", 200, "")
	do(t, srv, "DELETE", "/subjects/new", "").want(t, "soft delete subject", 200, "")
	stop()

	got := map[string]string{}
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reader := kafkatest.NewClient(t, opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for len(got) < 9 && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if _, ok := got[string(r.Key)]; !ok {
				keys = append(keys, string(r.Key))
			}
			got[string(r.Key)] = string(r.Value)
		})
	}
	sort.Strings(keys)
	want := map[string]string{
		`{"keytype":"SCHEMA","subject":"new","version":1,"magic":1}`: `{"subject":"new","version":1,"id":9,"schema":"\"int\"","deleted":false}`,
		`{"keytype":"CONFIG","subject":"new","magic":0}`:             `{"compatibilityLevel":"NONE"}`,
		`{"keytype":"MODE","subject":null,"magic":0}`:                `{"mode":"READWRITE"}`,
		`{"keytype":"DELETE_SUBJECT","subject":"new","magic":0}`:     `{"subject":"new","version":1}`,
	}
	for k, v := range want {
		if !jsonEqual(got[k], v) {
			t.Errorf("record %s = %s, want %s (keys: %v)", k, got[k], v, keys)
		}
		var parsed map[string]any
		if err := json.Unmarshal([]byte(k), &parsed); err != nil {
			t.Errorf("key %s is not JSON: %v", k, err)
		}
	}
}

// TestFranzGoClient drives the registry with franz-go's sr client, which
// the registry converters use, as an outside check of the API's shapes.
func TestFranzGoClient(t *testing.T) {
	srv := newTestRegistry(t)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	types, err := cl.SupportedTypes(ctx)
	if err != nil || len(types) != 3 {
		t.Fatalf("SupportedTypes = %v, %v", types, err)
	}
	ss, err := cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: userV1})
	if err != nil || ss.ID != 1 || ss.Version != 1 || ss.Subject != "orders-value" {
		t.Fatalf("CreateSchema = %+v, %v", ss, err)
	}
	proto := sr.Schema{Schema: `syntax = "proto3"; package p; message M { string a = 1; }`, Type: sr.TypeProtobuf}
	pss, err := cl.CreateSchema(ctx, "p-value", proto)
	if err != nil || pss.ID != 2 || pss.Type != sr.TypeProtobuf {
		t.Fatalf("CreateSchema protobuf = %+v, %v", pss, err)
	}
	// Stored in the printed form, as Confluent stores its canonical form.
	got, err := cl.SchemaByID(ctx, 2)
	if err != nil || !strings.Contains(got.Schema, "message M {") || got.Type != sr.TypeProtobuf {
		t.Fatalf("SchemaByID = %+v, %v", got, err)
	}
	if again, err := cl.RegisterSchema(ctx, "p-value", sr.Schema{Schema: got.Schema, Type: sr.TypeProtobuf}, -1, -1); err != nil || again != 2 {
		t.Fatalf("registering the stored form again = %d, %v; want id 2", again, err)
	}
	found, err := cl.LookupSchema(ctx, "orders-value", sr.Schema{Schema: userV1})
	if err != nil || found.ID != 1 || found.Version != 1 {
		t.Fatalf("LookupSchema = %+v, %v", found, err)
	}
	res, err := cl.CheckCompatibility(ctx, "orders-value", -1, sr.Schema{Schema: userV3})
	if err != nil || res.Is {
		t.Fatalf("CheckCompatibility of an incompatible schema = %+v, %v", res, err)
	}
	_, err = cl.CreateSchema(ctx, "orders-value", sr.Schema{Schema: userV3})
	var re *sr.ResponseError
	if !asResponseError(err, &re) || re.ErrorCode != 409 {
		t.Fatalf("registering an incompatible schema: %v, want error_code 409", err)
	}
	for _, r := range cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "orders-value") {
		if r.Err != nil || r.Level != sr.CompatFull {
			t.Fatalf("SetCompatibility = %+v", r)
		}
	}
	for _, r := range cl.Compatibility(ctx, "orders-value") {
		if r.Err != nil || r.Level != sr.CompatFull {
			t.Fatalf("Compatibility = %+v", r)
		}
	}
	for _, r := range cl.SetMode(ctx, sr.ModeReadOnly, "orders-value") {
		if r.Err != nil || r.Mode != sr.ModeReadOnly {
			t.Fatalf("SetMode = %+v", r)
		}
	}
	if _, err := cl.DeleteSubject(ctx, "orders-value", sr.SoftDelete); !asResponseError(err, &re) || re.ErrorCode != 42205 {
		t.Fatalf("deleting a read-only subject: %v, want 42205", err)
	}
	for _, r := range cl.ResetMode(ctx, "orders-value") {
		if r.Err != nil {
			t.Fatalf("ResetMode = %+v", r)
		}
	}
	if vs, err := cl.DeleteSubject(ctx, "orders-value", sr.SoftDelete); err != nil || len(vs) != 1 {
		t.Fatalf("DeleteSubject soft = %v, %v", vs, err)
	}
	if vs, err := cl.DeleteSubject(ctx, "orders-value", sr.HardDelete); err != nil || len(vs) != 1 {
		t.Fatalf("DeleteSubject hard = %v, %v", vs, err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || len(subjects) != 1 || subjects[0] != "p-value" {
		t.Fatalf("Subjects = %v, %v", subjects, err)
	}
}

func asResponseError(err error, into **sr.ResponseError) bool {
	re, ok := err.(*sr.ResponseError)
	if ok {
		*into = re
	}
	return ok
}

// TestBasicAuthentication: with a users file, a request needs one of its
// users, and franz-go's client gets in with sr.BasicAuth.
func TestBasicAuthentication(t *testing.T) {
	opts, topic := testBroker(t)
	r, _, _ := openRegistry(t, opts, topic)
	path := filepath.Join(t.TempDir(), "users.properties")
	if err := os.WriteFile(path, []byte("alice=alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users, err := basicauth.LoadUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(RequireUsers(users, zerolog.Nop(), r.Handler()))
	t.Cleanup(srv.Close)

	do(t, srv, "GET", "/subjects", "").wantCode(t, "no credentials", 401, 401)
	for _, creds := range [][2]string{{"alice", "wrong"}, {"bob", "alice-secret"}} {
		req, _ := http.NewRequest("GET", srv.URL+"/subjects", nil)
		req.SetBasicAuth(creds[0], creds[1])
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || strings.Contains(string(b), "alice-secret") {
			t.Fatalf("%s: %d %s, want 401 without the password", creds[0], resp.StatusCode, b)
		}
	}
	cl, err := sr.NewClient(sr.URLs(srv.URL), sr.BasicAuth("alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RegisterSchema(context.Background(), "s", sr.Schema{Schema: `"int"`}, -1, -1); err != nil {
		t.Fatalf("register with credentials: %v", err)
	}
	anon, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	var re *sr.ResponseError
	if _, err := anon.Subjects(context.Background()); !asResponseError(err, &re) || re.ErrorCode != 401 {
		t.Fatalf("without credentials: %v, want error_code 401", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.properties")
	_ = os.WriteFile(empty, nil, 0o600)
	if _, err := basicauth.LoadUsersFile(empty); err == nil {
		t.Fatal("an empty users file would let everyone in, but was taken")
	}
}

// TestRecordsWithFieldsSluiceLacks: a record written by a newer Confluent
// registry is applied, and the fields Sluice does not implement are named.
func TestRecordsWithFieldsSluiceLacks(t *testing.T) {
	st := newState()
	err := st.apply([]byte(`{"keytype":"CONFIG","subject":"s","magic":0}`), []byte(`{"compatibilityLevel":"FULL","normalize":true,"alias":null}`))
	if err == nil || !strings.Contains(err.Error(), "normalize") || strings.Contains(err.Error(), "alias") {
		t.Fatalf("apply: %v, want an error naming normalize (and not the null alias)", err)
	}
	if st.configs["s"] != CompatFull {
		t.Fatalf("the level was not applied: %v", st.configs)
	}
	if err := st.apply([]byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`),
		[]byte(`{"subject":"s","version":1,"id":3,"schema":"\"int\"","deleted":false}`)); err != nil {
		t.Fatalf("a plain schema record: %v", err)
	}
	if err := st.apply([]byte(`{"keytype":"SCHEMA","subject":"s","version":2,"magic":1}`),
		[]byte(`{"subject":"s","version":2,"id":4,"schema":"\"long\"","ruleSet":{"domainRules":[]}}`)); err == nil || !strings.Contains(err.Error(), "ruleSet") {
		t.Fatalf("a schema record with a rule set: %v, want ruleSet named", err)
	}
}
