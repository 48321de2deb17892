package converters

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/tlsconf"
)

// This file holds what Confluent's three registry converters (Avro,
// Protobuf, JSON Schema) share: the keys of AbstractKafkaSchemaSerDeConfig
// they honour, the registry client with its caches, the subject name
// strategies and the wire frame (magic byte 0, then the schema id as a
// 4-byte big-endian integer, then the payload).

// recordOnly are the converters that are not header converters: Confluent's
// registry converters implement Connect's Converter but not HeaderConverter,
// so header.converter refuses them and the plugin list does not offer them
// as header converters.
var recordOnly = map[string]bool{
	AvroConverterClass:       true,
	ProtobufConverterClass:   true,
	JSONSchemaConverterClass: true,
}

// magicByte opens every frame Confluent's serializers write.
const magicByte = 0

// frameHeaderLen is the magic byte plus the 4-byte schema id.
const frameHeaderLen = 5

// registryTimeout bounds one registry call. A converter has no context of
// its own; a registry that hangs must still give the task an error it can
// retry instead of blocking the record path forever.
const registryTimeout = 30 * time.Second

// Confluent's subject name strategies, by the class names its converters
// take in key.subject.name.strategy / value.subject.name.strategy.
const (
	topicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	recordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	topicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// defaultOnlyKeys are serde keys Sluice takes only at the value Confluent
// defaults them to: any other value asks for a behaviour Sluice does not
// have, so Configure refuses it by name rather than ignore it.
var defaultOnlyKeys = map[string]string{
	"normalize.schemas":                  "false",
	"schema.registry.url.randomize":      "false",
	"use.schema.id":                      "-1",
	"use.schema.guid":                    "",
	"id.compatibility.strict":            "true",
	"propagate.schema.tags":              "false",
	"use.latest.with.metadata":           "",
	"schema.reflection":                  "false",
	"auto.register.schemas.with.retries": "false",
	"context.name.strategy":              "io.confluent.kafka.serializers.context.NullContextNameStrategy",
	"key.schema.id.serializer":           "io.confluent.kafka.serializers.schema.id.PrefixSchemaIdSerializer",
	"value.schema.id.serializer":         "io.confluent.kafka.serializers.schema.id.PrefixSchemaIdSerializer",
	"key.schema.id.deserializer":         "io.confluent.kafka.serializers.schema.id.DualSchemaIdDeserializer",
	"value.schema.id.deserializer":       "io.confluent.kafka.serializers.schema.id.DualSchemaIdDeserializer",
	"bearer.auth.credentials.source":     "STATIC_TOKEN",
	"bearer.auth.token":                  "",
	"schema.registry.bearer.auth.token":  "",
	"proxy.host":                         "",
	"proxy.port":                         "-1",
	"rule.executors":                     "",
	"rule.actions":                       "",
}

// registryKeys are the serde keys registryClient itself reads.
var registryKeys = map[string]bool{
	"schema.registry.url":                  true,
	"basic.auth.credentials.source":        true,
	"basic.auth.user.info":                 true,
	"schema.registry.basic.auth.user.info": true,
	"auto.register.schemas":                true,
	"use.latest.version":                   true,
	"latest.compatibility.strict":          true,
	"key.subject.name.strategy":            true,
	"value.subject.name.strategy":          true,
	"max.schemas.per.subject":              true,
	"schemas.cache.config":                 true,
}

// registryClient is the registry side of one configured converter: the
// franz-go client, the settings of the serde keys and the caches that keep
// the record path from calling the registry once per record.
type registryClient struct {
	converter  string // "AvroConverter", for messages
	schemaType sr.SchemaType
	isKey      bool

	client       *sr.Client
	autoRegister bool
	useLatest    bool
	latestStrict bool
	strategy     string

	// ids maps a subject and a schema's text to its id (write path);
	// schemas maps an id to the registry's schema (read path); versions
	// maps a subject and id to the subject's version of it, which becomes
	// the Connect schema's version as in Confluent's converters; latest
	// maps a subject to its latest version (use.latest.version).
	ids      *boundedCache[subjectText, int]
	schemas  *boundedCache[int, sr.Schema]
	versions *boundedCache[subjectID, int]
	latest   *boundedCache[string, sr.SubjectSchema]

	// dataCacheSize is schemas.cache.config: how many converted schemas the
	// converter itself keeps (Confluent's AvroData cache).
	dataCacheSize int
}

type subjectText struct{ subject, text string }

type subjectID struct {
	subject string
	id      int
}

// configureRegistry reads the serde keys of props into a registryClient.
// own lists the converter's own (format) keys, which it reads itself;
// every key that is neither its own nor a serde key Sluice honours is
// refused by name in ce.
func configureRegistry(ce *connectors.ConfigError, converter string, schemaType sr.SchemaType, props map[string]string, isKey bool, own map[string]bool) *registryClient {
	rc := &registryClient{converter: converter, schemaType: schemaType, isKey: isKey}
	for k, v := range props {
		switch {
		case own[k] || registryKeys[k] || strings.HasPrefix(k, "schema.registry.ssl."):
		case hasKey(defaultOnlyKeys, k):
			if !strings.EqualFold(strings.TrimSpace(v), defaultOnlyKeys[k]) {
				// The value is not echoed: bearer.auth.token is among these.
				ce.Add(k, fmt.Sprintf("%s in Sluice supports only %q (Confluent's default) here", converter, defaultOnlyKeys[k]))
			}
		default:
			ce.Add(k, fmt.Sprintf("not a key %s in Sluice supports", converter))
		}
	}

	urls, user, pass := registryURLs(ce, props)
	rc.autoRegister = parseBool(ce, props, "auto.register.schemas", true)
	rc.useLatest = parseBool(ce, props, "use.latest.version", false)
	rc.latestStrict = parseBool(ce, props, "latest.compatibility.strict", true)
	if _, set := props["latest.compatibility.strict"]; set && !rc.useLatest {
		ce.Add("latest.compatibility.strict", "applies only with use.latest.version=true, which is not set")
	}
	strategyKey := "value.subject.name.strategy"
	if isKey {
		strategyKey = "key.subject.name.strategy"
	}
	rc.strategy = topicNameStrategy
	if v, ok := props[strategyKey]; ok {
		switch v = strings.TrimSpace(v); v {
		case topicNameStrategy, recordNameStrategy, topicRecordNameStrategy:
			rc.strategy = v
		default:
			ce.Add(strategyKey, fmt.Sprintf("%q is not a subject name strategy Sluice supports (%s, %s, %s)", v, topicNameStrategy, recordNameStrategy, topicRecordNameStrategy))
		}
	}
	idCache := parsePositiveInt(ce, props, "max.schemas.per.subject", 1000)
	rc.dataCacheSize = parsePositiveInt(ce, props, "schemas.cache.config", 1000)

	switch src := strings.ToUpper(strings.TrimSpace(valueOrDefault(props, "basic.auth.credentials.source", "URL"))); src {
	case "URL":
		// user and pass come from the URLs' user info, if any. User info
		// given in the keys would not be used: refuse it rather than let
		// the registry answer 401 for a reason the config hides.
		for _, k := range []string{"basic.auth.user.info", "schema.registry.basic.auth.user.info"} {
			if _, ok := props[k]; ok {
				ce.Add(k, "is used only with basic.auth.credentials.source=USER_INFO, and the source is URL")
			}
		}
	case "USER_INFO":
		info, ok := props["schema.registry.basic.auth.user.info"]
		key := "schema.registry.basic.auth.user.info"
		if !ok {
			info, key = props["basic.auth.user.info"], "basic.auth.user.info"
		}
		u, p, found := strings.Cut(info, ":")
		if !found {
			ce.Add(key, "basic.auth.credentials.source=USER_INFO needs user info in the form user:password")
		}
		user, pass = u, p
	case "SASL_INHERIT":
		ce.Add("basic.auth.credentials.source", "SASL_INHERIT is not supported by Sluice: use USER_INFO with basic.auth.user.info, or URL")
	default:
		ce.Add("basic.auth.credentials.source", fmt.Sprintf("%q is not one of URL, USER_INFO, SASL_INHERIT", src))
	}

	ssl := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, "schema.registry."); ok && strings.HasPrefix(rest, "ssl.") {
			ssl[rest] = v
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(ssl) > 0 {
		m, err := tlsconf.Load(ssl)
		if err != nil {
			ce.Add("schema.registry.ssl", err.Error())
		} else {
			transport.TLSClientConfig = m.Client("")
		}
	}
	if ce.Err() != nil {
		return nil
	}
	opts := []sr.ClientOpt{
		sr.URLs(urls...),
		sr.HTTPClient(&http.Client{Transport: transport, Timeout: registryTimeout}),
		sr.UserAgent("sluice-" + converter),
	}
	if user != "" || pass != "" {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		ce.Add("schema.registry.url", err.Error())
		return nil
	}
	rc.client = cl
	rc.ids = newBoundedCache[subjectText, int](idCache)
	rc.schemas = newBoundedCache[int, sr.Schema](idCache)
	rc.versions = newBoundedCache[subjectID, int](idCache)
	rc.latest = newBoundedCache[string, sr.SubjectSchema](idCache)
	return rc
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

func valueOrDefault(props map[string]string, key, def string) string {
	if v, ok := props[key]; ok {
		return v
	}
	return def
}

func parsePositiveInt(ce *connectors.ConfigError, props map[string]string, key string, def int) int {
	v, ok := props[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		ce.Add(key, fmt.Sprintf("Invalid value %q for configuration %s: expected a non-negative integer", v, key))
		return def
	}
	return n
}

// registryURLs splits schema.registry.url and takes the user info out of
// the URLs: franz-go would otherwise leave it in the URLs its errors print,
// and a password must never reach a log line. With
// basic.auth.credentials.source=URL the user info is the credential, as in
// Confluent's UrlBasicAuthCredentialProvider; every URL that has one must
// agree.
func registryURLs(ce *connectors.ConfigError, props map[string]string) (urls []string, user, pass string) {
	raw, ok := props["schema.registry.url"]
	if !ok || strings.TrimSpace(raw) == "" {
		ce.Add("schema.registry.url", "Missing required configuration \"schema.registry.url\" which has no default value.")
		return nil, "", ""
	}
	seen := false
	for part := range strings.SplitSeq(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := url.Parse(part)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The parse error would echo the URL, user info included.
			ce.Add("schema.registry.url", fmt.Sprintf("%q is not an http or https URL", redactURL(part)))
			continue
		}
		if u.User != nil {
			p, _ := u.User.Password()
			if seen && (u.User.Username() != user || p != pass) {
				ce.Add("schema.registry.url", "the URLs carry different user info; Sluice sends one set of credentials to every URL")
			}
			user, pass, seen = u.User.Username(), p, true
			u.User = nil
		}
		urls = append(urls, u.String())
	}
	if len(urls) == 0 && ce.Err() == nil {
		ce.Add("schema.registry.url", "no URL given")
	}
	return urls, user, pass
}

// redactURL drops whatever sits between the scheme and an '@', which is
// where a URL carries a password.
func redactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		return scheme + "://***@" + rest[at+1:]
	}
	return s
}

