// Package schemaregistry is a Schema Registry with Confluent's REST API
// (subjects, versions, ids, references, compatibility checks, config, mode,
// soft and hard deletes) whose state is a compacted Kafka topic written as
// Confluent's registry and Karapace write their _schemas topic. Instances
// that share the topic agree: each reads it to the end at start and keeps
// tailing it, and writes are ordered by one transactional id (see write).
package schemaregistry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// schemaRequest is the body of a register, lookup or compatibility request.
type schemaRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType"`
	References []Reference `json:"references"`
	// Subject, when given, must be the path's (franz-go's sr client sends
	// it with an id and version).
	Subject string `json:"subject"`
	// ID and Version may be given only in IMPORT mode.
	ID      int `json:"id"`
	Version int `json:"version"`
	// Data contracts are not implemented: a request that carries them is
	// refused (see check) rather than registered without them.
	Metadata json.RawMessage `json:"metadata"`
	RuleSet  json.RawMessage `json:"ruleSet"`
}

func (q *schemaRequest) check(subject string) error {
	if q.Subject != "" && q.Subject != subject {
		return errUnprocessable(fmt.Sprintf("subject %q in the body differs from subject %q in the path", q.Subject, subject))
	}
	if q.Schema == "" {
		return &apiError{422, 42201, "Invalid schema: empty schema"}
	}
	if q.SchemaType == "" {
		q.SchemaType = TypeAvro
	}
	switch q.SchemaType {
	case TypeAvro, TypeProtobuf, TypeJSON:
	default:
		return &apiError{422, 42201, fmt.Sprintf("Invalid schema: unknown schemaType %q (AVRO, PROTOBUF or JSON)", q.SchemaType)}
	}
	for _, raw := range []struct {
		name string
		v    json.RawMessage
	}{{"metadata", q.Metadata}, {"ruleSet", q.RuleSet}} {
		if len(raw.v) > 0 && string(raw.v) != "null" {
			return errUnprocessable(fmt.Sprintf("%s is not supported by Sluice's schema registry (data contracts are not implemented)", raw.name))
		}
	}
	for i, ref := range q.References {
		if ref.Name == "" || ref.Subject == "" {
			return &apiError{422, 42201, fmt.Sprintf("Invalid schema: references[%d] needs a name and a subject", i)}
		}
		if ref.Version < 1 && ref.Version != -1 {
			return &apiError{422, 42201, fmt.Sprintf("Invalid schema: references[%d] (%s) has version %d: give a version from 1, or -1 for the latest", i, ref.Name, ref.Version)}
		}
	}
	return nil
}

// resolveDependencies lists the schemas refs import, transitively, each
// before the schemas that reference it. A reference to version -1 is
// pinned to the subject's latest version.
func resolveDependencies(st *state, refs []Reference) ([]Reference, []dependency, error) {
	var deps []dependency
	seen := map[string]bool{}
	var visit func(refs []Reference, depth int) ([]Reference, error)
	visit = func(refs []Reference, depth int) ([]Reference, error) {
		if depth > 32 {
			return nil, fmt.Errorf("references nest deeper than 32 levels (a cycle?)")
		}
		pinned := make([]Reference, 0, len(refs))
		for _, ref := range refs {
			var v *schemaVersion
			if ref.Version == -1 {
				v = st.latest(ref.Subject)
			} else if vs := st.subjects[ref.Subject]; vs != nil {
				v = vs[ref.Version]
			}
			if v == nil {
				return nil, fmt.Errorf("reference %q: subject %q version %d not found", ref.Name, ref.Subject, ref.Version)
			}
			ref.Version = v.Version
			pinned = append(pinned, ref)
			if seen[ref.Name] {
				continue
			}
			seen[ref.Name] = true
			if _, err := visit(v.References, depth+1); err != nil {
				return nil, err
			}
			deps = append(deps, dependency{name: ref.Name, schema: v.Schema})
		}
		return pinned, nil
	}
	pinned, err := visit(refs, 0)
	if err != nil {
		return nil, nil, err
	}
	if len(pinned) == 0 {
		pinned = nil
	}
	return pinned, deps, nil
}

// parseRequest parses a request's schema against the state: its
// references pinned, its text as stored.
func parseRequest(st *state, q *schemaRequest, normalize bool) (*parsedSchema, []Reference, error) {
	refs, deps, err := resolveDependencies(st, q.References)
	if err != nil {
		return nil, nil, errInvalidSchema(err)
	}
	p, err := parseSchema(q.SchemaType, q.Schema, deps, normalize)
	if err != nil {
		return nil, nil, errInvalidSchema(err)
	}
	return p, refs, nil
}

