package converters

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Connect's logical schemas as Values.parseString returns them (Date.SCHEMA,
// Time.SCHEMA, Timestamp.SCHEMA, all version 1). Shared: never modify them.
var (
	parsedDateSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1}
	parsedTimeSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1}
	parsedTimestampSchema = &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1}
)

// Values reads and writes dates, times and timestamps with Java's
// SimpleDateFormat and these patterns, in the JVM's time zone and locale.
// Sluice does as Connect on a JVM in UTC with an English locale.
//
// A pattern is a list of calendar fields and literal characters:
//
//	yyyy-MM-dd                   Date      (10 chars)
//	HH:mm:ss.SSS'Z'              Time      (13 chars)
//	yyyy-MM-dd'T'HH:mm:ss.SSS'Z' Timestamp (24 chars)
type datePatternElem struct {
	field int  // one of the calendar fields below, when lit is 0
	lit   rune // a literal character
}

const (
	fieldYear = iota
	fieldMonth
	fieldDay
	fieldHour
	fieldMinute
	fieldSecond
	fieldMilli
	fieldCount
)

var (
	datePattern = []datePatternElem{{field: fieldYear}, {lit: '-'}, {field: fieldMonth}, {lit: '-'}, {field: fieldDay}}
	timePattern = []datePatternElem{{field: fieldHour}, {lit: ':'}, {field: fieldMinute}, {lit: ':'},
		{field: fieldSecond}, {lit: '.'}, {field: fieldMilli}, {lit: 'Z'}}
	timestampPattern = append(append(append([]datePatternElem{}, datePattern...), datePatternElem{lit: 'T'}), timePattern...)
)

const (
	dateLength      = 10
	timeLength      = 13
	timestampLength = 24
)