// subject names the subject a schema is registered under, as the
// configured strategy names it. recordName is the schema's record name
// (Avro record full name, Protobuf message full name, JSON Schema title).
func (rc *registryClient) subject(topic, recordName string) (string, error) {
	switch rc.strategy {
	case recordNameStrategy, topicRecordNameStrategy:
		if recordName == "" {
			return "", fmt.Errorf("%s: %s needs a named schema (a record) and this one has no name", rc.converter, rc.strategyName())
		}
		if rc.strategy == recordNameStrategy {
			return recordName, nil
		}
		return topic + "-" + recordName, nil
	}
	if rc.isKey {
		return topic + "-key", nil
	}
	return topic + "-value", nil
}

func (rc *registryClient) strategyName() string {
	return rc.strategy[strings.LastIndexByte(rc.strategy, '.')+1:]
}

// idFor returns the id of schema under subject: registered when
// auto.register.schemas is true (the registry returns the existing id when
// it has the schema already), looked up otherwise. Each subject and schema
// text reaches the registry once; later calls are answered from the cache.
func (rc *registryClient) idFor(subject string, schema sr.Schema) (int, error) {
	key := subjectText{subject, schema.Schema}
	if id, ok := rc.ids.get(key); ok {
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	var (
		id  int
		err error
	)
	if rc.autoRegister {
		// One request, as Confluent's client makes: the registry answers
		// with the id, the existing one when it has the schema already.
		id, err = rc.client.RegisterSchema(ctx, subject, schema, -1, -1)
	} else {
		var ss sr.SubjectSchema
		ss, err = rc.client.LookupSchema(ctx, subject, schema)
		id = ss.ID
	}
	if err != nil {
		what := "registering the schema"
		if !rc.autoRegister {
			what = "looking up the schema (auto.register.schemas=false)"
		}
		return 0, rc.registryError(err, fmt.Sprintf("%s under subject %q", what, subject))
	}
	rc.ids.put(key, id)
	return id, nil
}

// topicIDs remembers, for one writer schema, the id its records carry on
// each topic, so that the record path neither rebuilds the subject name nor
// hashes the schema's text per record.
type topicIDs struct{ m sync.Map } // topic -> id

// idForTopic is idFor for the subject topic's records of a schema named
// recordName have, answered from ids after the first record.
func (rc *registryClient) idForTopic(ids *topicIDs, topic, recordName string, schema sr.Schema) (int, error) {
	if v, ok := ids.m.Load(topic); ok {
		return v.(int), nil
	}
	subject, err := rc.subject(topic, recordName)
	if err != nil {
		return 0, err
	}
	id, err := rc.idFor(subject, schema)
	if err != nil {
		return 0, err
	}
	ids.m.Store(topic, id)
	return id, nil
}

// latestFor returns the latest version of subject (use.latest.version),
// cached: Confluent's serializer caches it too (latest.cache.ttl.sec,
// by default for ever).
func (rc *registryClient) latestFor(subject string) (sr.SubjectSchema, error) {
	if ss, ok := rc.latest.get(subject); ok {
		return ss, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	ss, err := rc.client.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return sr.SubjectSchema{}, rc.registryError(err, fmt.Sprintf("fetching the latest version of subject %q (use.latest.version=true)", subject))
	}
	rc.latest.put(subject, ss)
	return ss, nil
}

// schemaByID returns the registry's schema of id, cached.
func (rc *registryClient) schemaByID(id int) (sr.Schema, error) {
	if s, ok := rc.schemas.get(id); ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	s, err := rc.client.SchemaByID(ctx, id)
	if err != nil {
		return sr.Schema{}, rc.registryError(err, fmt.Sprintf("fetching schema id %d", id))
	}
	rc.schemas.put(id, s)
	return s, nil
}

// schemaBySubjectVersion fetches a referenced schema (schema references).
func (rc *registryClient) schemaBySubjectVersion(subject string, version int) (sr.SubjectSchema, error) {
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	ss, err := rc.client.SchemaByVersion(ctx, subject, version)
	if err != nil {
		return sr.SubjectSchema{}, rc.registryError(err, fmt.Sprintf("fetching reference %q version %d", subject, version))
	}
	return ss, nil
}

// versionOf returns subject's version of the schema with id, which
// Confluent's converters give the Connect schema they read as its version
// (AbstractKafkaAvroDeserializer looks it up the same way). Cached.
func (rc *registryClient) versionOf(subject string, id int, schema sr.Schema) (int, error) {
	key := subjectID{subject, id}
	if v, ok := rc.versions.get(key); ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	ss, err := rc.client.LookupSchema(ctx, subject, schema)
	if err != nil {
		return 0, rc.registryError(err, fmt.Sprintf("looking up the version of schema id %d under subject %q", id, subject))
	}
	rc.versions.put(key, ss.Version)
	return ss.Version, nil
}

// registryError says what failed and marks an error the registry may get
// over (it is down, overloaded or timing out) as retriable, so that the
// runtime retries it with backoff within errors.retry.timeout before
// errors.tolerance decides. A 4xx answer (unknown id, incompatible schema,
// bad credentials) is final.
func (rc *registryClient) registryError(err error, what string) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("%s: schema registry refused %s: HTTP %d", rc.converter, what, re.StatusCode)
		if re.ErrorCode != 0 {
			msg += fmt.Sprintf(", error %d", re.ErrorCode)
		}
		if re.Message != "" {
			msg += ": " + re.Message
		}
		out := &DataError{Converter: rc.converter, Msg: strings.TrimPrefix(msg, rc.converter+": ")}
		if re.StatusCode >= 500 || re.StatusCode == http.StatusTooManyRequests || re.StatusCode == http.StatusRequestTimeout {
			return connectors.Retriable(out)
		}
		return out
	}
	out := &DataError{Converter: rc.converter, Msg: fmt.Sprintf("schema registry unreachable while %s: %v", what, err)}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return connectors.Retriable(out)
	}
	return out
}

