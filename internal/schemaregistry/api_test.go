package schemaregistry

import (
	"fmt"
	"strings"
	"testing"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"id","type":"long"}]}`
	// userV2 adds a field with a default: readable both ways.
	userV2 = `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"id","type":"long"},{"name":"email","type":["null","string"],"default":null}]}`
	// userV3 adds a field without a default: a new reader cannot read old data.
	userV3 = `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"id","type":"long"},{"name":"age","type":"int"}]}`
)

func TestRegisterLookupAndIDs(t *testing.T) {
	srv := newTestRegistry(t)

	do(t, srv, "GET", "/", "").want(t, "root", 200, `{}`)
	do(t, srv, "GET", "/schemas/types", "").want(t, "types", 200, `["JSON","PROTOBUF","AVRO"]`)
	do(t, srv, "GET", "/subjects", "").want(t, "no subjects", 200, `[]`)

	do(t, srv, "POST", "/subjects/users-value/versions", body("", userV1)).want(t, "register v1", 200, `{"id":1}`)
	// Whitespace does not make another schema.
	do(t, srv, "POST", "/subjects/users-value/versions", body("", "  "+userV1+"\n")).want(t, "register v1 again", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/users-value/versions", body("", userV2)).want(t, "register v2", 200, `{"id":2}`)
	// Ids are global: the same schema in another subject keeps its id,
	// a new schema takes the next.
	do(t, srv, "POST", "/subjects/other-value/versions", body("", userV1)).want(t, "v1 in other", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/strings-value/versions", body("", `"string"`)).want(t, "string in a third subject", 200, `{"id":3}`)

	do(t, srv, "GET", "/subjects", "").want(t, "subjects", 200, `["other-value","strings-value","users-value"]`)
	do(t, srv, "GET", "/subjects?subjectPrefix=users", "").want(t, "subjects by prefix", 200, `["users-value"]`)
	do(t, srv, "GET", "/subjects/users-value/versions", "").want(t, "versions", 200, `[1,2]`)
	do(t, srv, "GET", "/subjects/users-value/versions/1", "").want(t, "version 1", 200,
		fmt.Sprintf(`{"subject":"users-value","version":1,"id":1,"schema":%q}`, userV1))
	do(t, srv, "GET", "/subjects/users-value/versions/latest", "").want(t, "latest", 200,
		fmt.Sprintf(`{"subject":"users-value","version":2,"id":2,"schema":%q}`, userV2))
	do(t, srv, "GET", "/subjects/users-value/versions/-1", "").want(t, "version -1", 200,
		fmt.Sprintf(`{"subject":"users-value","version":2,"id":2,"schema":%q}`, userV2))
	do(t, srv, "GET", "/subjects/users-value/versions/2/schema", "").want(t, "raw schema", 200, userV2)

	do(t, srv, "GET", "/schemas/ids/1", "").want(t, "id 1", 200, fmt.Sprintf(`{"schema":%q}`, userV1))
	do(t, srv, "GET", "/schemas/ids/3?fetchMaxId=true", "").want(t, "id 3 with max", 200, `{"schema":"\"string\"","maxId":3}`)
	do(t, srv, "GET", "/schemas/ids/1/schema", "").want(t, "raw id 1", 200, userV1)
	do(t, srv, "GET", "/schemas/ids/1/subjects", "").want(t, "subjects of id 1", 200, `["other-value","users-value"]`)
	do(t, srv, "GET", "/schemas/ids/1/versions", "").want(t, "versions of id 1", 200,
		`[{"subject":"other-value","version":1},{"subject":"users-value","version":1}]`)

	do(t, srv, "GET", "/schemas?subjectPrefix=users&latestOnly=true", "").want(t, "schemas, latest only", 200,
		fmt.Sprintf(`[{"subject":"users-value","version":2,"id":2,"schema":%q}]`, userV2))
	do(t, srv, "GET", "/schemas?offset=1&limit=2", "").want(t, "schemas, a page", 200,
		fmt.Sprintf(`[{"subject":"strings-value","version":1,"id":3,"schema":"\"string\""},{"subject":"users-value","version":1,"id":1,"schema":%q}]`, userV1))
	do(t, srv, "GET", "/schemas?limit=-2", "").wantCode(t, "bad limit", 400, 400)
	do(t, srv, "POST", "/subjects/users-value", body("", userV2)).want(t, "lookup", 200,
		fmt.Sprintf(`{"subject":"users-value","version":2,"id":2,"schema":%q}`, userV2))

	// Errors, with Confluent's codes.
	do(t, srv, "GET", "/schemas/ids/99", "").wantCode(t, "unknown id", 404, 40403)
	do(t, srv, "GET", "/schemas/ids/x", "").wantCode(t, "id not a number", 404, 40403)
	do(t, srv, "GET", "/subjects/nope/versions", "").wantCode(t, "unknown subject", 404, 40401)
	do(t, srv, "GET", "/subjects/nope/versions/1", "").wantCode(t, "unknown subject version", 404, 40401)
	do(t, srv, "GET", "/subjects/users-value/versions/9", "").wantCode(t, "unknown version", 404, 40402)
	do(t, srv, "GET", "/subjects/users-value/versions/0", "").wantCode(t, "version 0", 422, 42202)
	do(t, srv, "GET", "/subjects/users-value/versions/first", "").wantCode(t, "version word", 422, 42202)
	do(t, srv, "POST", "/subjects/users-value", body("", userV3)).wantCode(t, "lookup unknown schema", 404, 40403)
	do(t, srv, "POST", "/subjects/nope", body("", userV1)).wantCode(t, "lookup in unknown subject", 404, 40401)
	do(t, srv, "POST", "/subjects/x/versions", body("", `{"type":"record","name":"X","fields":[{"name":"a","type":"nope"}]}`)).
		wantCode(t, "invalid avro", 422, 42201)
	do(t, srv, "POST", "/subjects/x/versions", body("", `{not json`)).wantCode(t, "not JSON", 422, 42201)
	do(t, srv, "POST", "/subjects/x/versions", body("", "")).wantCode(t, "empty schema", 422, 42201)
	do(t, srv, "POST", "/subjects/x/versions", body("XML", "<a/>")).wantCode(t, "unknown type", 422, 42201)
	do(t, srv, "POST", "/subjects/x/versions", `{"schema":"\"int\"","colour":"red"}`).wantCode(t, "unknown field", 422, 422)
	do(t, srv, "POST", "/subjects/x/versions", `{"schema":"\"int\"","metadata":{"properties":{}}}`).wantCode(t, "data contract", 422, 422)
	do(t, srv, "POST", "/subjects/x/versions", `{"schema":"\"int\"","id":7}`).wantCode(t, "id outside IMPORT", 422, 42205)
	do(t, srv, "POST", "/subjects/x/versions", `{"schema":"\"int\"","subject":"y"}`).wantCode(t, "body subject differs", 422, 422)
	do(t, srv, "GET", "/no/such/path", "").wantCode(t, "unknown path", 404, 404)
	do(t, srv, "PATCH", "/subjects", "").wantCode(t, "wrong method", 405, 405)
	do(t, srv, "DELETE", "/mode", "").wantCode(t, "no global mode delete", 405, 405)
	do(t, srv, "GET", "/subjects?deleted=maybe", "").wantCode(t, "bad boolean", 400, 400)
	do(t, srv, "GET", "/schemas/ids/1?format=serialized", "").wantCode(t, "format refused", 400, 400)
	do(t, srv, "GET", "/subjects/:.ctx:users/versions", "").wantCode(t, "schema context refused", 422, 422)
}

func TestNormalize(t *testing.T) {
	srv := newTestRegistry(t)
	a := `{"type":"record","name":"N","fields":[{"name":"x","type":"int"}]}`
	b := `{"fields":[{"type":"int","name":"x"}],"name":"N","type":"record"}`
	do(t, srv, "POST", "/subjects/n/versions?normalize=true", body("", a)).want(t, "register", 200, `{"id":1}`)
	// Key order differs: the same schema only when normalizing.
	do(t, srv, "POST", "/subjects/n?normalize=true", body("", b)).want(t, "lookup normalized", 200, "")
	do(t, srv, "POST", "/subjects/n", body("", b)).wantCode(t, "lookup as given", 404, 40403)
	do(t, srv, "POST", "/subjects/n/versions?normalize=true", body("", b)).want(t, "register normalized", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/p/versions?normalize=true", body(TypeProtobuf, `syntax = "proto3"; message M { int32 a = 1; }`)).
		wantCode(t, "protobuf normalize refused", 422, 42201)
}

func TestDeletes(t *testing.T) {
	srv := newTestRegistry(t)
	do(t, srv, "POST", "/subjects/s/versions", body("", userV1)).want(t, "v1", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/s/versions", body("", userV2)).want(t, "v2", 200, `{"id":2}`)

	// A hard delete needs a soft delete first.
	do(t, srv, "DELETE", "/subjects/s/versions/1?permanent=true", "").wantCode(t, "hard before soft", 404, 40407)
	do(t, srv, "DELETE", "/subjects/s/versions/1", "").want(t, "soft delete v1", 200, `1`)
	do(t, srv, "DELETE", "/subjects/s/versions/1", "").wantCode(t, "soft delete twice", 404, 40406)
	do(t, srv, "GET", "/subjects/s/versions", "").want(t, "live versions", 200, `[2]`)
	do(t, srv, "GET", "/subjects/s/versions?deleted=true", "").want(t, "all versions", 200, `[1,2]`)
	do(t, srv, "GET", "/subjects/s/versions?deletedOnly=true", "").want(t, "deleted versions only", 200, `[1]`)
	do(t, srv, "GET", "/subjects?deletedOnly=true", "").want(t, "no subject wholly deleted", 200, `[]`)
	do(t, srv, "GET", "/subjects/s/versions/1", "").wantCode(t, "soft-deleted version", 404, 40402)
	do(t, srv, "GET", "/subjects/s/versions/1?deleted=true", "").want(t, "soft-deleted version shown", 200, "")
	// Ids stay readable after a soft delete, as Confluent's do.
	do(t, srv, "GET", "/schemas/ids/1", "").want(t, "id of soft-deleted", 200, "")
	do(t, srv, "GET", "/schemas/ids/1/subjects", "").want(t, "subjects of soft-deleted id", 200, `[]`)
	do(t, srv, "GET", "/schemas/ids/1/subjects?deleted=true", "").want(t, "subjects of soft-deleted id, deleted", 200, `["s"]`)
	do(t, srv, "DELETE", "/subjects/s/versions/1?permanent=true", "").want(t, "hard delete v1", 200, `1`)
	do(t, srv, "GET", "/subjects/s/versions?deleted=true", "").want(t, "after hard delete", 200, `[2]`)
	do(t, srv, "GET", "/schemas/ids/1", "").wantCode(t, "id gone after hard delete", 404, 40403)
	do(t, srv, "DELETE", "/subjects/s/versions/7", "").wantCode(t, "unknown version", 404, 40402)
	do(t, srv, "DELETE", "/subjects/s/versions/zero", "").wantCode(t, "bad version", 422, 42202)

	// Subjects: soft, then hard.
	do(t, srv, "DELETE", "/subjects/s?permanent=true", "").wantCode(t, "hard subject before soft", 404, 40405)
	do(t, srv, "DELETE", "/subjects/s", "").want(t, "soft delete subject", 200, `[2]`)
	do(t, srv, "DELETE", "/subjects/s", "").wantCode(t, "soft delete subject twice", 404, 40404)
	do(t, srv, "GET", "/subjects", "").want(t, "subjects after soft delete", 200, `[]`)
	do(t, srv, "GET", "/subjects?deleted=true", "").want(t, "deleted subjects", 200, `["s"]`)
	do(t, srv, "GET", "/subjects?deletedOnly=true", "").want(t, "wholly deleted subjects", 200, `["s"]`)
	do(t, srv, "GET", "/subjects/s/versions", "").wantCode(t, "versions of soft-deleted subject", 404, 40401)
	// Registering again after a soft delete continues the versions and
	// reuses the id.
	do(t, srv, "POST", "/subjects/s/versions", body("", userV2)).want(t, "re-register", 200, `{"id":2}`)
	do(t, srv, "GET", "/subjects/s/versions", "").want(t, "versions continue", 200, `[3]`)
	do(t, srv, "DELETE", "/subjects/s", "").want(t, "soft delete again", 200, `[3]`)
	do(t, srv, "DELETE", "/subjects/s?permanent=true", "").want(t, "hard delete subject", 200, `[2,3]`)
	do(t, srv, "GET", "/subjects?deleted=true", "").want(t, "gone", 200, `[]`)
	do(t, srv, "DELETE", "/subjects/s", "").wantCode(t, "delete unknown subject", 404, 40401)
	// New ids never reuse a hard-deleted one.
	do(t, srv, "POST", "/subjects/t/versions", body("", `"bytes"`)).want(t, "new id", 200, `{"id":3}`)
}

func TestReferences(t *testing.T) {
	srv := newTestRegistry(t)
	address := `{"type":"record","name":"Address","namespace":"io.example","fields":[{"name":"city","type":"string"}]}`
	person := `{"type":"record","name":"Person","namespace":"io.example","fields":[{"name":"home","type":"io.example.Address"}]}`
	do(t, srv, "POST", "/subjects/address/versions", body("", address)).want(t, "address", 200, `{"id":1}`)
	ref := Reference{Name: "io.example.Address", Subject: "address", Version: 1}
	do(t, srv, "POST", "/subjects/person/versions", body("", person)).wantCode(t, "person without its reference", 422, 42201)
	do(t, srv, "POST", "/subjects/person/versions", body("", person, ref)).want(t, "person", 200, `{"id":2}`)
	do(t, srv, "GET", "/schemas/ids/2", "").want(t, "person by id", 200,
		fmt.Sprintf(`{"schema":%q,"references":[{"name":"io.example.Address","subject":"address","version":1}]}`, person))
	do(t, srv, "GET", "/subjects/address/versions/1/referencedby", "").want(t, "referencedby", 200, `[2]`)
	do(t, srv, "GET", "/subjects/person/versions/1/referencedby", "").want(t, "referencedby none", 200, `[]`)
	do(t, srv, "DELETE", "/subjects/address/versions/1", "").wantCode(t, "delete a referenced version", 422, 42206)
	do(t, srv, "DELETE", "/subjects/address", "").wantCode(t, "delete a referenced subject", 422, 42206)
	missing := Reference{Name: "io.example.Address", Subject: "address", Version: 5}
	do(t, srv, "POST", "/subjects/person2/versions", body("", person, missing)).wantCode(t, "missing reference", 422, 42201)
	// Version -1 pins the latest.
	do(t, srv, "POST", "/subjects/person/versions", body("", person, Reference{Name: "io.example.Address", Subject: "address", Version: -1})).
		want(t, "latest reference is version 1", 200, `{"id":2}`)

	// Protobuf imports by reference name.
	common := `syntax = "proto3"; package common; message Money { int64 cents = 1; }`
	order := `syntax = "proto3"; package shop; import "common/money.proto"; import "google/protobuf/timestamp.proto";
message Order { common.Money total = 1; google.protobuf.Timestamp at = 2; }`
	do(t, srv, "POST", "/subjects/money/versions", body(TypeProtobuf, common)).want(t, "money", 200, `{"id":3}`)
	do(t, srv, "POST", "/subjects/order/versions", body(TypeProtobuf, order, Reference{Name: "common/money.proto", Subject: "money", Version: 1})).
		want(t, "order", 200, `{"id":4}`)
	do(t, srv, "POST", "/subjects/order2/versions", body(TypeProtobuf, order)).wantCode(t, "order without import", 422, 42201)

	// JSON Schema $ref by reference name.
	jsonAddr := `{"type":"object","properties":{"city":{"type":"string"}}}`
	jsonPerson := `{"type":"object","properties":{"home":{"$ref":"address.json"}}}`
	do(t, srv, "POST", "/subjects/jaddress/versions", body(TypeJSON, jsonAddr)).want(t, "json address", 200, `{"id":5}`)
	do(t, srv, "POST", "/subjects/jperson/versions", body(TypeJSON, jsonPerson, Reference{Name: "address.json", Subject: "jaddress", Version: 1})).
		want(t, "json person", 200, `{"id":6}`)
	do(t, srv, "POST", "/subjects/jperson2/versions", body(TypeJSON, jsonPerson)).wantCode(t, "json person without ref", 422, 42201)
}

func TestConfigAndMode(t *testing.T) {
	srv := newTestRegistry(t)
	do(t, srv, "GET", "/config", "").want(t, "default config", 200, `{"compatibilityLevel":"BACKWARD"}`)
	do(t, srv, "PUT", "/config", `{"compatibility":"full"}`).want(t, "set global", 200, `{"compatibility":"FULL"}`)
	do(t, srv, "GET", "/config", "").want(t, "global", 200, `{"compatibilityLevel":"FULL"}`)
	do(t, srv, "PUT", "/config", `{"compatibility":"SIDEWAYS"}`).wantCode(t, "bad level", 422, 42203)
	do(t, srv, "PUT", "/config", `{"compatibility":"NONE","normalize":true}`).wantCode(t, "unknown config key", 422, 422)
	do(t, srv, "GET", "/config/s", "").wantCode(t, "no subject config", 404, 40408)
	do(t, srv, "GET", "/config/s?defaultToGlobal=true", "").want(t, "subject falls back", 200, `{"compatibilityLevel":"FULL"}`)
	do(t, srv, "PUT", "/config/s", `{"compatibility":"NONE"}`).want(t, "set subject", 200, `{"compatibility":"NONE"}`)
	do(t, srv, "GET", "/config/s", "").want(t, "subject config", 200, `{"compatibilityLevel":"NONE"}`)
	do(t, srv, "DELETE", "/config/s", "").want(t, "delete subject config", 200, `{"compatibilityLevel":"NONE"}`)
	do(t, srv, "GET", "/config/s", "").wantCode(t, "subject config gone", 404, 40408)
	do(t, srv, "DELETE", "/config", "").want(t, "reset global", 200, `{"compatibilityLevel":"FULL"}`)
	do(t, srv, "GET", "/config", "").want(t, "global reset", 200, `{"compatibilityLevel":"BACKWARD"}`)

	do(t, srv, "GET", "/mode", "").want(t, "default mode", 200, `{"mode":"READWRITE"}`)
	do(t, srv, "PUT", "/mode/s", `{"mode":"READONLY"}`).want(t, "subject read-only", 200, `{"mode":"READONLY"}`)
	do(t, srv, "GET", "/mode/s", "").want(t, "subject mode", 200, `{"mode":"READONLY"}`)
	do(t, srv, "GET", "/mode/other", "").wantCode(t, "no subject mode", 404, 40409)
	do(t, srv, "GET", "/mode/other?defaultToGlobal=true", "").want(t, "mode falls back", 200, `{"mode":"READWRITE"}`)
	do(t, srv, "POST", "/subjects/s/versions", body("", userV1)).wantCode(t, "write to read-only", 422, 42205)
	do(t, srv, "POST", "/subjects/other/versions", body("", userV1)).want(t, "other subject writable", 200, `{"id":1}`)
	do(t, srv, "PUT", "/mode", `{"mode":"WRITEONLY"}`).wantCode(t, "bad mode", 422, 42204)
	do(t, srv, "DELETE", "/mode/s", "").want(t, "delete subject mode", 200, `{"mode":"READONLY"}`)
	do(t, srv, "POST", "/subjects/s/versions", body("", userV1)).want(t, "writable again", 200, `{"id":1}`)

	// IMPORT: only into an empty subject (or with force), and with ids.
	do(t, srv, "PUT", "/mode/s", `{"mode":"IMPORT"}`).wantCode(t, "import into a used subject", 422, 42205)
	do(t, srv, "PUT", "/mode/imp", `{"mode":"IMPORT"}`).want(t, "import mode", 200, `{"mode":"IMPORT"}`)
	do(t, srv, "POST", "/subjects/imp/versions", body("", `"int"`)).wantCode(t, "import without id", 422, 42205)
	do(t, srv, "POST", "/subjects/imp/versions", `{"schema":"\"int\"","id":100,"version":5}`).want(t, "import", 200, `{"id":100}`)
	do(t, srv, "POST", "/subjects/imp/versions", `{"schema":"\"long\"","id":1}`).wantCode(t, "import over another schema's id", 422, 42205)
	do(t, srv, "GET", "/subjects/imp/versions/5", "").want(t, "imported version", 200, `{"subject":"imp","version":5,"id":100,"schema":"\"int\""}`)
	do(t, srv, "DELETE", "/mode/imp", "").want(t, "leave import", 200, "")
	// Ids continue after the largest imported one.
	do(t, srv, "POST", "/subjects/after/versions", body("", `"string"`)).want(t, "next id", 200, `{"id":101}`)
}

// TestCompatibilityLevels checks every level against Confluent's
// definition with three Avro schemas: v2 adds a field with a default
// (compatible both ways), v3 adds one without a default (a new reader
// cannot read old data, an old reader can read new data).
func TestCompatibilityLevels(t *testing.T) {
	// removeID drops a field: old readers then miss it (FORWARD breaks),
	// new readers ignore it (BACKWARD holds).
	removeID := `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"email","type":["null","string"],"default":null}]}`
	ageString := `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"id","type":"long"},{"name":"age","type":"string","default":"?"}]}`
	emailRequired := `{"type":"record","name":"User","namespace":"io.example","fields":[{"name":"id","type":"long"},{"name":"email","type":"string"}]}`
	cases := []struct {
		level     string
		history   []string
		candidate string
		ok        bool
	}{
		{CompatNone, []string{userV1}, `"int"`, true},
		{CompatBackward, []string{userV1}, userV2, true},
		{CompatBackward, []string{userV1}, userV3, false},
		{CompatBackward, []string{userV2}, removeID, true},
		{CompatForward, []string{userV1}, userV3, true},
		{CompatForward, []string{userV2}, removeID, false},
		{CompatFull, []string{userV1}, userV2, true},
		{CompatFull, []string{userV1}, userV3, false},
		{CompatFull, []string{userV2}, removeID, false},
		// Transitive levels check every version; the plain ones only the
		// latest. ageString reads userV1 data (age has a default) but
		// not userV3 data (an int age cannot be read as a string).
		{CompatBackward, []string{userV3, userV1}, ageString, true},
		{CompatBackwardTransitive, []string{userV3, userV1}, ageString, false},
		// An old reader of userV2 fills the missing email with its
		// default; one of emailRequired cannot.
		{CompatForward, []string{emailRequired, userV2}, userV1, true},
		{CompatForwardTransitive, []string{emailRequired, userV2}, userV1, false},
		{CompatFullTransitive, []string{userV1, userV2}, userV2, true},
	}
	srv := newTestRegistry(t)
	for i, c := range cases {
		subject := fmt.Sprintf("case-%d", i)
		what := fmt.Sprintf("%s %s", subject, c.level)
		do(t, srv, "PUT", "/config/"+subject, `{"compatibility":"NONE"}`).want(t, what+": level NONE", 200, "")
		for _, s := range c.history {
			do(t, srv, "POST", "/subjects/"+subject+"/versions", body("", s)).want(t, what+": history", 200, "")
		}
		do(t, srv, "PUT", "/config/"+subject, fmt.Sprintf(`{"compatibility":%q}`, c.level)).want(t, what+": level", 200, "")
		// /versions checks what registering would check.
		do(t, srv, "POST", "/compatibility/subjects/"+subject+"/versions", body("", c.candidate)).
			want(t, what+": check", 200, fmt.Sprintf(`{"is_compatible":%v}`, c.ok))
		reg := do(t, srv, "POST", "/subjects/"+subject+"/versions", body("", c.candidate))
		if c.ok {
			reg.want(t, what+": register", 200, "")
		} else {
			reg.wantCode(t, what+": register", 409, 409)
		}
	}
}

func TestCompatibilityEndpoint(t *testing.T) {
	srv := newTestRegistry(t)
	do(t, srv, "POST", "/subjects/s/versions", body("", userV1)).want(t, "v1", 200, "")
	do(t, srv, "POST", "/compatibility/subjects/s/versions/latest", body("", userV2)).want(t, "compatible", 200, `{"is_compatible":true}`)
	do(t, srv, "POST", "/compatibility/subjects/s/versions/1?verbose=true", body("", userV2)).
		want(t, "compatible verbose", 200, `{"is_compatible":true,"messages":[]}`)
	a := do(t, srv, "POST", "/compatibility/subjects/s/versions/latest?verbose=true", body("", userV3))
	a.want(t, "incompatible verbose", 200, "")
	if !strings.Contains(a.body, `"is_compatible":false`) || !strings.Contains(a.body, "age") {
		t.Fatalf("verbose answer %s does not say which field breaks", a.body)
	}
	do(t, srv, "POST", "/compatibility/subjects/s/versions/7", body("", userV2)).wantCode(t, "unknown version", 404, 40402)
	do(t, srv, "POST", "/compatibility/subjects/nope/versions/latest", body("", userV2)).wantCode(t, "unknown subject", 404, 40401)
	do(t, srv, "POST", "/compatibility/subjects/nope/versions", body("", userV2)).want(t, "no versions: compatible", 200, `{"is_compatible":true}`)
	do(t, srv, "POST", "/compatibility/subjects/s/versions/latest", body(TypeJSON, `{"type":"string"}`)).
		want(t, "another type", 200, `{"is_compatible":false}`)
}
