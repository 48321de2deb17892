package transforms

import "strings"

// Calendar fields parsing sets, with the order they were set in (Java's
// stamps), which decides between conflicting fields (Calendar.selectFields).
const (
	calEra = iota
	calYear
	calMonth
	calDayOfMonth
	calDayOfYear
	calDayOfWeek
	calAmPm
	calHour
	calHourOfDay
	calMinute
	calSecond
	calMillisecond
	calZoneOffset
	calFieldCount
)

// calendarBuilder is Java's CalendarBuilder: field values and stamps
// (0 unset, 2 and up in setting order).
type calendarBuilder struct {
	value     [calFieldCount]int64
	stamp     [calFieldCount]int
	nextStamp int
}

func (c *calendarBuilder) set(field int, v int64) {
	if c.nextStamp == 0 {
		c.nextStamp = 2
	}
	c.value[field], c.stamp[field] = v, c.nextStamp
	c.nextStamp++
}

func (c *calendarBuilder) isSet(field int) bool { return c.stamp[field] != 0 }

// aggregateStamp is the later of two stamps, unset if either is.
func aggregateStamp(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	return max(a, b)
}

// parse is SimpleDateFormat.parse(String): the instant in milliseconds, or
// false where Java throws "Unparseable date".
func (f *javaDateFormat) parse(s string) (int64, bool) {
	text := []rune(s)
	var cb calendarBuilder
	ambiguous := false
	pos := 0
	for i, fl := range f.fields {
		if fl.letter == 0 {
			for _, r := range fl.text {
				if pos >= len(text) || text[pos] != r {
					return 0, false
				}
				pos++
			}
			continue
		}
		obeyCount := i+1 < len(f.fields) && obeysCount(f.fields[i+1])
		if pos = f.subParse(text, pos, fl, obeyCount, &ambiguous, &cb); pos < 0 {
			return 0, false
		}
	}
	ms := cb.computeTime()
	if ambiguous && ms < f.centuryStart {
		cb.value[calYear] += 100
		ms = cb.computeTime()
	}
	return ms, true
}

// obeysCount is SimpleDateFormat.shouldObeyCount: the field before a
// numeric one takes exactly its count of digits ("yyyyMMdd").
func obeysCount(next dateField) bool {
	switch next.letter {
	case 'M', 'L':
		return next.count <= 2
	case 'y', 'd', 'k', 'H', 'm', 's', 'S', 'D', 'F', 'w', 'W', 'h', 'K', 'Y', 'u':
		return true
	}
	return false
}

// parseDateNumber is DecimalFormat's integer parse as SimpleDateFormat
// uses it: an optional '-' and ASCII digits from pos, before limit. The
// value is an int, as Number.intValue makes it.
func parseDateNumber(text []rune, pos, limit int) (int64, int, bool) {
	i, neg := pos, false
	if i < limit && text[i] == '-' {
		neg, i = true, i+1
	}
	start := i
	var v uint64
	big := false
	for i < limit && text[i] >= '0' && text[i] <= '9' {
		if v > (1<<63)/10 {
			big = true
		}
		v = v*10 + uint64(text[i]-'0')
		i++
	}
	if i == start {
		return 0, pos, false
	}
	n := int64(v)
	if neg {
		n = -n
	}
	switch {
	case big || v > 1<<63 || (!neg && v == 1<<63):
		// Beyond a long Java has a double, which intValue saturates.
		if neg {
			return -1 << 31, i, true
		}
		return 1<<31 - 1, i, true
	}
	return int64(int32(n)), i, true
}