// recordValue applies, before a record is written, the rule Confluent's
// converters follow for null: with no schema or an optional one a null
// value is written as no bytes (a tombstone), a schema's default stands in
// for null, and a required schema without one is an error. done says that
// nil bytes are the answer. A value without a schema is refused: the
// registry formats all need one.
func recordValue(converter string, rc *registryClient, schema *connectors.Schema, value any) (v any, done bool, err error) {
	if rc == nil {
		return nil, false, &DataError{Converter: converter, Msg: "not configured"}
	}
	if value == nil || isNil(value) {
		switch {
		case schema == nil:
			return nil, true, nil
		case schema.Default != nil:
			value = schema.Default
		case schema.Optional:
			return nil, true, nil
		default:
			return nil, false, &DataError{Converter: converter, Msg: "Found null value for non-optional schema"}
		}
	}
	if schema == nil {
		return nil, false, &DataError{Converter: converter, Msg: "a value without a Connect schema has no schema to register; use a converter that takes schemaless data (JsonConverter with schemas.enable=false)"}
	}
	return value, false, nil
}

// readFrame splits a record read into its schema id and payload; ok is
// false for nil data, a tombstone.
func readFrame(converter string, rc *registryClient, data []byte) (id int, payload []byte, ok bool, err error) {
	if rc == nil {
		return 0, nil, false, &DataError{Converter: converter, Msg: "not configured"}
	}
	if data == nil {
		return 0, nil, false, nil
	}
	id, payload, err = unframe(converter, data)
	return id, payload, err == nil, err
}

