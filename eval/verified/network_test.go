package verified_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"proctor/eval/verified"
	"proctor/models"
)

// TestNetworkEvent checks each NetworkEventEvaluator option against requests
// that match and near-misses that must not.
func TestNetworkEvent(t *testing.T) {
	t.Parallel()
	const shop = "http://shop.test:7770"
	addToCart := `{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/cart/add","http_method":"POST","post_data":{"product":"22490","qty":2},"response_status":302}}`
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	report := `{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":["^(?!report_type$|from$|to$).*$"],"decode_base64_query":true,` +
		`"expected":{"url":"__SHOP_ADMIN__/reports/report_sales/sales/filter","query_params":{"report_type":["created_at_order"],"from":["02/1/2023"],"to":["02/28/2023"]}},` +
		`"query_params_schema":{"type":"object","properties":{"report_type":{"type":"array","items":{"type":"string"}},"from":{"type":"array","items":{"type":"string","format":"date"}},"to":{"type":"array","items":{"type":"string","format":"date"}}}}}`
	cases := []struct {
		name    string
		spec    string
		entries []entry
		verdict string
		failed  string
	}{
		{"PostMatches", network(addToCart), []entry{
			page(shop + "/product/22490"),
			req("GET", shop+"/static/app.css", 200),
			req("POST", shop+"/cart/add", 302).form("form_key=xyz&product=22490&qty=2"),
		}, models.OutcomeSuccess, ""},
		{"PostUntypedNumberComparesAsText", network(addToCart), []entry{req("POST", shop+"/cart/add/", 302).form("product=22490&qty=2.0")}, models.OutcomeFailure, "missing_navigation_event"},
		{"PostMultipartMixedCaseBoundary", network(addToCart), []entry{req("POST", shop+"/cart/add", 302).multipart("----WebKitFormBoundary7MA4YWxkTrZu0gW", "product", "22490", "qty", "2")}, models.OutcomeSuccess, ""},
		{"LowerCaseMethodFails", network(addToCart), []entry{req("post", shop+"/cart/add", 302).form("product=22490&qty=2")}, models.OutcomeFailure, "missing_navigation_event"},
		{"PostWrongValue", network(addToCart), []entry{req("POST", shop+"/cart/add", 302).form("product=22491&qty=2")}, models.OutcomeFailure, "missing_navigation_event"},
		{"PostMissingField", network(addToCart), []entry{req("POST", shop+"/cart/add", 302).form("product=22490")}, models.OutcomeFailure, "missing_navigation_event"},
		{"WrongStatus", network(addToCart), []entry{req("POST", shop+"/cart/add", 400).form("product=22490&qty=2")}, models.OutcomeFailure, "missing_navigation_event"},
		{"WrongMethod", network(addToCart), []entry{req("GET", shop+"/cart/add?product=22490&qty=2", 302)}, models.OutcomeFailure, "missing_navigation_event"},
		{"WrongHost", network(addToCart), []entry{req("POST", "http://shop.test:9999/cart/add", 302).form("product=22490&qty=2")}, models.OutcomeFailure, "missing_navigation_event"},
		{"WrongProtocol", network(addToCart), []entry{req("POST", "https://shop.test:7770/cart/add", 302).form("product=22490&qty=2")}, models.OutcomeFailure, "missing_navigation_event"},
		{"LastEventOnlyByDefault", network(addToCart), []entry{
			req("POST", shop+"/cart/add", 302).form("product=22490&qty=2"),
			req("POST", shop+"/cart/add", 302).form("product=11111&qty=1"),
		}, models.OutcomeFailure, "missing_navigation_event"},
		{"AnyEventWithoutLastEventOnly", network(strings.Replace(addToCart, `"expected"`, `"last_event_only":false,"expected"`, 1)), []entry{
			req("POST", shop+"/cart/add", 302).form("product=22490&qty=2"),
			req("POST", shop+"/cart/add", 302).form("product=11111&qty=1"),
		}, models.OutcomeSuccess, ""},
		{"URLAlternatives", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":["__SHOP__/subscribe.json","__SHOP__/unsubscribe.json"],"http_method":"POST"}}`),
			[]entry{req("POST", shop+"/unsubscribe.json", 200)}, models.OutcomeSuccess, ""},
		{"URLPattern", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"^__SHOP_ADMIN__/catalog/product/save/id/120/set/\\d+/back/edit$","http_method":"POST","response_status":302}}`),
			[]entry{req("POST", "http://shop.test:7780/admin/catalog/product/save/id/120/set/4/back/edit", 302)}, models.OutcomeSuccess, ""},
		{"URLPatternNearMiss", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"^__SHOP_ADMIN__/catalog/product/save/id/120/set/\\d+/back/edit$","http_method":"POST","response_status":302}}`),
			[]entry{req("POST", "http://shop.test:7780/admin/catalog/product/save/id/121/set/4/back/edit", 302)}, models.OutcomeFailure, "missing_navigation_event"},
		{"QueryParams", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/catalogsearch/result/","query_params":{"q":["Usb Hub"]}}}`),
			[]entry{req("GET", shop+"/catalogsearch/result/?q=usb+hub", 200)}, models.OutcomeSuccess, ""},
		{"QueryParamsExtraParamFails", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/catalogsearch/result/","query_params":{"q":["usb hub"]}}}`),
			[]entry{req("GET", shop+"/catalogsearch/result/?q=usb+hub&product_list_order=price", 200)}, models.OutcomeFailure, "missing_navigation_event"},
		{"QueryParamsEmptyExtraIsMissing", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/catalogsearch/result/?q=usb+hub"}}`),
			[]entry{req("GET", shop+"/catalogsearch/result/?q=usb+hub&cat=", 200)}, models.OutcomeSuccess, ""},
		{"IgnoredQueryParams", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params":["serializer"],"expected":{"url":"__GITLAB__/a/b/-/issues/1.json"}}`),
			[]entry{req("GET", "http://gitlab.test:8023/a/b/-/issues/1.json?serializer=sidebar", 200)}, models.OutcomeSuccess, ""},
		{"IgnoredQueryParamPatterns", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":["^(?!q$).+$"],"expected":{"url":"__SHOP__/search?q=hub"}}`),
			[]entry{req("GET", shop+"/search?q=hub&page=2&sort=price", 200)}, models.OutcomeSuccess, ""},
		{"IgnoredQueryParamPatternsKeepTheRest", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":["^(?!q$).+$"],"expected":{"url":"__SHOP__/search?q=hub"}}`),
			[]entry{req("GET", shop+"/search?q=cable&page=2", 200)}, models.OutcomeFailure, "missing_navigation_event"},
		{"Base64QueryWithDates", network(report),
			[]entry{req("GET", "http://shop.test:7780/admin/reports/report_sales/sales/filter/"+b64("report_type=created_at_order&from=2%2F1%2F2023&to=02%2F28%2F2023&period_type=day")+"/", 200)},
			models.OutcomeSuccess, ""},
		{"Base64QueryWrongDate", network(report),
			[]entry{req("GET", "http://shop.test:7780/admin/reports/report_sales/sales/filter/"+b64("report_type=created_at_order&from=2%2F2%2F2023&to=02%2F28%2F2023")+"/", 200)},
			models.OutcomeFailure, "missing_navigation_event"},
		{"JSONPathPostData", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__GITLAB__/a/b/notes","http_method":"POST","post_data":{"$.note.note":"lgtm","$.note.noteable_type":"MergeRequest"}}}`),
			[]entry{req("POST", "http://gitlab.test:8023/a/b/notes", 200).jsonBody(`{"note":{"note":"LGTM","noteable_type":"MergeRequest","noteable_id":7}}`)}, models.OutcomeSuccess, ""},
		{"JSONPathPostDataWrong", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__GITLAB__/a/b/notes","http_method":"POST","post_data":{"$.note.note":"lgtm"}}}`),
			[]entry{req("POST", "http://gitlab.test:8023/a/b/notes", 200).jsonBody(`{"note":{"note":"looks good"}}`)}, models.OutcomeFailure, "missing_navigation_event"},
		{"KeyPatternPostData", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/f/books/1","http_method":"POST","post_data":{"$.^reply_to_submission_\\d+\\[comment\\]$":"Good book!"}}}`),
			[]entry{req("POST", shop+"/f/books/1", 200).form("reply_to_submission_12%5Bcomment%5D=good+book%21")}, models.OutcomeSuccess, ""},
		{"FilterPathPostData", network(`{"evaluator":"NetworkEventEvaluator","post_data_schema":{"type":"object","properties":{"$['matrix'][?(@.newProduct == 1)].attributes":{"type":"array","items":{"type":"string"}}}},"expected":{"url":"__SHOP__/save","http_method":"POST","post_data":{"$['matrix'][?(@.newProduct == 1)].attributes":["size: s, color: brown"]}}}`),
			[]entry{req("POST", shop+"/save", 200).form("matrix=" + strings.ReplaceAll(`[{"newProduct":0,"attributes":"x"},{"newProduct":1,"attributes":"Size: S, Color: Brown"}]`, "&", "%26"))}, models.OutcomeSuccess, ""},
		{"PostDataPattern", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__GITLAB__/x/-/create/main","http_method":"POST","post_data":{"content":"^.*MIT.*License.*$","_method":"^.*(?!delete$).*$"}}}`),
			[]entry{req("POST", "http://gitlab.test:8023/x/-/create/main", 200).form("content=The+MIT+License+%28MIT%29&_method=post")}, models.OutcomeSuccess, ""},
		{"PostSchemaCurrency", network(`{"evaluator":"NetworkEventEvaluator","post_data_schema":{"type":"object","properties":{"product[price]":{"type":"number","format":"currency"}}},"expected":{"url":"__SHOP__/p/save","http_method":"POST","post_data":{"product[price]":47.0}}}`),
			[]entry{req("POST", shop+"/p/save", 200).form("product%5Bprice%5D=47.05")}, models.OutcomeSuccess, ""},
		{"IgnoredPostDataPatterns", network(`{"evaluator":"NetworkEventEvaluator","ignored_post_data_params_patterns":["^form_key$"],"expected":{"url":"__SHOP__/p/save","http_method":"POST","post_data":{"form_key":"abc"}}}`),
			[]entry{req("POST", shop+"/p/save", 200).form("form_key=abc")}, models.OutcomeFailure, "missing_navigation_event"},
		{"RefererHeader", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP_ADMIN__/mui/index/render/","headers":{"referer":"__SHOP_ADMIN__/sales/order/"}}}`),
			[]entry{req("GET", "http://shop.test:7780/admin/mui/index/render/", 200).header("Referer", "http://shop.test:7780/admin/sales/order/")}, models.OutcomeSuccess, ""},
		{"RefererHeaderOtherPage", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP_ADMIN__/mui/index/render/","headers":{"referer":"__SHOP_ADMIN__/sales/order/"}}}`),
			[]entry{req("GET", "http://shop.test:7780/admin/mui/index/render/", 200).header("Referer", "http://shop.test:7780/admin/customer/")}, models.OutcomeFailure, "missing_navigation_event"},
		{"CookieHeaderPattern", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":[".*"],"expected":{"url":"^.*/route/v1/.*$","headers":{"Cookie":"^(?!.*_osm_directions_engine=fossgis_osrm_(?:bicycle|foot)).*$"}}}`),
			[]entry{req("GET", "http://map.test/route/v1/driving/1,2;3,4?x=1", 200).header("Cookie", "_osm_directions_engine=fossgis_osrm_car")}, models.OutcomeSuccess, ""},
		{"CookieHeaderPatternExcluded", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":[".*"],"expected":{"url":"^.*/route/v1/.*$","headers":{"Cookie":"^(?!.*_osm_directions_engine=fossgis_osrm_(?:bicycle|foot)).*$"}}}`),
			[]entry{req("GET", "http://map.test/route/v1/foot/1,2;3,4", 200).header("Cookie", "_osm_directions_engine=fossgis_osrm_foot")}, models.OutcomeFailure, "missing_navigation_event"},
		{"ResponseContent", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":["\\_"],"expected":{"url":"__SHOP__/rest/V1/carts/mine/totals","response_content":{"items_qty":1,"$.items[0].name":"Beefy Crumble"}}}`),
			[]entry{req("GET", shop+"/rest/V1/carts/mine/totals?_=123", 200).respond("application/json", `{"items_qty":1,"items":[{"name":"Beefy Crumble"}]}`)}, models.OutcomeSuccess, ""},
		{"ResponseContentWrong", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/rest/V1/carts/mine/totals","response_content":{"items_qty":1}}}`),
			[]entry{req("GET", shop+"/rest/V1/carts/mine/totals", 200).respond("application/json", `{"items_qty":2}`)}, models.OutcomeFailure, "missing_navigation_event"},
		{"ResponseCookies", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/wishlist/index/add/","http_method":"POST","response_status":302,"response_cookies":{"mage-messages":"^.*(?=.*laundry)(?=.*detergent).* has been added to your wish list.*$"}}}`),
			[]entry{req("POST", shop+"/wishlist/index/add/", 302).cookie("mage-messages", "%5B%7B%22text%22%3A%22Tide%20Laundry%20Detergent%20has%20been%20added%20to%20your%20Wish%20List.%22%7D%5D")}, models.OutcomeSuccess, ""},
		{"ResponseCookiesOtherProduct", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/wishlist/index/add/","http_method":"POST","response_status":302,"response_cookies":{"mage-messages":"^.*(?=.*laundry)(?=.*detergent).* has been added to your wish list.*$"}}}`),
			[]entry{req("POST", shop+"/wishlist/index/add/", 302).cookie("mage-messages", "Dish%20Soap%20has%20been%20added%20to%20your%20Wish%20List.")}, models.OutcomeFailure, "missing_navigation_event"},
		{"ShouldNotExistAbsent", network(`{"evaluator":"NetworkEventEvaluator","should_not_exist":true,"expected":{"url":"__SHOP__/contact/index/post","http_method":"POST","response_status":-1}}`),
			[]entry{page(shop + "/contact")}, models.OutcomeSuccess, ""},
		{"ShouldNotExistPresent", network(`{"evaluator":"NetworkEventEvaluator","should_not_exist":true,"expected":{"url":"__SHOP__/contact/index/post","http_method":"POST","response_status":-1}}`),
			[]entry{req("POST", shop+"/contact/index/post", 302).form("comment=hi")}, models.OutcomeFailure, "unexpected_navigation_event"},
		{"StaticAssetsIgnored", network(`{"evaluator":"NetworkEventEvaluator","should_not_exist":true,"expected":{"url":"__SHOP__/tracking.js"}}`),
			[]entry{req("GET", shop+"/tracking.js", 200)}, models.OutcomeSuccess, ""},
		{"NoRequestAtAll", network(addToCart), nil, models.OutcomeFailure, "missing_navigation_event"},
	}
	ev := verified.New().WithSites(testSites())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			verdict, d := grade(t, ev, tc.spec, mutated(), harOf(t, tc.entries...))
			require.Equal(t, tc.verdict, verdict, "%s", dump(d))
			if tc.failed != "" {
				require.Contains(t, failedNames(d), tc.failed)
			}
		})
	}
}

