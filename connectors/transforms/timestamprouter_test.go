package transforms

import (
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

func TestTimestampRouter(t *testing.T) {
	cases := []struct {
		props map[string]string
		topic string
		ts    int64
		want  string
	}{
		// Connect's TimestampRouterTest: the defaults.
		{map[string]string{}, "test", 1483425001864, "test-20170103"},
		{map[string]string{"topic.format": "${timestamp}.${topic}.${topic}", "timestamp.format": "yyyy-MM-dd'T'HH"}, "t", 1483425001864, "2017-01-03T06.t.t"},
		{map[string]string{"topic.format": "fixed"}, "t", 0, "fixed"},
		// The epoch is a timestamp; only a missing one fails.
		{map[string]string{}, "t", 0, "t-19700101"},
		{map[string]string{}, "t", -1, "t-19691231"},
		// A topic containing ${timestamp} has it replaced too, as in Java.
		{map[string]string{}, "a${timestamp}", 0, "a19700101-19700101"},
		{map[string]string{"timestamp.format": " yyyy "}, "t", 0, "t-1970"},
	}
	for _, c := range cases {
		x := configured(t, "TimestampRouter", c.props)
		r := &connectors.Record{Topic: c.topic, KafkaPartition: i32p(0), Timestamp: time.UnixMilli(c.ts), Value: "v"}
		out, err := applyOne(x, r)
		wantErr(t, err, "")
		if out.Topic != c.want || r.Topic != c.topic || out.Value != "v" {
			t.Errorf("%v %q: %q, want %q", c.props, c.topic, out.Topic, c.want)
		}
	}
	_, err := applyOne(configured(t, "TimestampRouter", nil), &connectors.Record{Topic: "t", KafkaPartition: i32p(3)})
	wantErr(t, err, "Timestamp missing on record: SourceRecord ConnectRecord{topic='t', kafkaPartition=3, timestamp=null}")
	_, err = chainOf("TimestampRouter", map[string]string{"timestamp.format": "yyyy-bb"})
	wantErr(t, err, "transforms.x.timestamp.format")
	wantErr(t, err, "Illegal pattern character 'b'")
}

// Vectors checked against Java's SimpleDateFormat (JDK 17 and 25) in UTC
// and en_US.
func TestJavaDateFormat(t *testing.T) {
	formats := []struct {
		pattern string
		ms      int64
		want    string
	}{
		{"yyyy MM dd HH mm ss SSS z", 86401234, "1970 01 02 00 00 01 234 UTC"},
		{"yyyy MM dd HH mm ss SSS z GGGG G MMMM MMM EEEE E a X Z", 86401234, "1970 01 02 00 00 01 234 UTC AD AD January Jan Friday Fri AM Z +0000"},
		{"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", 1483425001864, "2017-01-03T06:30:01.864Z"},
		{"'quoted' '' yy", 0, "quoted ' 70"},
		{"h:mm a, K k zzzz", 43200000, "12:00 PM, 0 12 Coordinated Universal Time"},
		{"h a k", 0, "12 AM 24"},
		{"D w W F u", 1483425001864, "3 1 1 1 2"},
		// Before the Gregorian cutover Java uses the Julian calendar.
		{"yyyy-MM-dd G", -12219292800000, "1582-10-15 AD"},
		{"yyyy-MM-dd G", -12219292800001, "1582-10-04 AD"},
		{"yyyy-MM-dd G", -62135596800000, "0001-01-03 AD"},
		{"yyyy-MM-dd G YYYY", -62167219200000, "0001-01-03 BC 0000"},
	}
	for _, c := range formats {
		f, err := compileJavaDateFormat(c.pattern, time.Now())
		wantErr(t, err, "")
		if got := f.format(c.ms); got != c.want {
			t.Errorf("format %q %d: %q, want %q", c.pattern, c.ms, got, c.want)
		}
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // two-digit years: 1946-06-01 to 2046
	parses := []struct {
		pattern, text string
		want          int64 // -1: unparseable
	}{
		{"yyyy MM dd HH mm ss SSS z", "1970 01 02 00 00 01 234 UTC", 86401234},
		{"yyyy MM dd HH mm ss SSS z", "1970 01 02 00 00 01 234 GMT+01:30", 81001234},
		{"yyyy MM dd HH mm ss SSS z", "1970 01 02 00 00 01 234 +0100", 82801234},
		{"yyyyMMdd", "20170103", 1483401600000},
		{"yyyyMMdd", "2017013", 1483401600000},            // yyyy and MM take 4 and 2 digits, dd the rest
		{"yyyy-MM-dd", "2020-13-45", 1613260800000},       // lenient: runs over
		{"yyyy-MM-dd", "2020-01-01T10:00", 1577836800000}, // trailing text ignored
		{"yyyy-MM-dd", " 2020- 01-01", 1577836800000},
		{"yyyy-MM-dd", "2020/01/01", -1},
		{"yy-MM-dd", "45-12-31", 2398291200000},
		{"yy-MM-dd", "47-01-01", -725846400000},
		{"yy-MM-dd", "2020-01-01", 1577836800000},
		{"EEE, dd MMM yyyy HH:mm:ss Z", "Mon, 03 Jan 2017 06:30:01 -0130", 1483430401000}, // the weekday is not checked
		{"dd MMMM yyyy", "03 january 2017", 1483401600000},
		{"hh:mm a", "12:30 PM", 45000000},
		{"kk:mm", "24:00", 0},
		{"HH:mm:ss.SSS", "25:61:61.1234", 93722234},
		{"yyyy-MM-dd'T'HH:mm:ssXXX", "2020-01-01T10:00:00+05:30", 1577853000000},
		{"yyyy-MM-dd'T'HH:mm:ssX", "2020-01-01T10:00:00+0530", 1577854800000}, // X reads +05 only
		{"G yyyy", "BC 0001", -62167392000000},
		{"yyyy-MM-dd", "1582-10-10", -12218860800000},                    // a Julian date the cutover skipped
		{"yyyy MM dd HH mm ss SSS z", "1970 01 02 00 00 01 234 PST", -1}, // zone names other than UTC's: see the doc
	}
	for _, c := range parses {
		f, err := compileJavaDateFormat(c.pattern, now)
		wantErr(t, err, "")
		got, ok := f.parse(c.text)
		if !ok {
			got = -1
		}
		if got != c.want {
			t.Errorf("parse %q %q: %d, want %d", c.pattern, c.text, got, c.want)
		}
	}
	for _, bad := range []string{"yyyy-bb", "'open", "XXXX"} {
		if _, err := compileJavaDateFormat(bad, now); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}