// schemaOfType is schemaByID for a converter of one schema type: a schema
// of another type is refused.
func (rc *registryClient) schemaOfType(id int) (sr.Schema, error) {
	s, err := rc.schemaByID(id)
	if err != nil {
		return sr.Schema{}, err
	}
	if s.Type != rc.schemaType {
		return sr.Schema{}, &DataError{Converter: rc.converter, Msg: fmt.Sprintf("schema id %d is a %s schema, not %s", id, s.Type, rc.schemaType)}
	}
	return s, nil
}

// appendFrameHeader appends Confluent's header to b.
func appendFrameHeader(b []byte, id int) []byte {
	b = append(b, magicByte, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(id))
	return b
}

// unframe splits a Confluent frame into its schema id and payload.
func unframe(converter string, data []byte) (int, []byte, error) {
	if len(data) < frameHeaderLen {
		return 0, nil, &DataError{Converter: converter, Msg: fmt.Sprintf("%d bytes are too short for a schema registry frame (magic byte and 4-byte schema id)", len(data))}
	}
	if data[0] != magicByte {
		return 0, nil, &DataError{Converter: converter, Msg: fmt.Sprintf("Unknown magic byte %d: the data was not written by a schema registry serializer", data[0])}
	}
	return int(binary.BigEndian.Uint32(data[1:5])), data[frameHeaderLen:], nil
}