// TestNetworkEvent_Navigate: a navigate task checked by a GET compares the last
// page the browser loaded, including its query and status.
func TestNetworkEvent_Navigate(t *testing.T) {
	t.Parallel()
	const shop = "http://shop.test:7770"
	spec := `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"navigate","status":"SUCCESS","retrieved_data":null}},
		{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/products","query_params":{"category":["outdoor"],"sort":["price_asc"]}}}]`
	nav := answer(`{"task_type":"navigate","status":"SUCCESS"}`)
	ev := verified.New().WithSites(testSites())
	xhr := req("GET", shop+"/api/recommendations", 200).header("Accept", "application/json")

	verdict, d := grade(t, ev, spec, nav, harOf(t, page(shop+"/products?category=outdoor&sort=price_asc&q="), xhr, req("GET", shop+"/logo.png", 200)))
	require.Equal(t, models.OutcomeSuccess, verdict, "%s", dump(d))

	verdict, d = grade(t, ev, spec, nav, harOf(t, page(shop+"/products?category=outdoor&sort=price_asc"), page(shop+"/products?category=outdoor")))
	require.Equal(t, models.OutcomeFailure, verdict)
	require.Contains(t, d.EvaluatorsResults[1].Assertions[0].Message, "last page loaded")

	// Pages loaded by address (no user gesture) count; HARs without an Accept
	// header fall back to Sec-Fetch-Dest, and a download is not a page.
	typed := req("GET", shop+"/products?category=outdoor&sort=price_asc", 200).header("Accept", "text/html")
	verdict, _ = grade(t, ev, spec, nav, harOf(t, typed))
	require.Equal(t, models.OutcomeSuccess, verdict)
	doc := req("GET", shop+"/products?category=outdoor&sort=price_asc", 200).header("Sec-Fetch-Dest", "document")
	csv := req("GET", shop+"/export.csv", 200).header("Sec-Fetch-Dest", "document").respond("text/csv", "")
	verdict, _ = grade(t, ev, spec, nav, harOf(t, doc, csv))
	require.Equal(t, models.OutcomeSuccess, verdict)
}