// subParse parses one field at start, returning the position after it or
// -1, as SimpleDateFormat.subParse.
func (f *javaDateFormat) subParse(text []rune, start int, fl dateField, obeyCount bool, ambiguous *bool, cb *calendarBuilder) int {
	pos := start
	for ; ; pos++ {
		if pos >= len(text) {
			return -1
		}
		if text[pos] != ' ' && text[pos] != '\t' {
			break
		}
	}
	actualStart := pos
	number := func() (int64, int, bool) {
		limit := len(text)
		if obeyCount {
			if start+fl.count > len(text) {
				return 0, 0, false
			}
			limit = start + fl.count
		}
		return parseDateNumber(text, pos, limit)
	}
	switch fl.letter {
	case 'G':
		return matchNames(text, start, cb, calEra, javaEras)
	case 'M', 'L':
		if fl.count >= 3 {
			return matchNames(text, start, cb, calMonth, javaMonths, javaShortMonths)
		}
	case 'E':
		return matchNames(text, start, cb, calDayOfWeek, nil, javaWeekdays, javaShortDays)
	case 'a':
		return matchNames(text, start, cb, calAmPm, javaAmPm)
	case 'z', 'Z':
		return parseZone(text, start, pos, cb)
	case 'Y', 'w', 'W', 'F':
		return -1 // refused when the format is made; see noParse
	case 'X':
		return parseISOZone(text, pos, fl.count, cb)
	}
	v, end, ok := number()
	if !ok {
		return -1
	}
	switch fl.letter {
	case 'y':
		if fl.count <= 2 && end-actualStart == 2 && isASCIIDigit(text[actualStart]) && isASCIIDigit(text[actualStart+1]) {
			ambiguousYear := int64(f.centuryStartYear % 100)
			*ambiguous = v == ambiguousYear
			v += int64(f.centuryStartYear / 100 * 100)
			if v < int64(f.centuryStartYear/100*100)+ambiguousYear {
				v += 100
			}
		}
		cb.set(calYear, v)
	case 'M', 'L':
		cb.set(calMonth, v-1)
	case 'k':
		if v == 24 {
			v = 0
		}
		cb.set(calHourOfDay, v)
	case 'h':
		if v == 12 {
			v = 0
		}
		cb.set(calHour, v)
	case 'u':
		if v >= 1 && v <= 7 {
			v = v%7 + 1 // ISO's 1 (Monday) is Calendar's 2
		}
		cb.set(calDayOfWeek, v)
	default:
		cb.set(map[rune]int{'d': calDayOfMonth, 'H': calHourOfDay, 'm': calMinute, 's': calSecond,
			'S': calMillisecond, 'D': calDayOfYear, 'K': calHour}[fl.letter], v)
	}
	return end
}

func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

// matchNames is SimpleDateFormat.matchString: the longest name of any
// list matching text at start, ignoring case, sets field to its index.
// skip0 lists are indexed from 1 (Java's weekdays start at Sunday = 1);
// pass nil first to select that.
func matchNames(text []rune, start int, cb *calendarBuilder, field int, lists ...[]string) int {
	offset := 0
	if len(lists) > 0 && lists[0] == nil {
		lists, offset = lists[1:], 1
	}
	best, bestLen := -1, 0
	for _, names := range lists {
		for i, n := range names {
			r := []rune(n)
			if len(r) > bestLen && start+len(r) <= len(text) && strings.EqualFold(string(text[start:start+len(r)]), n) {
				best, bestLen = i, len(r)
			}
		}
	}
	if best < 0 {
		return -1
	}
	cb.set(field, int64(best+offset))
	return start + bestLen
}

// parseZone parses 'z' and 'Z': "GMT" with an optional offset, a sign
// and hhmm, or a zone name (UTC's only, see the file's doc).
func parseZone(text []rune, start, pos int, cb *calendarBuilder) int {
	c := text[pos]
	if c == '+' || c == '-' {
		return parseNumericZone(text, pos+1, sign(c), 0, false, cb)
	}
	if (c == 'G' || c == 'g') && len(text)-start >= 3 && strings.EqualFold(string(text[start:start+3]), "GMT") {
		pos = start + 3
		if pos < len(text) && (text[pos] == '+' || text[pos] == '-') {
			return parseNumericZone(text, pos+1, sign(text[pos]), 0, true, cb)
		}
		cb.set(calZoneOffset, 0)
		return pos
	}
	for _, n := range []string{"Coordinated Universal Time", "UTC"} {
		if pos+len(n) <= len(text) && strings.EqualFold(string(text[pos:pos+len(n)]), n) {
			return pos + len(n) // the formatter's own zone: no offset set
		}
	}
	return -1
}

func sign(c rune) int64 {
	if c == '-' {
		return -1
	}
	return 1
}

// parseISOZone parses 'X': "Z", or a sign and hh, hhmm or hh:mm by count.
func parseISOZone(text []rune, pos, count int, cb *calendarBuilder) int {
	switch c := text[pos]; c {
	case 'Z':
		cb.set(calZoneOffset, 0)
		return pos + 1
	case '+', '-':
		return parseNumericZone(text, pos+1, sign(c), count, count == 3, cb)
	}
	return -1
}