// parseAsTemporal is Values.ValueParser.parseAsTemporal: a token of the
// length of a Date, Time or Timestamp (escaped colons unescaped, lengths
// counted in UTF-16 chars as Java's String.length) parsed with that
// pattern, or nil.
func parseAsTemporal(token string) *schemaAndValue {
	token = strings.ReplaceAll(token, `\:`, ":")
	var pattern []datePatternElem
	var schema *connectors.Schema
	switch utf16Len(token) {
	case timeLength:
		pattern, schema = timePattern, parsedTimeSchema
	case timestampLength:
		pattern, schema = timestampPattern, parsedTimestampSchema
	case dateLength:
		pattern, schema = datePattern, parsedDateSchema
	default:
		return nil
	}
	ms, ok := parseJavaDate([]rune(token), pattern)
	if !ok {
		return nil
	}
	return &schemaAndValue{schema, time.UnixMilli(ms).UTC()}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// parseJavaDate is SimpleDateFormat.parse(text, ParsePosition) with a
// lenient calendar, as Values calls it: each field skips spaces and tabs
// and reads a number as DecimalFormat does (see parseJavaDateNumber); each
// literal must match; text after the pattern is ignored. The fields are
// then resolved as a lenient GregorianCalendar does: out-of-range values
// roll over ("2019-02-30" is March 2nd).
func parseJavaDate(text []rune, pattern []datePatternElem) (int64, bool) {
	var fields [fieldCount]int32
	pos := 0
	for _, e := range pattern {
		if e.lit != 0 {
			if pos >= len(text) || text[pos] != e.lit {
				return 0, false
			}
			pos++
			continue
		}
		for pos < len(text) && (text[pos] == ' ' || text[pos] == '\t') {
			pos++
		}
		v, next, ok := parseJavaDateNumber(text, pos)
		if !ok {
			return 0, false
		}
		if e.field == fieldMonth {
			v-- // Calendar months count from 0, with int overflow
		}
		fields[e.field], pos = v, next
	}
	year := int32(1970) // Calendar.clear() leaves the epoch's year, January 1st
	day, daySet := int32(1), false
	if pattern[0].field == fieldYear {
		year, day, daySet = fields[fieldYear], fields[fieldDay], true
	}
	return javaCalendarMillis(year, fields[fieldMonth], day, daySet, fields[fieldHour:]), true
}

// parseJavaDateNumber reads a calendar field's number at text[pos:] as
// SimpleDateFormat's DecimalFormat does (integer only, no grouping): "NaN"
// (0), or an optional '-', then "∞" (Integer.MIN/MAX_VALUE) or Unicode
// digits with an optional exponent (E, an optional '-', digits). The
// number becomes an int as Number.intValue does: a long wraps, a double
// (a fraction, or beyond a long) truncates and saturates.
func parseJavaDateNumber(text []rune, pos int) (int32, int, bool) {
	if hasRunes(text[pos:], "NaN") {
		return 0, pos + 3, true
	}
	neg := pos < len(text) && text[pos] == '-'
	if neg {
		pos++
	}
	if hasRunes(text[pos:], "∞") {
		if neg {
			return math.MinInt32, pos + 1, true
		}
		return math.MaxInt32, pos + 1, true
	}
	mantissa, next := javaDigitsAt(text, pos)
	if len(mantissa) == 0 {
		return 0, 0, false
	}
	pos = next
	var exp int32
	if pos < len(text) && text[pos] == 'E' {
		p, eneg := pos+1, false
		if p < len(text) && text[p] == '-' {
			p, eneg = p+1, true
		}
		if ds, after := javaDigitsAt(text, p); len(ds) > 0 {
			ds = bytesTrimLeftZeros(ds)
			if e, ok := javaDigitListLong(ds, int32(len(ds)), !eneg); ok {
				exp, pos = int32(e), after
				if eneg {
					exp = -exp
				}
			}
		}
	}
	sig := bytesTrimLeftZeros(mantissa)
	decimalAt := int32(len(sig)) + exp // int arithmetic, as DigitList's
	if l, ok := javaDigitListLong(sig, decimalAt, !neg); ok {
		if neg {
			l = -l
		}
		return int32(l), pos, true
	}
	f, _ := strconv.ParseFloat("0."+string(sig)+"e"+strconv.Itoa(int(decimalAt)), 64)
	if neg {
		f = -f
	}
	return javaIntOfDouble(f), pos, true
}

// javaDigitsAt returns the values of the Unicode digits at text[pos:], as
// ASCII, and where they end.
func javaDigitsAt(text []rune, pos int) ([]byte, int) {
	var ds []byte
	for ; pos < len(text); pos++ {
		v, ok := javaDigit(text[pos])
		if !ok {
			break
		}
		ds = append(ds, byte('0'+v))
	}
	return ds, pos
}

// bytesTrimLeftZeros drops the leading zeros DigitList does not keep.
func bytesTrimLeftZeros(ds []byte) []byte {
	for len(ds) > 0 && ds[0] == '0' {
		ds = ds[1:]
	}
	return ds
}

func hasRunes(text []rune, prefix string) bool {
	i := 0
	for _, r := range prefix {
		if i >= len(text) || text[i] != r {
			return false
		}
		i++
	}
	return true
}

// javaDigitListLong is DigitList.fitsIntoLong and getLong: digits (no
// leading zeros) with the decimal point decimalAt digits from their start,
// as a long magnitude, when the value is whole and fits.
func javaDigitListLong(digits []byte, decimalAt int32, positive bool) (int64, bool) {
	count := len(digits)
	for count > 0 && digits[count-1] == '0' {
		count--
	}
	if count == 0 {
		return 0, true
	}
	if decimalAt < int32(count) || decimalAt > 19 {
		return 0, false
	}
	if decimalAt == 19 {
		const longMin = "9223372036854775808"
		s := string(digits[:count]) + strings.Repeat("0", 19-count)
		if s > longMin || s == longMin && positive {
			return 0, false
		}
		if s == longMin {
			return math.MinInt64, true // negated again by the caller, as Java's
		}
	}
	n, _ := strconv.ParseInt(string(digits[:count])+strings.Repeat("0", int(decimalAt)-count), 10, 64)
	return n, true
}

// Calendar constants: fixed dates count days from January 1st of year 1
// (Gregorian) as day 1.
const (
	millisPerDayL  = int64(millisPerDay)
	epochFixedDate = 719163 // 1970-01-01
	cutoverFixed   = 577736 // 1582-10-15, the first Gregorian day
	cutoverYear    = 1582
)

// javaCalendarMillis is GregorianCalendar.computeTime of a lenient
// calendar in UTC, with the fields a date pattern sets: the time of day
// may overflow into days, a month beyond 0..11 into years, a day beyond
// the month into the next; dates before October 15th, 1582 are Julian, as
// java.util.GregorianCalendar's. Arithmetic overflows as Java's does.
func javaCalendarMillis(year, month, day int32, daySet bool, hms []int32) int64 {
	tod := int64(hms[0])
	tod = tod*60 + int64(hms[1])
	tod = tod*60 + int64(hms[2])
	tod = tod*1000 + int64(hms[3])
	fixed := tod / millisPerDayL
	tod %= millisPerDayL
	for tod < 0 {
		tod += millisPerDayL
		fixed--
	}
	var gfd, jfd int64
	switch {
	case year > cutoverYear:
		if gfd = fixed + calendarFixedDate(false, year, month, day, daySet); gfd >= cutoverFixed {
			return (gfd-epochFixedDate)*millisPerDayL + tod
		}
		jfd = fixed + calendarFixedDate(true, year, month, day, daySet)
	case year < cutoverYear:
		if jfd = fixed + calendarFixedDate(true, year, month, day, daySet); jfd < cutoverFixed {
			return (jfd-epochFixedDate)*millisPerDayL + tod
		}
		gfd = jfd
	default:
		jfd = fixed + calendarFixedDate(true, year, month, day, daySet)
		gfd = fixed + calendarFixedDate(false, year, month, day, daySet)
	}
	// A date both calendars place after the cutover is Gregorian; one in
	// the days the switch skipped is read as Julian, as lenient Java does.
	if gfd >= cutoverFixed {
		return (gfd-epochFixedDate)*millisPerDayL + tod
	}
	return (jfd-epochFixedDate)*millisPerDayL + tod
}

// calendarFixedDate is GregorianCalendar.getFixedDate for a month and a
// day of month in the Julian or Gregorian calendar.
func calendarFixedDate(julian bool, year, month, day int32, daySet bool) int64 {
	if month > 11 {
		year += month / 12
		month %= 12
	} else if month < 0 {
		year += floorDiv32(month, 12)
		month = month - floorDiv32(month, 12)*12
	}
	var fd int64
	if julian {
		fd = julianFixedDate(year, int64(month)+1)
	} else {
		fd = gregorianFixedDate(year, int64(month)+1)
	}
	if daySet {
		fd += int64(day) - 1
	}
	return fd
}

// gregorianFixedDate is BaseCalendar.getFixedDate(year, month, 1).
func gregorianFixedDate(year int32, month int64) int64 {
	prev := int64(year) - 1
	days := int64(1) + 365*prev + floorDiv(prev, 4) - floorDiv(prev, 100) + floorDiv(prev, 400) + floorDiv(367*month-362, 12)
	if month > 2 {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			days--
		} else {
			days -= 2
		}
	}
	return days
}