// TestHAR_Problems: a HAR the evaluator cannot read is an error verdict whose
// message names the cause.
func TestHAR_Problems(t *testing.T) {
	t.Parallel()
	spec := network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/cart/add","http_method":"POST"}}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"log":{"entries":[]}}`))
	require.NoError(t, zw.Close())
	big := `{"log":{"entries":[` + strings.Repeat(`{"request":{"method":"GET","url":"http://shop.test:7770/x","headers":[]},"response":{"status":200}},`, 200) +
		`{"request":{"method":"GET","url":"http://shop.test:7770/x","headers":[]},"response":{"status":200}}]}}`
	cases := []struct {
		name string
		har  io.Reader
		ev   *verified.Evaluator
		msg  string
	}{
		{"Missing", nil, nil, "recorded no HAR"},
		{"Empty", strings.NewReader(""), nil, "empty"},
		{"NotJSON", strings.NewReader("<html>oops</html>"), nil, "not valid JSON"},
		{"NotAnObject", strings.NewReader(`[{"request":{}}]`), nil, "not a HAR"},
		{"NoLog", strings.NewReader(`{"entries":[]}`), nil, `no "log"`},
		{"NoEntries", strings.NewReader(`{"log":{"version":"1.2"}}`), nil, `no "entries"`},
		{"EntryWithoutRequest", strings.NewReader(`{"log":{"entries":[{"response":{"status":200}}]}}`), nil, "entry 0"},
		{"WrongFieldType", strings.NewReader(`{"log":{"entries":[{"request":{"method":"GET","url":5},"response":{"status":200}}]}}`), nil, "entry 0"},
		{"Truncated", strings.NewReader(big[:len(big)/2]), nil, "truncated"},
		{"Gzip", bytes.NewReader(gz.Bytes()), nil, "gzip"},
		{"TooLarge", strings.NewReader(big), verified.New().WithSites(testSites()).WithMaxHARBytes(1024), "over the limit of 1 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := tc.ev
			if ev == nil {
				ev = verified.New().WithSites(testSites())
			}
			verdict, d := grade(t, ev, spec, mutated(), tc.har)
			require.Equal(t, models.OutcomeError, verdict)
			require.Contains(t, errorMessages(d), tc.msg)
			require.Equal(t, models.OutcomeSuccess, d.EvaluatorsResults[0].Status, "the agent response is still graded")
		})
	}
	t.Run("LargeHARWithinLimit", func(t *testing.T) {
		t.Parallel()
		verdict, _ := grade(t, verified.New().WithSites(testSites()), spec, mutated(), strings.NewReader(big))
		require.Equal(t, models.OutcomeFailure, verdict)
	})
}

