package hiddentest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatus_JSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    Status
		matches []int
		misses  []int
	}{
		{`404`, Status{Code: 404}, []int{404}, []int{400, 200}},
		{`"2xx"`, Status{Class: 2}, []int{200, 204, 299}, []int{300, 199, 404}},
		{` "5xx" `, Status{Class: 5}, []int{500, 503}, []int{499}},
	}
	for _, tc := range cases {
		var s Status
		require.NoError(t, json.Unmarshal([]byte(tc.in), &s), tc.in)
		require.Equal(t, tc.want, s)
		for _, c := range tc.matches {
			require.True(t, s.Matches(c), "%s matches %d", tc.in, c)
		}
		for _, c := range tc.misses {
			require.False(t, s.Matches(c), "%s misses %d", tc.in, c)
		}
		out, err := json.Marshal(s)
		require.NoError(t, err)
		var back Status
		require.NoError(t, json.Unmarshal(out, &back))
		require.Equal(t, s, back)
	}
	for _, bad := range []string{`99`, `600`, `"200"`, `"6xx"`, `"2XX"`, `2.5`, `true`, `{}`, `"xx"`} {
		var s Status
		require.Error(t, json.Unmarshal([]byte(bad), &s), bad)
	}
}

func TestRelativeURL(t *testing.T) {
	t.Parallel()
	const base = "http://127.0.0.1:8080/sandbox/a1/shop"
	cases := []struct{ target, want string }{
		{base, "/"},
		{base + "/", "/"},
		{base + "/cart", "/cart"},
		{base + "/products?q=lamp&category=", "/products?q=lamp&category="},
		{base + "/orders/1007#top", "/orders/1007"},
		{"/sandbox/a1/shop/cart", "/cart"},                                                         // a Location header's absolute path
		{"cart", "http://127.0.0.1:8080/sandbox/a1/cart"},                                          // resolved against the base, which has no trailing slash
		{"http://127.0.0.1:8080/sandbox/a1/shopping", "http://127.0.0.1:8080/sandbox/a1/shopping"}, // not under the base path
		{"http://127.0.0.1:9090/sandbox/a1/shop/cart", "http://127.0.0.1:9090/sandbox/a1/shop/cart"},
		{"https://example.com/x", "https://example.com/x"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, RelativeURL(base, tc.target), tc.target)
	}
}

func TestRequestTest_URLAndForm(t *testing.T) {
	t.Parallel()
	r := &RequestTest{Path: "/products?sort=name", Query: map[string]string{"q": "desk lamp", "category": "lighting"}}
	require.Equal(t, "http://h/shop/products?sort=name&category=lighting&q=desk+lamp", r.URL("http://h/shop/"))
	require.Equal(t, "http://h/shop/../../etc/passwd", JoinURL("http://h/shop", "/../../etc/passwd"))
	require.Equal(t, "product_id=desk-lamp&quantity=2", (&RequestTest{Form: map[string]string{"quantity": "2", "product_id": "desk-lamp"}}).FormBody())
	require.Equal(t, 0, (&RequestTest{MaxRedirects: 5}).Redirects())
	require.Equal(t, DefaultMaxRedirects, (&RequestTest{FollowRedirects: true}).Redirects())
	require.Equal(t, 3, (&RequestTest{FollowRedirects: true, MaxRedirects: 3}).Redirects())
}

