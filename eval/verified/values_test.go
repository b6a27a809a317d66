package verified_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval/verified"
	"proctor/models"
)

// TestValueTypes checks every value type against answers an agent might give,
// with near-misses that must fail. Expected values, schemas and tolerances
// follow WebArena-Verified's documentation: strings fold case, white space,
// quotes, dashes and accents; numbers read separators and words; currency
// allows ±0.1; durations ±max(3 min, 10 %); distances ±max(10 m, 2 %);
// coordinates ±1e-5°; location names need 80 % token-sort similarity.
func TestValueTypes(t *testing.T) {
	t.Parallel()
	const (
		str      = `{"type":"string"}`
		num      = `{"type":"number"}`
		integer  = `{"type":"integer"}`
		currency = `{"type":"number","format":"currency"}`
		date     = `{"type":"string","format":"date"}`
		month    = `{"type":"string","format":"month"}`
		duration = `{"type":"string","format":"duration"}`
		distance = `{"type":"string","format":"distance"}`
		coords   = `{"format":"coordinates"}`
		location = `{"type":"string","format":"location-name"}`
		urlType  = `{"type":"string","format":"url"}`
		boolean  = `{"type":"boolean"}`
		jsonType = `{"type":"string","format":"json"}`
		markdown = `{"type":"string","format":"markdown"}`
		strList  = `{"type":"string","format":"string_list"}`
		b64      = `{"type":"string","format":"base64"}`
	)
	cases := []struct {
		name, schema, expected, actual string
		ok                             bool
	}{
		{"StringCaseAndSpace", str, `["Arc Desk Lamp"]`, `["  arc   desk LAMP "]`, true},
		{"StringQuotesAndTrailingPunctuation", str, `["Arc Desk Lamp"]`, `["\"Arc Desk Lamp.\""]`, true},
		{"StringCurlyQuotes", str, `["Don't Panic"]`, `["Don’t panic"]`, true},
		{"StringDashVariants", str, `["Buffalo-Niagara International"]`, `["Buffalo–Niagara International"]`, true},
		{"StringDashAsSpace", str, `["Buffalo-Niagara"]`, `["Buffalo Niagara"]`, true},
		{"StringDashBetweenDigitsKept", str, `["123-4567"]`, `["123 4567"]`, false},
		{"StringAccents", str, `["Café Renée"]`, `["cafe renee"]`, true},
		{"StringTrademark", str, `["Nike™ Air"]`, `["nike air"]`, true},
		{"StringPrefixTextFails", str, `["Arc Desk Lamp"]`, `["Answer: Arc Desk Lamp"]`, false},
		{"StringOtherValueFails", str, `["Arc Desk Lamp"]`, `["Arc Floor Lamp"]`, false},
		{"StringPattern", str, `["^.*desk lamp$"]`, `["The Arc Desk Lamp"]`, true},
		{"StringPatternNearMiss", str, `["^.*desk lamp$"]`, `["The Arc Desk Lamps"]`, false},
		{"StringNumberAnswer", str, `["15231"]`, `[15231]`, true},

		{"NumberFromString", num, `[12]`, `["12.0"]`, true},
		{"NumberThousands", num, `[1234.5]`, `["1,234.5"]`, true},
		{"NumberEuropean", num, `[1234.56]`, `["1.234,56"]`, false},
		{"NumberWords", num, `[23]`, `["twenty-three"]`, true},
		{"NumberWordsHundred", num, `[105]`, `["one hundred and five"]`, true},
		{"NumberCurrencySign", num, `[79]`, `["$79.00"]`, false},
		{"NumberFloat", num, `[4.7]`, `[4.70]`, true},
		{"NumberOff", num, `[12]`, `[12.5]`, false},
		{"NumberWithUnitTextFails", num, `[12]`, `["12 orders"]`, false},
		{"Integer", integer, `[8]`, `["8"]`, true},
		{"IntegerZero", num, `[0]`, `["0"]`, true},

		{"CurrencySymbolAndGrouping", currency, `[1234.5]`, `["$1,234.50"]`, true},
		{"CurrencyEuropean", currency, `[1234.56]`, `["1.234,56 €"]`, true},
		{"CurrencyWithinTolerance", currency, `[10]`, `["$10.09"]`, true},
		{"CurrencyOutsideTolerance", currency, `[10]`, `["$10.20"]`, false},
		{"CurrencyNegative", currency, `[-50]`, `["-$50"]`, true},
		{"CurrencyNumber", currency, `[47.0]`, `[47]`, true},

		{"DateUSNumeric", date, `["03/11/2023"]`, `["March 11, 2023"]`, true},
		{"DateISO", date, `["03/11/2023"]`, `["2023-03-11"]`, true},
		{"DateDayFirstWords", date, `["03/11/2023"]`, `["11 March 2023"]`, true},
		{"DateOrdinal", date, `["March 2, 2022"]`, `["Mar 2nd 2022"]`, true},
		{"DateWithWeekdayAndTime", date, `["May 23 2023"]`, `["Tuesday, May 23, 2023 10:30 AM"]`, true},
		{"DateOtherDay", date, `["03/11/2023"]`, `["2023-11-03"]`, false},

		{"MonthAbbreviation", month, `["January"]`, `["Jan"]`, true},
		{"MonthCase", month, `["May"]`, `["MAY"]`, true},
		{"MonthNumber", month, `["January"]`, `[1]`, true},
		{"MonthFromDate", month, `["January"]`, `["2023-01"]`, true},
		{"MonthOther", month, `["January"]`, `["June"]`, false},

		{"DurationClock", duration, `["3min"]`, `["00:03:00"]`, true},
		{"DurationWithinAbsolute", duration, `["3min"]`, `["5 minutes"]`, true},
		{"DurationOutsideAbsolute", duration, `["3min"]`, `["7 min"]`, false},
		{"DurationHoursMinutes", duration, `["1hr 35min"]`, `["1:35 hours"]`, true},
		{"DurationWithinRelative", duration, `["1hr 35min"]`, `["1h 45m"]`, true},
		{"DurationOutsideRelative", duration, `["2 hours"]`, `["2h 30m"]`, false},
		{"DurationBareNumberFails", duration, `["3min"]`, `["3"]`, false},

		{"DistanceUnits", distance, `["2km"]`, `["2000 m"]`, true},
		{"DistanceMiles", distance, `["2km"]`, `["1.25 miles"]`, true},
		{"DistanceOutsideTolerance", distance, `["2km"]`, `["2.1 km"]`, false},
		{"DistanceWithinAbsolute", distance, `["100 m"]`, `["108m"]`, true},
		{"DistanceBareNumberFails", distance, `["1.4km"]`, `["1400"]`, false},

		{"CoordinatesText", coords, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `["40.4424191, -79.9397388"]`, true},
		{"CoordinatesPair", coords, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `[[40.44242, -79.93974]]`, true},
		{"CoordinatesShortKeys", coords, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `[{"lat":40.4424191,"lng":-79.9397388}]`, true},
		{"CoordinatesHemispheres", coords, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `["40.4424191 N, 79.9397388 W"]`, false},
		{"CoordinatesOutsideTolerance", coords, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `["40.4425, -79.9397"]`, false},

		{"LocationWordOrder", location, `["Apple Store Shadyside"]`, `["Shadyside Apple Store"]`, true},
		{"LocationAbbreviated", location, `["Carnegie Mellon University"]`, `["Carnegie Mellon Univ"]`, true},
		{"LocationOther", location, `["Carnegie Mellon University"]`, `["University of Pittsburgh"]`, false},

		{"URLPlaceholder", urlType, `["__GITLAB__/a11yproject/a11yproject.com"]`, `["http://gitlab.test:8023/a11yproject/a11yproject.com/"]`, true},
		{"URLHostCaseAndDefaultPort", urlType, `["http://example.com/a/b"]`, `["HTTP://EXAMPLE.COM:80/a/b"]`, true},
		{"URLWrongOwner", urlType, `["__GITLAB__/a11yproject/a11yproject.com"]`, `["http://gitlab.test:8023/byteblaze/a11yproject.com"]`, false},
		{"URLWrongProtocol", urlType, `["https://example.com/a"]`, `["http://example.com/a"]`, false},
		{"URLQueryOrder", urlType, `["http://example.com/s?a=1&b=2"]`, `["http://example.com/s?b=2&a=1"]`, true},
		{"URLQueryValue", urlType, `["http://example.com/s?a=1"]`, `["http://example.com/s?a=2"]`, false},
		{"URLSSHClone", urlType, `["git@__SSH_HOST__:convexegg/chatgpt.git"]`, `["ssh://git@metis.example:2222/convexegg/chatgpt.git"]`, true},
		{"URLSSHNotHTTP", urlType, `["git@__SSH_HOST__:convexegg/chatgpt.git"]`, `["http://gitlab.test:8023/convexegg/chatgpt.git"]`, false},

		{"BooleanWords", boolean, `[true]`, `["yes"]`, true},
		{"BooleanOpposite", boolean, `[true]`, `["no"]`, false},

		{"JSONKeyOrder", jsonType, `["{\"b\":1,\"a\":2}"]`, `["{\"a\": 2, \"b\": 1}"]`, true},
		{"MarkdownListMarkers", markdown, `["## Title\n- a\n- b"]`, `["##  Title\n* a\n+ b  "]`, true},
		{"MarkdownCaseMatters", markdown, `["## Title"]`, `["## title"]`, false},
		{"StringListOrder", strList, `["632,64,86"]`, `["86, 632,64"]`, true},
		{"StringListMissingItem", strList, `["632,64,86"]`, `["632,64"]`, false},
		{"Base64Decoded", b64, `["SGVsbG8gV29ybGQ="]`, `["SGVsbG8gV29ybGQ="]`, true},
		{"Base64Pattern", b64, `["^.*World$"]`, `["SGVsbG8gV29ybGQ="]`, true},
		{"Base64Other", b64, `["SGVsbG8gV29ybGQ="]`, `["SGVsbG8="]`, false},

		{"AlternativesAnyOf", str, `[["2024-07", "July 2024"]]`, `["july 2024"]`, true},
		{"AlternativesNoneOf", str, `[["2024-07", "July 2024"]]`, `["August 2024"]`, false},
		{"UnorderedByDefault", str, `["a", "b", "c"]`, `["c", "a", "b"]`, true},
		{"UnorderedCountsDuplicates", str, `["a", "a"]`, `["a", "b"]`, false},
		{"ExtraItemFails", str, `["a"]`, `["a", "b"]`, false},
		{"ScalarAnswerIsOneItem", num, `[79]`, `"79"`, true},
		{"NestedOneItemListFails", str, `["Duffle"]`, `[["Duffle"]]`, false},
		{"CurrencyObjectReadAsText", currency, `[148.8]`, `{"answer": [148.8]}`, true},
		{"CyrillicLookAlikes", str, `["Roxanne"]`, `["R\u043exanne"]`, true},
		{"StringAlternativesOnTheAgentsSide", str, `["Nike"]`, `[["Nike", "Adidas"]]`, false},
		{"ListInAString", num, `[1, 2]`, `"[2, 1]"`, false},
	}
	ev := verified.New().WithSites(testSites())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			verdict, d := grade(t, ev, retrieveSpec(tc.schema, tc.expected, ""), retrieved(tc.actual), nil)
			want := models.OutcomeFailure
			if tc.ok {
				want = models.OutcomeSuccess
			}
			require.Equal(t, want, verdict, "%s vs %s: %s", tc.expected, tc.actual, dump(d))
			if !tc.ok {
				require.NotEmpty(t, failedNames(d))
			}
		})
	}
}