// parseStored parses a registered version, for compatibility checks.
func parseStored(st *state, v *schemaVersion) (*parsedSchema, error) {
	_, deps, err := resolveDependencies(st, v.References)
	if err != nil {
		return nil, fmt.Errorf("subject %q version %d: %w", v.Subject, v.Version, err)
	}
	p, err := parseSchema(v.typ(), v.Schema, deps, false)
	if err != nil {
		return nil, fmt.Errorf("subject %q version %d no longer parses: %w", v.Subject, v.Version, err)
	}
	return p, nil
}

// sameSchema compares a stored version with a parsed request; with
// normalize, as normalized texts.
func sameSchema(v *schemaVersion, p *parsedSchema, refs []Reference, normalize bool) bool {
	if v.typ() != p.typ || !slices.Equal(v.References, refs) {
		return false
	}
	if v.Schema == p.canonical {
		return true
	}
	if normalize && p.typ != TypeProtobuf {
		n, err := jsonText(v.Schema, true)
		return err == nil && n == p.canonical
	}
	return false
}

// compatibility is the level that applies to subject.
func (st *state) compatibility(subject string) string {
	if c, ok := st.configs[subject]; ok {
		return c
	}
	if c, ok := st.configs[""]; ok {
		return c
	}
	return DefaultCompatibility
}

// Modes, as Confluent spells them.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"
)

func (st *state) mode(subject string) string {
	if m, ok := st.modes[subject]; ok {
		return m
	}
	if m, ok := st.modes[""]; ok {
		return m
	}
	return ModeReadWrite
}

// writable refuses writes to a subject in READONLY mode.
func (st *state) writable(subject string) error {
	if st.mode(subject) == ModeReadOnly {
		return errNotPermitted(fmt.Sprintf("Subject %s is in read-only mode", subject))
	}
	return nil
}

// problemsAgainst checks p against the versions the subject's level
// names; a version that no longer parses is a problem, not a pass.
func problemsAgainst(st *state, level string, p *parsedSchema, versions []*schemaVersion) []string {
	var problems []string
	for _, v := range checkedAgainst(level, versions) {
		existing, err := parseStored(st, v)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		problems = append(problems, compatibilityProblems(level, p, existing, v.Version)...)
	}
	return problems
}

// schemaCall reads what register, lookup and the compatibility check
// share: the subject, the boolean query parameters named, and the body.
func schemaCall(req *http.Request, params ...string) (string, []bool, *schemaRequest, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return "", nil, nil, err
	}
	fl, err := flags(req, params...)
	if err != nil {
		return "", nil, nil, err
	}
	var q schemaRequest
	if err := decode(req, &q); err != nil {
		return "", nil, nil, err
	}
	if err := q.check(subject); err != nil {
		return "", nil, nil, err
	}
	return subject, fl, &q, nil
}

func (r *Registry) register(req *http.Request) (any, error) {
	subject, fl, q, err := schemaCall(req, "normalize")
	if err != nil {
		return nil, err
	}
	normalize := fl[0]
	var id int
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		if err := st.writable(subject); err != nil {
			return nil, err
		}
		importing := st.mode(subject) == ModeImport
		if !importing && (q.ID != 0 || q.Version != 0) {
			return nil, errNotPermitted(fmt.Sprintf("an id or version can be given only in IMPORT mode; subject %s is in %s mode", subject, st.mode(subject)))
		}
		if importing && q.ID < 1 {
			return nil, errNotPermitted(fmt.Sprintf("subject %s is in IMPORT mode: give the schema's id (from 1)", subject))
		}
		p, refs, err := parseRequest(st, q, normalize)
		if err != nil {
			return nil, err
		}
		live := st.versions(subject, false)
		for _, v := range live {
			if sameSchema(v, p, refs, normalize) && (!importing || v.ID == q.ID) {
				id = v.ID
				return nil, nil // registered already: same id, no write
			}
		}
		if !importing {
			if problems := problemsAgainst(st, st.compatibility(subject), p, live); len(problems) > 0 {
				return nil, errIncompatible(subject, problems)
			}
		}
		version := st.maxVersion(subject) + 1
		id = st.idOf(p.typ, p.canonical, refs)
		if importing {
			if other := st.byID(q.ID, true); len(other) > 0 && !other[0].sameContent(p.typ, p.canonical, refs) {
				return nil, errNotPermitted(fmt.Sprintf("Overwrite new schema with id %d is not permitted: the id holds another schema", q.ID))
			}
			id = q.ID
			if q.Version != 0 {
				if q.Version < 1 {
					return nil, errInvalidVersion(strconv.Itoa(q.Version))
				}
				if st.subjects[subject][q.Version] != nil {
					return nil, errNotPermitted(fmt.Sprintf("Overwrite of subject %s version %d is not permitted", subject, q.Version))
				}
				version = q.Version
			}
		} else if id == 0 {
			id = st.maxID + 1
		}
		typ := p.typ
		if typ == TypeAvro {
			typ = ""
		}
		value := mustJSON(schemaVersion{Subject: subject, Version: version, ID: id, Schema: p.canonical, SchemaType: typ, References: refs})
		return []*kgo.Record{record(schemaKey(subject, version), value)}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]int{"id": id}, nil
}

