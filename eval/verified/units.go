package verified

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// monthNames are the full English month names, January first.
func monthName(m int) string { return time.Month(m).String() }

// monthNumber reads a month name or its abbreviation ("jan", "sept", "january").
func monthNumber(w string) int {
	w = strings.TrimSuffix(w, ".")
	if len(w) < 3 {
		return 0
	}
	for m := 1; m <= 12; m++ {
		full := strings.ToLower(monthName(m))
		if w == full || w == full[:3] || m == 9 && w == "sept" {
			return m
		}
	}
	return 0
}

func isWeekday(w string) bool {
	w = strings.TrimSuffix(w, ".")
	for d := time.Sunday; d <= time.Saturday; d++ {
		full := strings.ToLower(d.String())
		if w == full || w == full[:3] || len(w) >= 3 && strings.HasPrefix(full, w) {
			return true
		}
	}
	return false
}

// dateTokens splits folded date text into words and numbers, keeping the
// separator that joined numbers ("01/16/2023" → 01 / 16 / 2023).
type dateToken struct {
	text  string
	digit bool
	sep   byte // the separator before this token, 0 for a space or comma
}

func splitDate(s string) []dateToken {
	var out []dateToken
	var sep byte
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j+1 < len(s) && s[j] == ':' && s[j+1] >= '0' && s[j+1] <= '9' {
				// a time of day (10:30, 10:30:15.5, +05:00): not part of the date
				for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ':' || s[j] == '.') {
					j++
				}
				sep, i = 0, j
				continue
			}
			out = append(out, dateToken{text: s[i:j], digit: true, sep: sep})
			sep, i = 0, j
		case c >= 'a' && c <= 'z':
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] == '.') {
				j++
			}
			out = append(out, dateToken{text: strings.TrimSuffix(s[i:j], "."), sep: sep})
			sep, i = 0, j
		case c == '/' || c == '-' || c == '.' || c == ':' || c == '+':
			sep, i = c, i+1
		default:
			sep, i = 0, i+1
		}
	}
	return out
}

// parseDate reads a calendar date as python-dateutil does with month-first
// numbers: "2023-01-16", "01/16/2023", "1/16/23", "Jan 16, 2023", "January
// 16th 2023", "16 January 2023", "Monday, January 16, 2023 10:30 AM". A
// missing year or day is taken from today, as dateutil does. The result is
// YYYY-MM-DD.
func parseDate(s string) (string, error) {
	toks := splitDate(s)
	var nums []dateToken
	year, month, day := 0, 0, 0
	for i, t := range toks {
		switch {
		case t.digit:
			nums = append(nums, t)
		case monthNumber(t.text) > 0 && month == 0:
			month = monthNumber(t.text)
		case isWeekday(t.text) || oneOf(t.text, "am", "pm", "a.m", "p.m", "at", "of", "the", "on", "utc", "gmt", "z", "t"):
		case oneOf(t.text, "st", "nd", "rd", "th") && i > 0 && toks[i-1].digit:
			if day == 0 {
				day = atoi(toks[i-1].text)
				nums = removeToken(nums, toks[i-1])
			}
		case len(t.text) > 2 && oneOf(t.text[len(t.text)-2:], "st", "nd", "rd", "th") && allDigits(t.text[:len(t.text)-2]):
		default:
			return "", fmt.Errorf("%q is not a date (unknown word %q)", s, t.text)
		}
	}
	switch {
	case month == 0 && len(nums) >= 3:
		a, b, c := nums[0], nums[1], nums[2]
		if len(a.text) == 4 {
			year, month, day = atoi(a.text), atoi(b.text), atoi(c.text)
		} else {
			month, day, year = atoi(a.text), atoi(b.text), fullYear(c.text)
			if month > 12 && day <= 12 {
				month, day = day, month
			}
		}
	case month == 0 && len(nums) == 2 && len(nums[0].text) == 4:
		year, month = atoi(nums[0].text), atoi(nums[1].text)
	case month == 0:
		return "", fmt.Errorf("%q is not a date", s)
	default:
		for _, n := range nums {
			switch {
			case len(n.text) == 4 && year == 0:
				year = atoi(n.text)
			case day == 0 && len(n.text) <= 2:
				day = atoi(n.text)
			case year == 0 && len(n.text) <= 2:
				year = fullYear(n.text)
			default:
				return "", fmt.Errorf("%q is not a date (too many numbers)", s)
			}
		}
	}
	now := time.Now()
	if year == 0 {
		year = now.Year()
	}
	if day == 0 {
		day = min(now.Day(), daysIn(year, month))
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return "", fmt.Errorf("%q is not a valid date", s)
	}
	return fmt.Sprintf("%04d-%02d-%02d", year, month, day), nil
}

