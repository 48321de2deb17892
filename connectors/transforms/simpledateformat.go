package transforms

// java.text.SimpleDateFormat, as TimestampConverter and TimestampRouter
// use it: in UTC, with an English (en_US) locale, lenient. Formatting
// supports every pattern letter; parsing every letter but the week-based
// ones (Y, w, W, F), which need Java's locale week rules to resolve.
//
// Dates before the Gregorian cutover (1582-10-15) use the Julian calendar,
// as Java's GregorianCalendar does. Parsing follows SimpleDateFormat.parse:
// fields may run over (month 13 is January next year), numbers may be
// negative, a field followed by a numeric field takes exactly its count of
// digits, spaces and tabs before a field are skipped, trailing text is
// ignored, and a two-digit year ("yy") falls within 80 years before and 20
// after the time the format was made.
//
// Time zone names are parsed only for UTC and GMT ("UTC", "Coordinated
// Universal Time", "GMT", "GMT+01:00") and numeric offsets: Java knows
// every zone's English names, and a parsed name there also changes the
// zone later formatting uses.

import (
	"fmt"
	"strings"
	"time"
)

// dateField is a pattern letter repeated count times, or literal text
// (letter 0).
type dateField struct {
	letter rune
	count  int
	text   []rune
}

type javaDateFormat struct {
	pattern string
	fields  []dateField
	// noParse names a letter parsing does not support ("" when it does).
	noParse string
	// centuryStart is when a two-digit year's century starts.
	centuryStart     int64
	centuryStartYear int
}

const javaPatternLetters = "GyMdkHmsSEDFwWahKzZYuXL"

// compileJavaDateFormat checks and compiles a pattern as new
// SimpleDateFormat(pattern) does, failing as it does.
func compileJavaDateFormat(pattern string, now time.Time) (*javaDateFormat, error) {
	f := &javaDateFormat{pattern: pattern}
	p := []rune(pattern)
	var lit []rune
	flush := func() {
		if len(lit) > 0 {
			f.fields = append(f.fields, dateField{text: lit})
			lit = nil
		}
	}
	inQuote := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\'' {
			if i+1 < len(p) && p[i+1] == '\'' {
				lit = append(lit, '\'')
				i++
				continue
			}
			inQuote = !inQuote
			continue
		}
		if inQuote || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			lit = append(lit, c)
			continue
		}
		if !strings.ContainsRune(javaPatternLetters, c) {
			return nil, fmt.Errorf("Illegal pattern character '%c'", c)
		}
		n := 1
		for i+1 < len(p) && p[i+1] == c {
			n++
			i++
		}
		if c == 'X' && n > 3 {
			return nil, fmt.Errorf("invalid ISO 8601 format: length=%d", n)
		}
		if strings.ContainsRune("YwWF", c) && f.noParse == "" {
			f.noParse = string(c)
		}
		flush()
		f.fields = append(f.fields, dateField{letter: c, count: n})
	}
	if inQuote {
		return nil, fmt.Errorf("Unterminated quote")
	}
	flush()
	start := now.UTC().AddDate(-80, 0, 0)
	f.centuryStart = start.UnixMilli()
	f.centuryStartYear = calendarFieldsOf(f.centuryStart).year
	return f, nil
}

// calendarFields are a UTC instant's fields as Java's GregorianCalendar
// computes them for en_US (weeks start on Sunday, week 1 holds Jan 1).
type calendarFields struct {
	year, month, day      int // proleptic year (0 is 1 BC), month 1-12
	hour, minute, second  int
	millis                int
	dayOfWeek             int // 1 Sunday ... 7 Saturday
	dayOfYear, weekOfYear int
	weekOfMonth, weekYear int
	dayOfWeekInMonth      int
}