func (r *Registry) lookup(req *http.Request) (any, error) {
	subject, fl, q, err := schemaCall(req, "normalize", "deleted")
	if err != nil {
		return nil, err
	}
	normalize, deleted := fl[0], fl[1]
	var found *schemaVersion
	err = r.read(req.Context(), func(st *state) error {
		vs := st.versions(subject, deleted)
		if len(vs) == 0 {
			return errSubjectNotFound(subject)
		}
		p, refs, err := parseRequest(st, q, normalize)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if sameSchema(v, p, refs, normalize) {
				found = v
				return nil
			}
		}
		return errSchemaNotInSubject
	})
	if err != nil {
		return nil, err
	}
	return answerOf(found), nil
}

func (r *Registry) deleteSubject(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	permanent, err := flag(req, "permanent")
	if err != nil {
		return nil, err
	}
	deleted := []int{}
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		deleted = deleted[:0]
		if err := st.writable(subject); err != nil {
			return nil, err
		}
		all := st.versions(subject, true)
		if len(all) == 0 {
			return nil, errSubjectNotFound(subject)
		}
		live := st.versions(subject, false)
		for _, v := range all {
			if ids := st.referencedBy(subject, v.Version); len(ids) > 0 {
				return nil, errReferenceExists(subject, v.Version, ids)
			}
		}
		if !permanent {
			if len(live) == 0 {
				return nil, errSubjectSoftDeleted(subject)
			}
			for _, v := range live {
				deleted = append(deleted, v.Version)
			}
			value := mustJSON(deleteSubjectValue{Subject: subject, Version: st.maxVersion(subject)})
			return []*kgo.Record{record(deleteSubjectKey(subject), value)}, nil
		}
		if len(live) > 0 {
			return nil, errSubjectNotSoftDeleted(subject)
		}
		var recs []*kgo.Record
		for _, v := range all {
			deleted = append(deleted, v.Version)
			recs = append(recs, record(schemaKey(subject, v.Version), nil))
		}
		// The subject's own settings go with it, as Confluent's do.
		if _, ok := st.configs[subject]; ok {
			recs = append(recs, record(settingKey(keyConfig, subject), nil))
		}
		if _, ok := st.modes[subject]; ok {
			recs = append(recs, record(settingKey(keyMode, subject), nil))
		}
		return recs, nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

func (r *Registry) deleteVersion(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	permanent, err := flag(req, "permanent")
	if err != nil {
		return nil, err
	}
	raw := req.PathValue("version")
	if _, err := parseVersion(raw); err != nil {
		return nil, err
	}
	var version int
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		if err := st.writable(subject); err != nil {
			return nil, err
		}
		// A numbered version may be soft-deleted already (an error
		// below); "latest" is the newest live version, or for a
		// permanent delete the newest of all, since only soft-deleted
		// versions can be deleted permanently.
		v, err := findVersion(st, subject, raw, permanent || raw != "latest" && raw != "-1")
		if err != nil {
			return nil, err
		}
		version = v.Version
		if ids := st.referencedBy(subject, v.Version); len(ids) > 0 {
			return nil, errReferenceExists(subject, v.Version, ids)
		}
		if permanent {
			if !v.Deleted {
				return nil, errVersionNotSoftDeleted(subject, v.Version)
			}
			return []*kgo.Record{record(schemaKey(subject, v.Version), nil)}, nil
		}
		if v.Deleted {
			return nil, errVersionSoftDeleted(subject, v.Version)
		}
		soft := *v
		soft.Deleted = true
		return []*kgo.Record{record(schemaKey(subject, v.Version), mustJSON(soft))}, nil
	})
	if err != nil {
		return nil, err
	}
	return version, nil
}

func (r *Registry) checkCompatibility(req *http.Request) (any, error) {
	subject, fl, q, err := schemaCall(req, "verbose", "normalize")
	if err != nil {
		return nil, err
	}
	verbose, normalize := fl[0], fl[1]
	if q.ID != 0 || q.Version != 0 {
		return nil, errUnprocessable("id and version are not part of a compatibility check")
	}
	var problems []string
	err = r.read(req.Context(), func(st *state) error {
		problems = nil
		p, _, err := parseRequest(st, q, normalize)
		if err != nil {
			return err
		}
		level := st.compatibility(subject)
		live := st.versions(subject, false)
		if raw := req.PathValue("version"); raw != "" {
			v, err := findVersion(st, subject, raw, false)
			if err != nil {
				return err
			}
			// Against one version, the level says only the direction.
			live = []*schemaVersion{v}
		}
		problems = problemsAgainst(st, level, p, live)
		return nil
	})
	if err != nil {
		return nil, err
	}
	answer := map[string]any{"is_compatible": len(problems) == 0}
	if verbose {
		if problems == nil {
			problems = []string{}
		}
		answer["messages"] = problems
	}
	return answer, nil
}

