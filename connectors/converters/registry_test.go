package converters

import (
	"encoding/pem"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// countingRegistry is franz-go's in-memory registry behind a server that
// counts the requests it gets, by method and path, so that tests can check
// the converters ask the registry once per schema, not once per record.
type countingRegistry struct {
	*srfake.Registry
	srv *httptest.Server

	mu    sync.Mutex
	calls map[string]int
}

func newCountingRegistry(t testing.TB, opts ...srfake.Option) *countingRegistry {
	t.Helper()
	cr := &countingRegistry{Registry: srfake.New(opts...), calls: map[string]int{}}
	cr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cr.mu.Lock()
		cr.calls[r.Method+" "+r.URL.Path]++
		cr.mu.Unlock()
		cr.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		cr.srv.Close()
		cr.Close()
	})
	return cr
}

func (cr *countingRegistry) URL() string { return cr.srv.URL }

// total is the number of requests whose "METHOD path" starts with prefix.
func (cr *countingRegistry) total(prefix string) int {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	n := 0
	for k, v := range cr.calls {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func TestRegistryFrameLayout(t *testing.T) {
	b := appendFrameHeader(nil, 0x01020304)
	if want := []byte{0, 1, 2, 3, 4}; string(b) != string(want) {
		t.Fatalf("header = % x, want % x", b, want)
	}
	id, payload, err := unframe("X", []byte{0, 0, 0, 1, 0, 'p'})
	if err != nil || id == 0 || id != 256 || string(payload) != "p" {
		t.Fatalf("unframe = %d %q %v", id, payload, err)
	}
	for _, bad := range [][]byte{{}, {0, 0, 0, 1}, {1, 0, 0, 0, 1}} {
		if _, _, err := unframe("X", bad); err == nil {
			t.Errorf("unframe(% x) succeeded", bad)
		}
	}
}

func TestRegistrySubjectStrategies(t *testing.T) {
	cases := []struct {
		strategy string
		isKey    bool
		want     string
	}{
		{"", false, "orders-value"},
		{"", true, "orders-key"},
		{topicNameStrategy, false, "orders-value"},
		{recordNameStrategy, false, "com.acme.Order"},
		{topicRecordNameStrategy, true, "orders-com.acme.Order"},
	}
	for _, tc := range cases {
		props := map[string]string{"schema.registry.url": "http://127.0.0.1:1"}
		key := "value.subject.name.strategy"
		if tc.isKey {
			key = "key.subject.name.strategy"
		}
		if tc.strategy != "" {
			props[key] = tc.strategy
		}
		c := &AvroConverter{}
		if err := c.Configure(props, tc.isKey); err != nil {
			t.Fatal(err)
		}
		got, err := c.reg.subject("orders", "com.acme.Order")
		if err != nil || got != tc.want {
			t.Errorf("%s isKey=%v: subject %q, %v; want %q", tc.strategy, tc.isKey, got, err, tc.want)
		}
	}
	c := &AvroConverter{}
	if err := c.Configure(map[string]string{"schema.registry.url": "http://127.0.0.1:1", "value.subject.name.strategy": recordNameStrategy}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.reg.subject("t", ""); err == nil || !strings.Contains(err.Error(), "RecordNameStrategy") {
		t.Errorf("RecordNameStrategy without a record name: %v", err)
	}
}

func TestRegistryConfigRefusals(t *testing.T) {
	cases := []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{}, "schema.registry.url"},
		{map[string]string{"schema.registry.url": "ftp://x"}, "schema.registry.url"},
		{map[string]string{"schema.registry.url": "http://a", "basic.auth.credentials.source": "SASL_INHERIT"}, "basic.auth.credentials.source"},
		{map[string]string{"schema.registry.url": "http://a", "basic.auth.credentials.source": "USER_INFO"}, "basic.auth.user.info"},
		{map[string]string{"schema.registry.url": "http://a", "value.subject.name.strategy": "Foo"}, "value.subject.name.strategy"},
		{map[string]string{"schema.registry.url": "http://a", "basic.auth.user.info": "u:p"}, "basic.auth.user.info"},
		{map[string]string{"schema.registry.url": "http://a", "latest.compatibility.strict": "false"}, "latest.compatibility.strict"},
		{map[string]string{"schema.registry.url": "http://a", "auto.register.schemas": "maybe"}, "auto.register.schemas"},
		{map[string]string{"schema.registry.url": "http://a", "normalize.schemas": "true"}, "normalize.schemas"},
		{map[string]string{"schema.registry.url": "http://a", "no.such.key": "1"}, "no.such.key"},
		{map[string]string{"schema.registry.url": "http://a", "schema.registry.ssl.truststore.location": "/nonexistent/ts.jks"}, "schema.registry.ssl"},
		{map[string]string{"schema.registry.url": "http://a", "enhanced.avro.schema.support": "true"}, "enhanced.avro.schema.support"},
		{map[string]string{"schema.registry.url": "http://a", "schemas.cache.config": "-1"}, "schemas.cache.config"},
	}
	for _, tc := range cases {
		err := (&AvroConverter{}).Configure(tc.props, false)
		var ce interface{ Error() string }
		if err == nil {
			t.Errorf("%v: accepted", tc.props)
			continue
		}
		ce = err
		if !strings.Contains(ce.Error(), tc.key) {
			t.Errorf("%v: error %q does not name %s", tc.props, err, tc.key)
		}
	}
	// Keys at Confluent's defaults are taken.
	ok := map[string]string{"schema.registry.url": "http://a,http://b", "normalize.schemas": "false", "auto.register.schemas": "false", "use.latest.version": "true", "latest.compatibility.strict": "false", "schemas.cache.config": "10", "max.schemas.per.subject": "5", "connect.meta.data": "false", "scrub.invalid.names": "true"}
	if err := (&AvroConverter{}).Configure(ok, false); err != nil {
		t.Errorf("Configure(%v): %v", ok, err)
	}
}

// TestRegistryCredentialsNeverLeak: the password given in the URL or in
// basic.auth.user.info is sent to the registry but appears in no error.
func TestRegistryCredentialsNeverLeak(t *testing.T) {
	reg := newCountingRegistry(t, srfake.WithAuth("Basic dXNlcjpzM2NyM3Q=")) // user:s3cr3t
	for _, props := range []map[string]string{
		{"schema.registry.url": strings.Replace(reg.URL(), "http://", "http://user:s3cr3t@", 1)},
		{"schema.registry.url": reg.URL(), "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "user:s3cr3t"},
		{"schema.registry.url": reg.URL(), "basic.auth.credentials.source": "USER_INFO", "schema.registry.basic.auth.user.info": "user:s3cr3t"},
	} {
		c := &AvroConverter{}
		if err := c.Configure(props, false); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FromConnect("creds", avroPoint, avroPointValue(1)); err != nil {
			t.Errorf("%v: FromConnect with credentials: %v", props, err)
		}
		// An id the registry does not have: the error must not carry the
		// password.
		if _, _, err := c.ToConnect("creds", []byte{0, 0, 0, 0x7f, 0x7f, 0}); err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("unknown id: %v", err)
		}
	}
	if err := (&AvroConverter{}).Configure(map[string]string{"schema.registry.url": reg.URL(), "bearer.auth.token": "t0ken-s3cret"}, false); err == nil ||
		!strings.Contains(err.Error(), "bearer.auth.token") || strings.Contains(err.Error(), "t0ken-s3cret") {
		t.Errorf("bearer.auth.token refused without echoing it: %v", err)
	}
	wrong := &AvroConverter{}
	if err := wrong.Configure(map[string]string{"schema.registry.url": reg.URL(), "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "user:wrong-pass"}, false); err != nil {
		t.Fatal(err)
	}
	_, err := wrong.FromConnect("creds", avroPoint, avroPointValue(1))
	if err == nil || strings.Contains(err.Error(), "wrong-pass") || !strings.Contains(err.Error(), "403") {
		t.Errorf("wrong password: %v", err)
	}
	if err := (&AvroConverter{}).Configure(map[string]string{"schema.registry.url": "http://u:hunter2@[::1"}, false); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad URL error leaks or is missing: %v", err)
	}
}

// registryConv returns the converter class configured for the registry
// reg, with extra keys.
func registryConv(t testing.TB, class string, reg *countingRegistry, isKey bool, extra map[string]string) Converter {
	t.Helper()
	props := map[string]string{"schema.registry.url": reg.URL()}
	for k, v := range extra {
		props[k] = v
	}
	c, err := New(class)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Configure(props, isKey); err != nil {
		t.Fatalf("Configure(%v): %v", props, err)
	}
	return c
}

// fuzzReadBack is the property every registry converter's fuzz target
// checks: reading data never panics, fails only with a *DataError, and what
// it reads can be written back.
func fuzzReadBack(t *testing.T, c Converter, topic string, data []byte) (*connectors.Schema, any, []byte) {
	s, v, err := c.ToConnect(topic, data)
	if err != nil {
		asDataError(t, err)
		return nil, nil, nil
	}
	if s == nil {
		return nil, nil, nil
	}
	out, err := c.FromConnect(topic+"-copy", s, v)
	if err != nil {
		t.Fatalf("read % x as %v but cannot write it back: %v", data, v, err)
	}
	return s, v, out
}

func srSchemaAvro(text string) sr.Schema { return sr.Schema{Schema: text, Type: sr.TypeAvro} }

// TestRegistryTLS reaches a registry over HTTPS whose certificate is
// trusted through schema.registry.ssl.truststore.* (Kafka's ssl.* keys),
// and fails against it without them.
func TestRegistryTLS(t *testing.T) {
	fake := srfake.New()
	defer fake.Close()
	srv := httptest.NewTLSServer(fake.Handler())
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c := &AvroConverter{}
	if err := c.Configure(map[string]string{
		"schema.registry.url":                         srv.URL,
		"schema.registry.ssl.truststore.type":         "PEM",
		"schema.registry.ssl.truststore.certificates": string(ca),
	}, false); err != nil {
		t.Fatal(err)
	}
	b, err := c.FromConnect("tls", avroPoint, avroPointValue(1))
	if err != nil {
		t.Fatalf("over TLS with the registry's certificate trusted: %v", err)
	}
	if _, v, err := c.ToConnect("tls", b); err != nil || v.(*connectors.StructValue).Get("x") != int32(1) {
		t.Fatalf("read back over TLS: %v %v", v, err)
	}
	untrusted := &AvroConverter{}
	if err := untrusted.Configure(map[string]string{"schema.registry.url": srv.URL}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted.FromConnect("tls2", avroPoint, avroPointValue(1)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: %v", err)
	}
}

// TestRegistryConvertersAreNoHeaderConverters: as in Confluent, the registry
// converters are not header converters.
func TestRegistryConvertersAreNoHeaderConverters(t *testing.T) {
	for _, class := range []string{"AvroConverter", ProtobufConverterClass, "JsonSchema"} {
		if _, err := ResolveHeader(map[string]string{"header.converter": class}, nil); err == nil || !strings.Contains(err.Error(), "header.converter") {
			t.Errorf("header.converter=%s: %v", class, err)
		}
	}
	for _, c := range HeaderClasses() {
		if recordOnly[c] {
			t.Errorf("HeaderClasses lists %s", c)
		}
	}
	if h := HeaderClasses(); len(h) != len(Classes())-len(recordOnly)+1 {
		t.Errorf("HeaderClasses() = %v", h)
	}
}

// primitiveFields are the fields every registry converter's round trip
// covers: each Connect primitive type and each logical type.
func primitiveFields() []connectors.Field {
	return []connectors.Field{
		{Name: "i8", Schema: connectors.Int8Schema},
		{Name: "i16", Schema: connectors.Int16Schema},
		{Name: "i32", Schema: connectors.Int32Schema},
		{Name: "i64", Schema: connectors.Int64Schema},
		{Name: "f32", Schema: connectors.Float32Schema},
		{Name: "f64", Schema: connectors.Float64Schema},
		{Name: "bool", Schema: connectors.BooleanSchema},
		{Name: "str", Schema: connectors.StringSchema},
		{Name: "bytes", Schema: connectors.BytesSchema},
		{Name: "dec", Schema: &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Parameters: map[string]string{"scale": "3", "connect.decimal.precision": "10"}}},
		{Name: "date", Schema: dateSchema},
		{Name: "time", Schema: timeSchema},
		{Name: "ts", Schema: timestampSchema},
	}
}

// setPrimitiveFields sets primitiveFields in v to values at the edges of
// their ranges (finite floats: JSON has no infinities).
func setPrimitiveFields(v *connectors.StructValue) *connectors.StructValue {
	return v.MustSet("i8", int8(math.MinInt8)).MustSet("i16", int16(math.MaxInt16)).MustSet("i32", int32(math.MinInt32)).MustSet("i64", int64(math.MaxInt64)).
		MustSet("f32", float32(1.1)).MustSet("f64", 1e300).MustSet("bool", true).MustSet("str", "héllo\x00\"").MustSet("bytes", []byte{0, 255}).
		MustSet("dec", rat("-1234567.891")).
		MustSet("date", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)).
		MustSet("time", time.Date(1970, 1, 1, 23, 59, 59, 999e6, time.UTC)).
		MustSet("ts", time.Date(1960, 5, 6, 7, 8, 9, 123e6, time.UTC))
}
