package schemaregistry

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Schema types, as Confluent names them in schemaType. AVRO is the default
// and, as Confluent does, is left out of answers and stored records.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// Reference names another registered schema that a schema imports: for
// Avro a named type, for Protobuf an import path, for JSON Schema a $ref
// URL.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaVersion is one version of one subject: the value of a SCHEMA
// record of the _schemas topic.
type schemaVersion struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Deleted    bool        `json:"deleted"`
}

// typ is the schema type with AVRO filled in.
func (v *schemaVersion) typ() string {
	if v.SchemaType == "" {
		return TypeAvro
	}
	return v.SchemaType
}

// sameContent reports whether v holds the same schema as the given one:
// Confluent gives one id to one (type, schema text, references) triple.
func (v *schemaVersion) sameContent(typ, schema string, refs []Reference) bool {
	return v.typ() == typ && v.Schema == schema && slices.Equal(v.References, refs)
}

// Key types of the _schemas topic, as Confluent's KafkaStore and Karapace
// write them.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyNoop          = "NOOP"
)

// recordKey is the JSON key of a _schemas record. Subject is a pointer
// because the global CONFIG and MODE keys carry "subject":null. Confluent
// writes magic 1 for SCHEMA keys and 0 for the others.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version *int    `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// globalKey has "subject":null spelled out, as Confluent writes it (the
// omitempty of recordKey would drop it).
type globalKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject"`
	Magic   int     `json:"magic"`
}

func schemaKey(subject string, version int) []byte {
	return mustJSON(recordKey{KeyType: keySchema, Subject: &subject, Version: &version, Magic: 1})
}

// settingKey is the key of a CONFIG or MODE record; subject "" is the
// global one.
func settingKey(keyType, subject string) []byte {
	if subject == "" {
		return mustJSON(globalKey{KeyType: keyType, Magic: 0})
	}
	return mustJSON(recordKey{KeyType: keyType, Subject: &subject, Magic: 0})
}

func deleteSubjectKey(subject string) []byte {
	return mustJSON(recordKey{KeyType: keyDeleteSubject, Subject: &subject, Magic: 0})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and numbers are marshalled
	}
	return b
}

// configValue is a CONFIG record's value.
type configValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

// modeValue is a MODE record's value.
type modeValue struct {
	Mode string `json:"mode"`
}

// deleteSubjectValue is a DELETE_SUBJECT record's value: every version up
// to Version is soft-deleted.
type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// state is what the _schemas topic says, read in order. Only apply
// changes it.
type state struct {
	subjects map[string]map[int]*schemaVersion
	// configs and modes by subject; "" is the global setting.
	configs map[string]string
	modes   map[string]string
	// maxID is the largest id ever read, kept after a hard delete so that
	// an id is never given to another schema.
	maxID int
}

func newState() *state {
	return &state{
		subjects: map[string]map[int]*schemaVersion{},
		configs:  map[string]string{},
		modes:    map[string]string{},
	}
}

// apply folds one record of the _schemas topic into the state. A record it
// cannot read is skipped and an error for the caller to log: the topic may
// hold records of a newer registry, and skipping one is what Confluent
// does too. A record with fields Sluice does not implement (a newer
// Confluent's metadata, ruleSet, normalize, ...) is applied without them,
// and the error names them, so that the log says what is not honoured.
func (s *state) apply(key, value []byte) error {
	if err := s.applyRecord(key, value); err != nil {
		return err
	}
	return unknownFields(key, value)
}

// knownFields are the value fields apply reads, by key type.
var knownFields = map[string][]string{
	keySchema:        {"subject", "version", "id", "schema", "schemaType", "references", "deleted"},
	keyConfig:        {"compatibilityLevel"},
	keyMode:          {"mode"},
	keyDeleteSubject: {"subject", "version"},
}