// gregorianCutover is 1582-10-15, in days since the epoch.
const gregorianCutover = -141427

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func calendarFieldsOf(ms int64) calendarFields {
	days := floorDiv(ms, millisPerDay)
	tod := int(ms - days*millisPerDay)
	var c calendarFields
	julian := days < gregorianCutover
	c.year, c.month, c.day = dateOfDays(days, julian)
	c.hour, c.minute, c.second, c.millis = tod/3600000, tod/60000%60, tod/1000%60, tod%1000
	c.dayOfWeek = int(floorMod(days+4, 7)) + 1 // 1970-01-01 was a Thursday
	jan1 := daysOfDate(int64(c.year), 1, 1, c.year <= 1582)
	c.dayOfYear = int(days-jan1) + 1
	c.weekOfMonth = weekNumber(days-int64(c.day)+1, days)
	c.dayOfWeekInMonth = (c.day-1)/7 + 1
	c.weekOfYear, c.weekYear = weekNumber(jan1, days), c.year
	if c.weekOfYear >= 52 {
		nextJan1 := daysOfDate(int64(c.year)+1, 1, 1, c.year+1 <= 1582)
		if days >= sundayOnOrBefore(nextJan1) {
			c.weekOfYear, c.weekYear = 1, c.year+1
		}
	}
	return c
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// sundayOnOrBefore is the Sunday on or before the day.
func sundayOnOrBefore(days int64) int64 { return days - floorMod(days+4, 7) }

// weekNumber is Calendar.getWeekNumber for weeks starting on Sunday with
// one day enough for a first week.
func weekNumber(periodStart, days int64) int {
	return int(floorDiv(days-sundayOnOrBefore(periodStart), 7)) + 1
}

// daysOfDate is the day (since the epoch) of a proleptic Gregorian or
// Julian date; month may be any value in 1-12.
func daysOfDate(y int64, m, d int, julian bool) int64 {
	if m <= 2 {
		y--
	}
	mp := int64(m + 9)
	if m > 2 {
		mp = int64(m - 3)
	}
	doy := (153*mp+2)/5 + int64(d) - 1
	if julian {
		era := floorDiv(y, 4)
		yoe := y - era*4
		return era*1461 + yoe*365 + doy - 719470
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	return era*146097 + yoe*365 + yoe/4 - yoe/100 + doy - 719468
}

// dateOfDays is daysOfDate's inverse.
func dateOfDays(days int64, julian bool) (int, int, int) {
	var y, doy int64
	if julian {
		z := days + 719470
		era := floorDiv(z, 1461)
		doe := z - era*1461
		yoe := (doe - doe/1460) / 365
		y, doy = yoe+era*4, doe-365*yoe
	} else {
		z := days + 719468
		era := floorDiv(z, 146097)
		doe := z - era*146097
		yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
		y, doy = yoe+era*400, doe-(365*yoe+yoe/4-yoe/100)
	}
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

var (
	javaMonths      = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	javaShortMonths = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	javaWeekdays    = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	javaShortDays   = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	javaEras        = []string{"BC", "AD"}
	javaAmPm        = []string{"AM", "PM"}
)

// format is SimpleDateFormat.format of an instant in milliseconds.
func (f *javaDateFormat) format(ms int64) string {
	c := calendarFieldsOf(ms)
	var b strings.Builder
	for _, fl := range f.fields {
		if fl.letter == 0 {
			b.WriteString(string(fl.text))
			continue
		}
		f.formatField(&b, fl, c)
	}
	return b.String()
}

func (f *javaDateFormat) formatField(b *strings.Builder, fl dateField, c calendarFields) {
	num := func(v int) { b.WriteString(zeroPad(v, fl.count)) }
	text := func(long, short []string, i int) {
		if fl.count >= 4 {
			b.WriteString(long[i])
		} else {
			b.WriteString(short[i])
		}
	}
	yearOfEra, era := c.year, 1
	if c.year <= 0 {
		yearOfEra, era = 1-c.year, 0
	}
	switch fl.letter {
	case 'G':
		b.WriteString(javaEras[era])
	case 'y':
		if fl.count == 2 {
			b.WriteString(zeroPad(yearOfEra%100, 2))
		} else {
			num(yearOfEra)
		}
	case 'Y':
		// The week year is proleptic (0 is 1 BC), printed with its sign.
		y, sign := c.weekYear, ""
		if y < 0 {
			y, sign = -y, "-"
		}
		if fl.count == 2 {
			y %= 100
		}
		b.WriteString(sign + zeroPad(y, fl.count))
	case 'M', 'L':
		if fl.count >= 3 {
			text(javaMonths, javaShortMonths, c.month-1)
		} else {
			num(c.month)
		}
	case 'd':
		num(c.day)
	case 'k':
		num(ifZero(c.hour, 24))
	case 'H':
		num(c.hour)
	case 'm':
		num(c.minute)
	case 's':
		num(c.second)
	case 'S':
		num(c.millis)
	case 'E':
		text(javaWeekdays, javaShortDays, c.dayOfWeek-1)
	case 'D':
		num(c.dayOfYear)
	case 'F':
		num(c.dayOfWeekInMonth)
	case 'w':
		num(c.weekOfYear)
	case 'W':
		num(c.weekOfMonth)
	case 'a':
		b.WriteString(javaAmPm[c.hour/12])
	case 'h':
		num(ifZero(c.hour%12, 12))
	case 'K':
		num(c.hour % 12)
	case 'u':
		num((c.dayOfWeek+5)%7 + 1)
	case 'z':
		if fl.count >= 4 {
			b.WriteString("Coordinated Universal Time")
		} else {
			b.WriteString("UTC")
		}
	case 'Z':
		b.WriteString("+0000")
	case 'X':
		b.WriteString("Z")
	}
}

func ifZero(v, alt int) int {
	if v == 0 {
		return alt
	}
	return v
}

// zeroPad writes a non-negative v with at least n digits.
func zeroPad(v, n int) string {
	s := fmt.Sprint(v)
	if len(s) < n {
		s = strings.Repeat("0", n-len(s)) + s
	}
	return s
}