// TestSpec_Problems: specs the evaluator cannot run are errors naming the cause.
func TestSpec_Problems(t *testing.T) {
	t.Parallel()
	har := func() io.Reader { return strings.NewReader(`{"log":{"entries":[]}}`) }
	cases := []struct{ name, spec, msg string }{
		{"NoSpec", "", "no evaluation spec"},
		{"NotAList", `{"evaluator":"AgentResponseEvaluator"}`, "not a list"},
		{"NoAgentResponseEvaluator", `[{"evaluator":"NetworkEventEvaluator","expected":{"url":"http://a/b"}}]`, "exactly one"},
		{"TwoAgentResponseEvaluators", "[" + mutateAgent + "," + mutateAgent + "]", "exactly one"},
		{"UnknownEvaluator", network(`{"evaluator":"ProgramHtmlEvaluator","expected":{}}`), "not supported"},
		{"UnknownOption", network(`{"evaluator":"NetworkEventEvaluator","url_match_mode":"prefix","expected":{"url":"__SHOP__/x"}}`), "url_match_mode"},
		{"UnknownExpectedField", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/x","query_string":{"a":"b"}}}`), "query_string"},
		{"UnresolvedPlaceholder", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__WIKIPEDIA__/wiki/X"}}`), "__WIKIPEDIA__"},
		{"BadPattern", network(`{"evaluator":"NetworkEventEvaluator","ignored_query_params_patterns":["(?<=a)b"],"expected":{"url":"__SHOP__/x"}}`), "pattern"},
		{"BadJSONPath", network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/x","http_method":"POST","post_data":{"$..note":"x"}}}`), "recursive"},
		{"NoResultsSchema", `[{"evaluator":"AgentResponseEvaluator","expected":{"task_type":"mutate","status":"SUCCESS"}}]`, "results_schema"},
		{"BadTaskType", `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"browse","status":"SUCCESS"}}]`, "task_type"},
		{"BadStatus", `[{"evaluator":"AgentResponseEvaluator","results_schema":{"type":"null"},"expected":{"task_type":"mutate","status":"DONE"}}]`, "status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			verdict, d := grade(t, verified.New().WithSites(testSites()), tc.spec, mutated(), har())
			require.Equal(t, models.OutcomeError, verdict)
			require.Contains(t, errorMessages(d), tc.msg)
		})
	}
	t.Run("PlaceholdersNeedSitesWithoutResolvedSpec", func(t *testing.T) {
		t.Parallel()
		verdict, d := grade(t, verified.New(), network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/cart"}}`), mutated(), har())
		require.Equal(t, models.OutcomeError, verdict)
		require.Contains(t, errorMessages(d), "__SHOP__")
	})
	t.Run("ResolvedSpecNeedsNoSites", func(t *testing.T) {
		t.Parallel()
		verdict, d := grade(t, verified.New(), network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"http://shop.test:7770/cart","http_method":"POST"}}`),
			mutated(), harOf(t, req("POST", "http://shop.test:7770/cart", 200)))
		require.Equal(t, models.OutcomeSuccess, verdict, "%s", dump(d))
	})
}

// TestSites: a site may have several URLs (any of them reads as the site), and
// offline evaluation can infer a task's site URLs from its HAR.
func TestSites(t *testing.T) {
	t.Parallel()
	ev := verified.New().WithSites(verified.Sites{"shop": {"http://shop.test:7770", "http://127.0.0.1:7770/"}})
	spec := network(`{"evaluator":"NetworkEventEvaluator","expected":{"url":"__SHOP__/cart/add","http_method":"POST"}}`)
	verdict, d := grade(t, ev, spec, mutated(), harOf(t, req("POST", "http://127.0.0.1:7770/cart/add", 200)))
	require.Equal(t, models.OutcomeSuccess, verdict, "%s", dump(d))
	verdict, _ = grade(t, ev, spec, mutated(), harOf(t, req("POST", "http://127.0.0.2:7770/cart/add", 200)))
	require.Equal(t, models.OutcomeFailure, verdict)

	require.Equal(t, "__SHOPPING_ADMIN__", verified.Placeholder("shopping_admin"))
	require.Equal(t, "__GITLAB__", verified.Placeholder("__GITLAB__"))

	inferred, err := verified.InferSites(harOf(t,
		req("GET", "https://cdn.example/logo.svg", 200),
		page("http://192.168.1.35:7780/admin/dashboard/"),
		page("http://192.168.1.35:9999/forums"),
	), []string{"shopping_admin", "reddit"})
	require.NoError(t, err)
	require.Equal(t, verified.Sites{"shopping_admin": {"http://192.168.1.35:7780/admin"}, "reddit": {"http://192.168.1.35:9999"}}, inferred)

	cfg, err := verified.ReadSitesConfig(strings.NewReader(`{"environments":{"__GITLAB__":{"urls":["http://a:8023","http://b:8023"],"active_url_idx":1}}}`))
	require.NoError(t, err)
	require.Equal(t, verified.Sites{"gitlab": {"http://b:8023", "http://a:8023"}}, cfg)
	_, err = verified.ReadSitesConfig(strings.NewReader(`{"environments":{"__GITLAB__":{"urls":["gitlab"]}}}`))
	require.Error(t, err)
}