// unknownFields names the fields of a record's value that apply did not
// read; empty (null) ones do not count.
func unknownFields(key, value []byte) error {
	var k recordKey
	if value == nil || json.Unmarshal(key, &k) != nil {
		return nil
	}
	known, ok := knownFields[k.KeyType]
	if !ok {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(value, &fields) != nil {
		return nil
	}
	var extra []string
	for f, v := range fields {
		if !slices.Contains(known, f) && string(v) != "null" {
			extra = append(extra, f)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return fmt.Errorf("%s record %s applied without the fields %v, which Sluice's registry does not implement", k.KeyType, key, extra)
}

func (s *state) applyRecord(key, value []byte) error {
	var k recordKey
	if err := json.Unmarshal(key, &k); err != nil {
		return fmt.Errorf("unreadable key %q: %w", key, err)
	}
	subject := ""
	if k.Subject != nil {
		subject = *k.Subject
	}
	switch k.KeyType {
	case keySchema:
		if k.Subject == nil || k.Version == nil {
			return fmt.Errorf("SCHEMA key %q without subject or version", key)
		}
		if value == nil {
			s.removeVersion(subject, *k.Version)
			return nil
		}
		var v schemaVersion
		if err := json.Unmarshal(value, &v); err != nil {
			return fmt.Errorf("SCHEMA value of %q: %w", key, err)
		}
		if v.SchemaType == TypeAvro {
			v.SchemaType = ""
		}
		v.Subject, v.Version = subject, *k.Version
		versions := s.subjects[subject]
		if versions == nil {
			versions = map[int]*schemaVersion{}
			s.subjects[subject] = versions
		}
		versions[v.Version] = &v
		s.maxID = max(s.maxID, v.ID)
	case keyConfig:
		if value == nil {
			delete(s.configs, subject)
			return nil
		}
		var c configValue
		if err := json.Unmarshal(value, &c); err != nil {
			return fmt.Errorf("CONFIG value of %q: %w", key, err)
		}
		s.configs[subject] = c.CompatibilityLevel
	case keyMode:
		if value == nil {
			delete(s.modes, subject)
			return nil
		}
		var m modeValue
		if err := json.Unmarshal(value, &m); err != nil {
			return fmt.Errorf("MODE value of %q: %w", key, err)
		}
		s.modes[subject] = m.Mode
	case keyDeleteSubject:
		if value == nil {
			return nil
		}
		var d deleteSubjectValue
		if err := json.Unmarshal(value, &d); err != nil {
			return fmt.Errorf("DELETE_SUBJECT value of %q: %w", key, err)
		}
		for n, v := range s.subjects[subject] {
			if n <= d.Version {
				v.Deleted = true
			}
		}
	case keyNoop:
		// Confluent writes NOOP records to find the end of the topic.
	default:
		return fmt.Errorf("unknown keytype %q", k.KeyType)
	}
	return nil
}

func (s *state) removeVersion(subject string, version int) {
	versions := s.subjects[subject]
	delete(versions, version)
	if len(versions) == 0 {
		delete(s.subjects, subject)
	}
}

// versions lists a subject's versions in order, the soft-deleted ones only
// when deleted is set.
func (s *state) versions(subject string, deleted bool) []*schemaVersion {
	var out []*schemaVersion
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// latest is the subject's newest live version, or nil.
func (s *state) latest(subject string) *schemaVersion {
	vs := s.versions(subject, false)
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// maxVersion is the subject's largest version number, soft-deleted ones
// included: Confluent keeps counting after a soft delete.
func (s *state) maxVersion(subject string) int {
	n := 0
	for v := range s.subjects[subject] {
		n = max(n, v)
	}
	return n
}

// byID lists every version that holds schema id, in subject and version
// order.
func (s *state) byID(id int, deleted bool) []*schemaVersion {
	var out []*schemaVersion
	for _, versions := range s.subjects {
		for _, v := range versions {
			if v.ID == id && (deleted || !v.Deleted) {
				out = append(out, v)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// idOf is the id already given to this schema content in any subject, or 0.
func (s *state) idOf(typ, schema string, refs []Reference) int {
	for _, versions := range s.subjects {
		for _, v := range versions {
			if v.sameContent(typ, schema, refs) {
				return v.ID
			}
		}
	}
	return 0
}

// referencedBy lists the ids of live schemas that reference subject at
// version.
func (s *state) referencedBy(subject string, version int) []int {
	var ids []int
	for _, versions := range s.subjects {
		for _, v := range versions {
			if v.Deleted {
				continue
			}
			for _, r := range v.References {
				if r.Subject == subject && r.Version == version && !slices.Contains(ids, v.ID) {
					ids = append(ids, v.ID)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// subjectNames lists subjects with at least one live version, or with any
// version when deleted is set.
func (s *state) subjectNames(deleted bool) []string {
	var out []string
	for name := range s.subjects {
		if len(s.versions(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