// setting is one of the two per-subject settings with a global fallback:
// the compatibility level (/config) and the mode (/mode).
type setting struct {
	// answerKey names the value in GET's answer.
	answerKey string
	// values are the subject-level values, "" the global one.
	values func(*state) map[string]string
	// effective is the value that applies to a subject.
	effective func(*state, string) string
	// notSet is GET's error for a subject without its own value.
	notSet func(subject string) error
}

var (
	compatibilitySetting = setting{"compatibilityLevel", func(st *state) map[string]string { return st.configs },
		(*state).compatibility, errNoSubjectCompatibility}
	modeSetting = setting{"mode", func(st *state) map[string]string { return st.modes },
		(*state).mode, errNoSubjectMode}
)

// getSetting answers GET /config[/{s}] or /mode[/{s}]: a subject's own
// value, or with ?defaultToGlobal=true the value that applies to it.
func (r *Registry) getSetting(s setting) func(*http.Request) (any, error) {
	return func(req *http.Request) (any, error) {
		subject, err := subjectOf(req)
		if err != nil {
			return nil, err
		}
		toGlobal, err := flag(req, "defaultToGlobal")
		if err != nil {
			return nil, err
		}
		var value string
		err = r.read(req.Context(), func(st *state) error {
			if subject == "" || toGlobal {
				value = s.effective(st, subject)
				return nil
			}
			v, ok := s.values(st)[subject]
			if !ok {
				return s.notSet(subject)
			}
			value = v
			return nil
		})
		if err != nil {
			return nil, err
		}
		return map[string]string{s.answerKey: value}, nil
	}
}

// configRequest is the body of PUT /config: Confluent's ConfigUpdateRequest
// fields other than compatibility are refused by decode.
type configRequest struct {
	Compatibility string `json:"compatibility"`
}

func (r *Registry) putConfig(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	var q configRequest
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	level, ok := parseCompatibility(q.Compatibility)
	if !ok {
		return nil, errInvalidCompatibility(q.Compatibility)
	}
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		if cur, ok := st.configs[subject]; ok && cur == level {
			return nil, nil
		}
		return []*kgo.Record{record(settingKey(keyConfig, subject), mustJSON(configValue{CompatibilityLevel: level}))}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibility": level}, nil
}

func (r *Registry) deleteConfig(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	var old string
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		old = st.compatibility(subject)
		if subject != "" {
			if len(st.versions(subject, true)) == 0 && st.configs[subject] == "" {
				return nil, errSubjectNotFound(subject)
			}
			if _, ok := st.configs[subject]; !ok {
				return nil, errNoSubjectCompatibility(subject)
			}
		} else if _, ok := st.configs[""]; !ok {
			return nil, nil // already the default
		}
		return []*kgo.Record{record(settingKey(keyConfig, subject), nil)}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"compatibilityLevel": old}, nil
}

type modeRequest struct {
	Mode string `json:"mode"`
}

func (r *Registry) putMode(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	force, err := flag(req, "force")
	if err != nil {
		return nil, err
	}
	var q modeRequest
	if err := decode(req, &q); err != nil {
		return nil, err
	}
	switch q.Mode {
	case ModeReadWrite, ModeReadOnly, ModeImport:
	default:
		return nil, errInvalidMode(q.Mode)
	}
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		if q.Mode == ModeImport && !force {
			// Importing into a subject that has schemas could give
			// one id two schemas; Confluent asks for force.
			if subject == "" && len(st.subjectNames(true)) > 0 || subject != "" && len(st.versions(subject, true)) > 0 {
				return nil, errNotPermitted("Cannot import since found existing subjects (add ?force=true to import anyway)")
			}
		}
		if cur, ok := st.modes[subject]; ok && cur == q.Mode {
			return nil, nil
		}
		return []*kgo.Record{record(settingKey(keyMode, subject), mustJSON(modeValue{Mode: q.Mode}))}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"mode": q.Mode}, nil
}

func (r *Registry) deleteMode(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	var old string
	err = r.write(req.Context(), func(st *state) ([]*kgo.Record, error) {
		m, ok := st.modes[subject]
		if !ok {
			return nil, errNoSubjectMode(subject)
		}
		old = m
		return []*kgo.Record{record(settingKey(keyMode, subject), nil)}, nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"mode": old}, nil
}