func TestRequestExpect_Failures(t *testing.T) {
	t.Parallel()
	e := &RequestExpect{
		Status: &Status{Class: 2},
		Headers: []HeaderExpect{
			{Name: "content-type", TextMatch: TextMatch{Contains: "text/html"}},
			{Name: "X-Powered-By", Absent: true},
			{Name: "Cache-Control"},
		},
		BodyContains:    []string{"All products"},
		BodyNotContains: []string{"Traceback"},
		BodyMatches:     []string{`[0-9]+ products`},
	}
	good := Response{Status: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Cache-Control": {"no-store"}},
		Body: []byte("<h1>All products</h1><p>20 products</p>")}
	require.Empty(t, e.Failures(good))

	bad := Response{Status: 500, Header: http.Header{"Content-Type": {"text/plain"}, "X-Powered-By": {"PHP"}},
		Body: []byte("Traceback (most recent call last)")}
	require.Equal(t, []string{
		"the status is 500, expected 2xx",
		`the header content-type is "text/plain", expected it containing "text/html"`,
		`the header X-Powered-By is present ("PHP"), expected none`,
		"the header Cache-Control is missing",
		`the body does not contain "All products"`,
		`the body contains "Traceback"`,
		"the body does not match /[0-9]+ products/",
	}, e.Failures(bad))

	redirect := &RequestExpect{Status: &Status{Code: 303}, Location: &TextMatch{Equals: ptr("/cart")}}
	require.Empty(t, redirect.Failures(Response{Status: 303, Location: "/cart"}))
	require.Equal(t, []string{`the redirect location is "/", expected one equal to "/cart"`},
		redirect.Failures(Response{Status: 303, Location: "/"}))
	require.Equal(t, []string{"the status is 200, expected 303", `there is no redirect location, expected one equal to "/cart"`},
		redirect.Failures(Response{Status: 200}))
}

func TestSystemTest_ProbeFailure(t *testing.T) {
	t.Parallel()
	traversal := &SystemTest{Kind: SystemSecurity, Probe: ProbePathTraversal}
	require.Empty(t, traversal.ProbeFailure(nil, []byte("<h1>Not Found</h1>")))
	require.Equal(t, `the body shows "root:x:0:0:"`, traversal.ProbeFailure(nil, []byte("root:x:0:0:root:/root:/bin/bash\n")))

	listing := &SystemTest{Kind: SystemSecurity, Probe: ProbeDirectoryListing, Markers: []string{"Parent Directory"}}
	require.Equal(t, `the body shows "Index of /"`, listing.ProbeFailure(nil, []byte("<title>Index of /static</title>")))
	require.Equal(t, `the body shows "Parent Directory"`, listing.ProbeFailure(nil, []byte("<a>Parent Directory</a>")))

	disclosure := &SystemTest{Kind: SystemSecurity, Probe: ProbeErrorDisclosure}
	require.Equal(t, `the body shows "goroutine "`, disclosure.ProbeFailure(nil, []byte("panic: boom\n\ngoroutine 1 [running]:")))
	require.Empty(t, disclosure.ProbeFailure(nil, []byte("The form could not be read.")))

	headers := &SystemTest{Kind: SystemSecurity, Probe: ProbeSecurityHeaders, Headers: []string{"Content-Security-Policy", "X-Content-Type-Options"}}
	require.Empty(t, headers.ProbeFailure(http.Header{"Content-Security-Policy": {"default-src 'none'"}, "X-Content-Type-Options": {"nosniff"}}, nil))
	require.Equal(t, "the response lacks the header Content-Security-Policy, X-Content-Type-Options",
		headers.ProbeFailure(http.Header{"X-Content-Type-Options": {" "}}, nil))
}

func TestTimeoutsAndDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(DefaultBrowserTimeoutMS), (&Test{Group: GroupBrowser}).Timeout().Milliseconds())
	require.Equal(t, int64(5000), (&Test{Group: GroupBrowser, TimeoutMS: 5000}).Timeout().Milliseconds())
	require.Equal(t, int64(DefaultOfflineBuildTimeoutMS), (&Test{Group: GroupSystem, System: &SystemTest{Kind: SystemOfflineBuild}}).Timeout().Milliseconds())
	require.Equal(t, int64(DefaultRestartStepTimeoutMS), (&Step{Action: ActionRestart}).Timeout().Milliseconds())
	require.Equal(t, int64(DefaultStepTimeoutMS), (&Step{Action: ActionClick}).Timeout().Milliseconds())
	require.InDelta(t, DefaultThreshold, (&Checkpoint{}).EffectiveThreshold(), 0)
	require.InDelta(t, 0.9, (&Checkpoint{Threshold: ptr(0.9)}).EffectiveThreshold(), 0)
	require.Equal(t, Viewport{Width: 1280, Height: 800}, (&Suite{}).EffectiveViewport())
	require.Equal(t, DefaultParallelism, (&Suite{}).EffectiveParallelism())
	require.Equal(t, 1, (&Suite{Parallelism: 1}).EffectiveParallelism())
	require.Equal(t, MaxParallelism, (&Suite{Parallelism: MaxParallelism}).EffectiveParallelism())
}