func removeToken(nums []dateToken, t dateToken) []dateToken {
	for i := len(nums) - 1; i >= 0; i-- {
		if nums[i] == t {
			return append(nums[:i], nums[i+1:]...)
		}
	}
	return nums
}

func oneOf(s string, options ...string) bool {
	for _, o := range options {
		if s == o {
			return true
		}
	}
	return false
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// fullYear reads a two-digit year as dateutil does: the century that puts it
// within 50 years of now.
func fullYear(s string) int {
	y := atoi(s)
	if len(s) > 2 {
		return y
	}
	now := time.Now().Year()
	y += now / 100 * 100
	if y > now+50 {
		y -= 100
	}
	return y
}

func daysIn(year, month int) int {
	if month < 1 || month > 12 {
		return 0
	}
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseMonth reads a month as its full English name: 1–12, "01", "Jan",
// "january", or any date ("2023-01-15" is January).
func parseMonth(v any) (string, error) {
	if f, ok := numberValue(v); ok {
		if f != math.Trunc(f) || f < 1 || f > 12 {
			return "", fmt.Errorf("%v is not a month number (1–12)", f)
		}
		return monthName(int(f)), nil
	}
	s, ok := v.(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%s is not a month", describe(v))
	}
	s = strings.TrimSpace(s)
	if allDigits(s) {
		n := atoi(s)
		if n < 1 || n > 12 {
			return "", fmt.Errorf("%q is not a month number (1–12)", s)
		}
		return monthName(n), nil
	}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '.') }) {
		if m := monthNumber(w); m > 0 {
			return monthName(m), nil
		}
	}
	d, err := parseDate(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a month", s)
	}
	t, _ := time.Parse("2006-01-02", d)
	return t.Month().String(), nil
}

// durationUnit is the length of a duration unit in seconds.
func durationUnit(u string) float64 {
	switch u {
	case "y", "yr", "yrs", "year", "years":
		return 365 * 86400
	case "mo", "mos", "month", "months":
		return 30 * 86400
	case "w", "wk", "wks", "week", "weeks":
		return 7 * 86400
	case "d", "dy", "dys", "day", "days":
		return 86400
	case "h", "hr", "hrs", "hour", "hours":
		return 3600
	case "m", "min", "mins", "minute", "minutes":
		return 60
	case "s", "sec", "secs", "second", "seconds":
		return 1
	case "ms", "msec", "msecs", "millisecond", "milliseconds":
		return 0.001
	}
	return 0
}

// parseDuration reads a duration in seconds: "3min", "1hr 35min", "2h32m",
// "5 hours, 34 minutes", "1.5 hours", clock forms "4:13" (minutes:seconds) and
// "1:04:13", and "1:35 hours". A bare number has no unit and is refused.
func parseDuration(v any) (float64, error) {
	s := strings.TrimSpace(pyStr(v))
	if falsy(v) {
		return 0, errors.New("an empty duration")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit or clock format (e.g. 5m, 2 hours, 4:13)", s)
	}
	if secs, ok := clockDuration(s); ok {
		return secs, nil
	}
	// "1:35 hours" is one hour and 35 minutes.
	if h, rest, ok := strings.Cut(s, ":"); ok && allDigits(h) {
		m := rest
		i := 0
		for i < len(m) && m[i] >= '0' && m[i] <= '9' {
			i++
		}
		unit := strings.TrimSpace(m[i:])
		if i > 0 && (unit == "hour" || unit == "hours") {
			return float64(atoi(h))*3600 + float64(atoi(m[:i]))*60, nil
		}
	}
	total, found := 0.0, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == ',':
			i++
		case strings.HasPrefix(s[i:], "and "):
			i += 4
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			num, err := strconv.ParseFloat(s[i:j], 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration", s)
			}
			for j < len(s) && s[j] == ' ' {
				j++
			}
			k := j
			for k < len(s) && s[k] >= 'a' && s[k] <= 'z' {
				k++
			}
			unit := durationUnit(s[j:k])
			if unit == 0 {
				return 0, fmt.Errorf("%q is not a duration (unknown unit %q)", s, s[j:k])
			}
			total += num * unit
			found = true
			i = k
		default:
			return 0, fmt.Errorf("%q is not a duration", s)
		}
	}
	if !found {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return total, nil
}