// TestValueTypes_LenientReadings: readings the official evaluator does not
// have fail under webarena-verified and pass only under the lenient
// evaluator an administrator may choose.
func TestValueTypes_LenientReadings(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema, expected, actual string }{
		{"NumberCurrencySign", `{"type":"number"}`, `[6]`, `["$6"]`},
		{"NumberEuropean", `{"type":"number"}`, `[1234.56]`, `["1.234,56"]`},
		{"CoordinatesHemispheres", `{"format":"coordinates"}`, `[{"latitude":"40.4424191","longitude":"-79.9397388"}]`, `["40.4424191 N, 79.9397388 W"]`},
		{"NestedOneItemList", `{"type":"string"}`, `["Duffle"]`, `[["Duffle"]]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := retrieveSpec(tc.schema, tc.expected, "")
			verdict, d := grade(t, verified.New(), spec, retrieved(tc.actual), nil)
			require.Equal(t, models.OutcomeFailure, verdict, "official: %s", dump(d))
			verdict, d = grade(t, verified.NewLenient(), spec, retrieved(tc.actual), nil)
			require.Equal(t, models.OutcomeSuccess, verdict, "lenient: %s", dump(d))
		})
	}
}

func TestValueTypes_OrderedAndObjects(t *testing.T) {
	t.Parallel()
	ev := verified.New()
	obj := `{"type":"object","properties":{"month":{"type":"string","format":"month"},"count":{"type":"number"}}}`
	cases := []struct {
		name, schema, expected, actual, extra string
		ok                                    bool
		failed                                string
	}{
		{"OrderedInOrder", `{"type":"string"}`, `["a","b","c"]`, `["A","b","c"]`, `,"ordered":true`, true, ""},
		{"OrderedOutOfOrder", `{"type":"string"}`, `["a","b","c"]`, `["c","a","b"]`, `,"ordered":true`, false, "retrieved_data[0]_mismatch"},
		{"OrderedMissing", `{"type":"string"}`, `["a","b"]`, `["a"]`, `,"ordered":true`, false, "retrieved_data_array_values_mismatch"},
		{"Objects", obj, `[{"month":"May","count":8}]`, `[{"month":"may","count":"8"}]`, "", true, ""},
		{"ObjectsExtraKey", obj, `[{"month":"May","count":8}]`, `[{"month":"May","count":8,"year":2022}]`, "", false, "retrieved_data_array_values_mismatch"},
		{"ObjectsMissingKey", obj, `[{"month":"May","count":8}]`, `[{"month":"May"}]`, "", false, "retrieved_data_array_values_mismatch"},
		{"ObjectsWrongValue", obj, `[{"month":"May","count":8}]`, `[{"month":"June","count":8}]`, "", false, "retrieved_data_array_values_mismatch"},
		{"ObjectAsJSONText", obj, `[{"month":"May","count":8}]`, `["{\"month\":\"May\",\"count\":8}"]`, "", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			verdict, d := grade(t, ev, retrieveSpec(tc.schema, tc.expected, tc.extra), retrieved(tc.actual), nil)
			if tc.ok {
				require.Equal(t, models.OutcomeSuccess, verdict, "%s", dump(d))
				return
			}
			require.Equal(t, models.OutcomeFailure, verdict)
			require.Contains(t, failedNames(d), tc.failed)
		})
	}
}

// TestValueTypes_UnsupportedIsAnError: a type, format or schema keyword the
// evaluator does not implement is an error verdict, never a silent pass.
func TestValueTypes_UnsupportedIsAnError(t *testing.T) {
	t.Parallel()
	ev := verified.New()
	for name, schema := range map[string]string{
		"UnknownFormat":  `{"type":"string","format":"full_address"}`,
		"UnknownType":    `{"type":"text"}`,
		"UnknownKeyword": `{"type":"string","pattern":"^a"}`,
		"NestedArray":    `{"type":"array","items":{"type":"string"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			verdict, d := grade(t, ev, retrieveSpec(schema, `["a"]`, ""), retrieved(`["a"]`), nil)
			require.Equal(t, models.OutcomeError, verdict, "%s", dump(d))
			require.NotEmpty(t, errorMessages(d))
		})
	}
	t.Run("ExpectedValueOfWrongType", func(t *testing.T) {
		t.Parallel()
		verdict, d := grade(t, ev, retrieveSpec(`{"type":"string","format":"date"}`, `["not a date"]`, ""), retrieved(`["2023-01-01"]`), nil)
		require.Equal(t, models.OutcomeError, verdict)
		require.Contains(t, errorMessages(d), "not a date")
	})
}