// parseNumericZone is SimpleDateFormat.subParseNumericZone.
func parseNumericZone(text []rune, i int, sign int64, count int, colon bool, cb *calendarBuilder) int {
	digit := func() (int64, bool) {
		if i >= len(text) || !isASCIIDigit(text[i]) {
			return 0, false
		}
		i++
		return int64(text[i-1] - '0'), true
	}
	hours, ok := digit()
	if !ok {
		return -1
	}
	if d, ok := digit(); ok {
		hours = hours*10 + d
	} else if count > 0 || !colon || i >= len(text) {
		return -1
	}
	if hours > 23 {
		return -1
	}
	minutes := int64(0)
	if count != 1 {
		if colon {
			if i >= len(text) || text[i] != ':' {
				return -1
			}
			i++
		}
		m1, ok1 := digit()
		m2, ok2 := digit()
		if !ok1 || !ok2 || m1*10+m2 > 59 {
			return -1
		}
		minutes = m1*10 + m2
	}
	cb.set(calZoneOffset, (hours*60+minutes)*60000*sign)
	return i
}

// computeTime is GregorianCalendar.computeTime in lenient mode, in UTC:
// the fields Calendar.selectFields picks, out-of-range values carried
// over, the Julian calendar before the cutover.
func (c *calendarBuilder) computeTime() int64 {
	st := c.stamp
	useHourOfDay := false
	hourStamp := aggregateStamp(st[calHour], st[calAmPm])
	best := max(hourStamp, st[calHourOfDay])
	if best == 0 {
		best = max(st[calHour], st[calAmPm])
	}
	if best != 0 && best == st[calHourOfDay] {
		useHourOfDay = true
	}
	var tod int64
	if useHourOfDay {
		tod = c.value[calHourOfDay]
	} else {
		tod = c.value[calHour]
		if best != 0 && st[calAmPm] != 0 {
			tod += 12 * c.value[calAmPm]
		}
	}
	tod = ((tod*60+c.value[calMinute])*60+c.value[calSecond])*1000 + c.value[calMillisecond]
	days := tod / millisPerDay
	tod %= millisPerDay
	for tod < 0 {
		tod += millisPerDay
		days--
	}
	year := int64(1970)
	if c.isSet(calYear) {
		year = c.value[calYear]
	}
	if c.isSet(calEra) && c.value[calEra] == 0 {
		year = 1 - year
	}
	days += c.fixedDate(year)
	return days*millisPerDay + tod - c.value[calZoneOffset]
}

// fixedDate is the day the date fields give in year, choosing between the
// Julian and Gregorian calendars as GregorianCalendar.computeTime does.
func (c *calendarBuilder) fixedDate(year int64) int64 {
	byDayOfYear := c.selectDayOfYear()
	jfd := c.daysIn(year, true, byDayOfYear)
	gfd := c.daysIn(year, false, byDayOfYear)
	switch {
	case year > 1582 && gfd >= gregorianCutover:
		return gfd
	case year < 1582 && jfd < gregorianCutover:
		return jfd
	case byDayOfYear:
		return jfd
	case gfd >= gregorianCutover:
		return gfd
	}
	return jfd
}

// selectDayOfYear reports whether Calendar.selectFields resolves the date
// by day of year rather than by month (and day of month or week).
func (c *calendarBuilder) selectDayOfYear() bool {
	dom, doy := c.stamp[calDayOfMonth], c.stamp[calDayOfYear]
	return doy != 0 && doy > dom
}

// daysIn is GregorianCalendar.getFixedDate for the fields we parse.
func (c *calendarBuilder) daysIn(year int64, julian, byDayOfYear bool) int64 {
	if byDayOfYear {
		d := daysOfDate(year, 1, 1, julian)
		if year == 1582 && !julian && d < gregorianCutover {
			d = gregorianCutover // January 1 of 1582 is Julian
		}
		return d + c.value[calDayOfYear] - 1
	}
	month := c.value[calMonth]
	year += floorDiv(month, 12)
	month = floorMod(month, 12)
	d := daysOfDate(year, int(month)+1, 1, julian)
	switch {
	case c.isSet(calDayOfMonth):
		return d + c.value[calDayOfMonth] - 1
	case c.isSet(calDayOfWeek):
		// The first such weekday of the month.
		return d + 6 - floorMod(d+6+4-(c.value[calDayOfWeek]-1), 7)
	}
	return d
}