// clockDuration reads "M:SS", "H:MM:SS" and "H:MM:SS.fff".
func clockDuration(s string) (float64, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	vals := make([]float64, len(parts))
	for i, p := range parts {
		if p == "" || i < len(parts)-1 && !allDigits(p) {
			return 0, false
		}
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 {
			return 0, false
		}
		vals[i] = f
	}
	if len(vals) == 2 {
		return vals[0]*60 + vals[1], true
	}
	return vals[0]*3600 + vals[1]*60 + vals[2], true
}

// pyTimedelta renders seconds as Python's str(timedelta): "0:03:00",
// "1 day, 2:00:00".
func pyTimedelta(secs float64) string {
	neg := ""
	if secs < 0 {
		neg, secs = "-", -secs
	}
	micro := int64(math.Round(secs * 1e6))
	days := micro / (86400 * 1e6)
	micro -= days * 86400 * 1e6
	h := micro / 3600e6
	micro -= h * 3600e6
	m := micro / 60e6
	micro -= m * 60e6
	sec := micro / 1e6
	micro -= sec * 1e6
	out := fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	if micro > 0 {
		out += fmt.Sprintf(".%06d", micro)
	}
	switch days {
	case 0:
	case 1:
		out = "1 day, " + out
	default:
		out = fmt.Sprintf("%d days, %s", days, out)
	}
	return neg + out
}

// distanceUnit is the length of a distance unit in metres.
func distanceUnit(u string) float64 {
	switch strings.TrimSuffix(u, ".") {
	case "m", "meter", "meters", "metre", "metres":
		return 1
	case "k", "km", "kms", "kilometer", "kilometers", "kilometre", "kilometres":
		return 1000
	case "mi", "mile", "miles":
		return 1609.344
	case "ft", "foot", "feet":
		return 0.3048
	case "yd", "yds", "yard", "yards":
		return 0.9144
	case "cm", "centimeter", "centimeters", "centimetre", "centimetres":
		return 0.01
	case "mm", "millimeter", "millimeters", "millimetre", "millimetres":
		return 0.001
	case "in", "inch", "inches":
		return 0.0254
	}
	return 0
}

// parseDistance reads a distance in metres: "2km", "1.4 km", "110k", "3.5
// miles", "500 ft". A bare number has no unit and is refused.
func parseDistance(v any) (float64, error) {
	if falsy(v) && !isNumber(v) {
		return 0, errors.New("an empty distance")
	}
	s := strings.TrimSpace(pyStr(v))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit (e.g. m, km, mi, ft)", s)
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',' || i == 0 && (s[i] == '-' || s[i] == '+')) {
		i++
	}
	num, err := strconv.ParseFloat(strings.ReplaceAll(s[:i], ",", ""), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a distance", s)
	}
	unit := distanceUnit(strings.TrimSpace(s[i:]))
	if unit == 0 {
		return 0, fmt.Errorf("%q is not a distance (unknown unit %q)", s, strings.TrimSpace(s[i:]))
	}
	return num * unit, nil
}