// julianFixedDate is JulianCalendar.getFixedDate(year, month, 1), year 0
// being 1 BC.
func julianFixedDate(year int32, month int64) int64 {
	y := int64(year)
	days := -1 - 1 + 365*(y-1) + 1 + floorDiv(y-1, 4) + floorDiv(367*month-362, 12)
	if month > 2 {
		if year%4 == 0 {
			days--
		} else {
			days -= 2
		}
	}
	return days
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorDiv32(a, b int32) int32 { return int32(floorDiv(int64(a), int64(b))) }

// appendJavaDate writes a Date, Time or Timestamp value as Values.append
// does, by its milliseconds since the epoch rather than its schema
// (Values.dateFormatFor): before 1970-01-02 as a time of day
// (HH:mm:ss.SSS'Z', so a Date before 1970 loses its date, as in Connect),
// on a day boundary as a date (yyyy-MM-dd), else as a timestamp.
func appendJavaDate(b []byte, t time.Time) []byte {
	ms := t.UnixMilli()
	u := time.UnixMilli(ms).UTC()
	if ms < millisPerDayL {
		return appendClock(b, u)
	}
	b = appendPadded(b, int64(u.Year()), 4)
	b = append(b, '-')
	b = appendPadded(b, int64(u.Month()), 2)
	b = append(b, '-')
	b = appendPadded(b, int64(u.Day()), 2)
	if ms%millisPerDayL == 0 {
		return b
	}
	return appendClock(append(b, 'T'), u)
}

func appendClock(b []byte, u time.Time) []byte {
	b = appendPadded(b, int64(u.Hour()), 2)
	b = append(b, ':')
	b = appendPadded(b, int64(u.Minute()), 2)
	b = append(b, ':')
	b = appendPadded(b, int64(u.Second()), 2)
	b = append(b, '.')
	b = appendPadded(b, int64(u.Nanosecond()/1e6), 3)
	return append(b, 'Z')
}

func appendPadded(b []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