// parseCoordinates reads a latitude/longitude pair: an object whose keys start
// like latitude and longitude ("lat", "lng", "longitude"), a [lat, lon] list,
// or text such as "40.44, -79.94", "40.44 N, 79.94 W" or "40 deg 26' 46\" N, 79
// deg 56' 55\" W". Longitudes wrap into [-180, 180]; latitudes outside [-90, 90]
// are refused.
func parseCoordinates(v any, lenient bool) (coord, error) {
	var lat, lon float64
	var err error
	switch t := v.(type) {
	case map[string]any:
		var latV, lonV any
		latFound, lonFound := false, false
		for k, val := range t {
			kl := strings.ToLower(k)
			if !latFound && len(kl) >= 2 && strings.HasPrefix("latitude", kl) {
				latV, latFound = val, true
			}
			if !lonFound && (len(kl) >= 2 && strings.HasPrefix("longitude", kl) || kl == "lng") {
				lonV, lonFound = val, true
			}
		}
		if !latFound || !lonFound {
			return coord{}, errors.New("coordinates need a latitude and a longitude key")
		}
		if lat, err = coordNumber(latV, lenient); err != nil {
			return coord{}, err
		}
		if lon, err = coordNumber(lonV, lenient); err != nil {
			return coord{}, err
		}
	case []any:
		if len(t) != 2 {
			return coord{}, errors.New("coordinates need [latitude, longitude]")
		}
		if lat, err = coordNumber(t[0], lenient); err != nil {
			return coord{}, err
		}
		if lon, err = coordNumber(t[1], lenient); err != nil {
			return coord{}, err
		}
	case string:
		if lat, lon, err = coordText(t, lenient); err != nil {
			return coord{}, err
		}
	default:
		return coord{}, fmt.Errorf("%s is not a coordinate pair", describe(v))
	}
	if lat < -90 || lat > 90 {
		return coord{}, fmt.Errorf("latitude %v is outside [-90, 90]", lat)
	}
	lon = math.Mod(lon+180, 360)
	if lon < 0 {
		lon += 360
	}
	return coord{lat: lat, lon: lon - 180}, nil
}

func coordNumber(v any, lenient bool) (float64, error) {
	if f, ok := numberValue(v); ok {
		return f, nil
	}
	if s, ok := v.(string); ok {
		lat, err := coordPart(strings.ToLower(strings.TrimSpace(s)), lenient)
		if err == nil {
			return lat, nil
		}
	}
	return 0, fmt.Errorf("%s is not a coordinate", describe(v))
}

// coordText splits "lat, lon" (or "lat lon") and reads both parts.
func coordText(s string, lenient bool) (float64, float64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	var a, b string
	if x, y, ok := strings.Cut(s, ","); ok {
		a, b = x, y
	} else {
		// "40.7n 74.0w" or "40.7 -74.0": split after the latitude's hemisphere or number.
		f := strings.Fields(s)
		if len(f) != 2 {
			if i := strings.IndexAny(s, "ns"); i > 0 {
				a, b = s[:i+1], s[i+1:]
			} else {
				return 0, 0, fmt.Errorf("%q is not a coordinate pair", s)
			}
		} else {
			a, b = f[0], f[1]
		}
	}
	lat, err := coordPart(strings.TrimSpace(a), lenient)
	if err != nil {
		return 0, 0, err
	}
	lon, err := coordPart(strings.TrimSpace(b), lenient)
	if err != nil {
		return 0, 0, err
	}
	return lat, lon, nil
}

// coordPart reads one coordinate in decimal degrees, as the official
// evaluator does; the lenient reading also takes degrees, minutes and seconds
// and a hemisphere letter.
func coordPart(s string, lenient bool) (float64, error) {
	if !lenient {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a coordinate in decimal degrees", s)
		}
		return f, nil
	}
	sign := 1.0
	if strings.HasSuffix(s, "s") || strings.HasSuffix(s, "w") {
		sign = -1
	}
	s = strings.TrimRight(s, "nsew ")
	s = strings.TrimLeft(s, "nsew ")
	if strings.HasPrefix(s, "-") {
		sign, s = -sign, s[1:]
	}
	var parts []float64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.')
	}) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a coordinate", s)
		}
		parts = append(parts, x)
	}
	if len(parts) == 0 || len(parts) > 3 {
		return 0, fmt.Errorf("%q is not a coordinate", s)
	}
	v := parts[0]
	if len(parts) > 1 {
		v += parts[1] / 60
	}
	if len(parts) > 2 {
		v += parts[2] / 3600
	}
	return sign * v, nil
}
