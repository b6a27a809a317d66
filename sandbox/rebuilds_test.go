package sandbox

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServer_PathPrefix(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{PathPrefix: "/elsewhere/copy_1/"})

	status, body := b.get(t, "/elsewhere/copy_1/p1/shop")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="nav-orders" href="/elsewhere/copy_1/p1/shop/orders"`)
	require.Contains(t, body, `id="product-link-desk-lamp" href="/elsewhere/copy_1/p1/shop/products/desk-lamp"`)
	require.Contains(t, body, `action="/elsewhere/copy_1/p1/shop/products"`)
	require.NotContains(t, body, PathPrefix, "no link may lead back to the default prefix")

	status, body = b.get(t, "/elsewhere/copy_1/p1")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="link-forum" href="/elsewhere/copy_1/p1/forum"`)

	status, loc := b.post(t, "/elsewhere/copy_1/p1/shop/cart/add", url.Values{"product_id": {"desk-lamp"}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/elsewhere/copy_1/p1/shop/cart", loc)

	status, body = b.get(t, "/elsewhere/copy_1/p1/shop/products/no-such")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, `id="error-back" href="/elsewhere/copy_1/p1/shop"`, "the error page knows the site under the prefix")

	for _, p := range []string{"/sandbox/p1/shop", "/elsewhere/p1/shop", "/elsewhere/copy_1/", "/elsewhere/copy_1/Upper/shop"} {
		status, _ := b.get(t, p)
		require.Equal(t, http.StatusNotFound, status, p)
	}

	t.Run("an invalid prefix panics", func(t *testing.T) {
		t.Parallel()
		for _, prefix := range []string{"rebuilds/", "/rebuilds", "/", "//", "/a//b/", "/a b/", "/{ns}/", "/Upper/"} {
			require.Panics(t, func() { New(Options{PathPrefix: prefix}) }, prefix)
		}
		require.NotPanics(t, func() { New(Options{PathPrefix: "/a/b-c/d_e/"}) })
	})
}

// rebuildsBundle serves NewRebuilds on a settable clock.
func rebuildsBundle(t *testing.T, broken Defects) *testBundle {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	ts := httptest.NewServer(NewRebuilds(RebuildOptions{Broken: broken, Now: clock.now}))
	t.Cleanup(ts.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &testBundle{ts: ts, client: client, clock: clock}
}

// do sends a request without a body and returns the response with its body read.
func (b *testBundle) do(t *testing.T, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, b.ts.URL+path, http.NoBody)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestRebuilds_RestartAndHealth(t *testing.T) {
	t.Parallel()
	for _, name := range []string{RebuildCopy, RebuildBroken} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := rebuildsBundle(t, AllDefects())
			root := RebuildsPathPrefix + name + "/"

			resp, body := b.do(t, http.MethodGet, root+"health")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "ok\n", body)
			status, _ := b.get(t, root+"v1/shop")
			require.Equal(t, http.StatusOK, status)

			resp, _ = b.do(t, http.MethodGet, root+"restart")
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "a restart needs a POST")
			require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
			resp, _ = b.do(t, http.MethodPost, root+"health")
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

			resp, body = b.do(t, http.MethodPost, root+"restart")
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			require.Empty(t, body)
			for _, p := range []string{root + "health", root + "v1/shop", root + "v2/shop/cart"} {
				resp, _ := b.do(t, http.MethodGet, p)
				require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s while restarting", p)
				require.Equal(t, "1", resp.Header.Get("Retry-After"))
			}

			b.clock.advance(DefaultRestartDowntime - time.Millisecond)
			resp, _ = b.do(t, http.MethodGet, root+"health")
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "still restarting just before the downtime ends")
			b.clock.advance(time.Millisecond)
			resp, _ = b.do(t, http.MethodGet, root+"health")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			status, _ = b.get(t, root+"v1/shop")
			require.Equal(t, http.StatusOK, status)
		})
	}

	t.Run("a restart takes down only its own candidate", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{})
		resp, _ := b.do(t, http.MethodPost, RebuildsPathPrefix+RebuildBroken+"/restart")
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		status, _ := b.get(t, RebuildsPathPrefix+RebuildCopy+"/v1/shop")
		require.Equal(t, http.StatusOK, status)
	})

	t.Run("unknown candidates and paths are 404", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{})
		for _, p := range []string{"/rebuilds/", "/rebuilds/other/v1/shop", "/rebuilds/other/restart", "/rebuilds/copy/", "/rebuilds/copy/v1/nope", "/sandbox/v1/shop"} {
			status, _ := b.get(t, p)
			require.Equal(t, http.StatusNotFound, status, p)
		}
	})
}

// cartLines counts the lines of a visitor's cart.
func cartLines(t *testing.T, b *testBundle, shop string) int {
	t.Helper()
	status, body := b.get(t, shop+"/cart")
	require.Equal(t, http.StatusOK, status)
	return strings.Count(body, `class="cart-line"`)
}

func TestRebuilds_StateAcrossRestarts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		broken  Defects
		rebuild string
		kept    bool
	}{
		{name: "the copy keeps every visitor's state", rebuild: RebuildCopy, broken: AllDefects(), kept: true},
		{name: "the broken rebuild drops every visitor's state", rebuild: RebuildBroken, broken: Defects{StateLostOnRestart: true}, kept: false},
		{name: "the broken rebuild without that defect keeps it", rebuild: RebuildBroken, broken: Defects{WrongImages: true, MissingTab: true, CheckoutNotFound: true}, kept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := rebuildsBundle(t, tc.broken)
			root := RebuildsPathPrefix + tc.rebuild + "/"
			for _, visitor := range []string{"v1", "v2"} {
				status, loc := b.post(t, root+visitor+"/shop/cart/add", url.Values{"product_id": {"desk-lamp"}})
				require.Equal(t, http.StatusSeeOther, status)
				require.Equal(t, root+visitor+"/shop/cart", loc)
				require.Equal(t, 1, cartLines(t, b, root+visitor+"/shop"))
			}
			status, _ := b.post(t, root+"v1/shop/products/hammock/reviews", url.Values{"rating": {"4"}, "text": {"Holds well."}})
			require.Equal(t, http.StatusSeeOther, status)

			resp, _ := b.do(t, http.MethodPost, root+"restart")
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			b.clock.advance(DefaultRestartDowntime)

			want := 0
			if tc.kept {
				want = 1
			}
			for _, visitor := range []string{"v1", "v2"} {
				require.Equal(t, want, cartLines(t, b, root+visitor+"/shop"), visitor)
			}
			_, body := b.get(t, root+"v1/shop/products/hammock")
			require.Equal(t, tc.kept, strings.Contains(body, "Holds well."))
		})
	}
}

func TestRebuilds_Defects(t *testing.T) {
	t.Parallel()
	shop := func(name string) string { return RebuildsPathPrefix + name + "/v1/shop" }

	t.Run("checkout answers the 404 page", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{CheckoutNotFound: true})
		for name, want := range map[string]int{RebuildCopy: http.StatusSeeOther, RebuildBroken: http.StatusNotFound} {
			status, _ := b.post(t, shop(name)+"/cart/add", url.Values{"product_id": {"desk-lamp"}})
			require.Equal(t, http.StatusSeeOther, status)
			resp, err := b.client.PostForm(b.ts.URL+shop(name)+"/checkout", url.Values{"name": {"Sam"}, "address": {"4 Elm Street"}})
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, want, resp.StatusCode, name)
			if want == http.StatusNotFound {
				require.Contains(t, string(body), "There is no page at this address.")
				require.Contains(t, string(body), `id="error-back" href="`+shop(name)+`"`)
				require.NotEmpty(t, resp.Header.Get("Content-Security-Policy"), "the 404 page keeps the security headers")
				require.Equal(t, 1, cartLines(t, b, shop(name)), "nothing was ordered")
			}
		}
	})

	t.Run("the Orders tab is missing but its pages are not", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{MissingTab: true})
		tabs := regexp.MustCompile(`<a id="(nav-[a-z-]+)"`)
		for name, want := range map[string][]string{
			RebuildCopy:   {"nav-products", "nav-cart", "nav-orders", "nav-admin"},
			RebuildBroken: {"nav-products", "nav-cart", "nav-admin"},
		} {
			for _, page := range []string{"", "/cart", "/orders", "/products/desk-lamp", "/no-such-page"} {
				_, body := b.get(t, shop(name)+page)
				var got []string
				for _, m := range tabs.FindAllStringSubmatch(body, -1) {
					got = append(got, m[1])
				}
				require.Equal(t, want, got, "%s%s", name, page)
			}
			status, body := b.get(t, shop(name)+"/orders")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, body, `id="order-link-1005"`)
		}
	})

	t.Run("wrong images restyle the product cards under a matching CSP", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{WrongImages: true})
		style := regexp.MustCompile(`(?s)<style>(.*?)</style>`)
		for name, wrong := range map[string]bool{RebuildCopy: false, RebuildBroken: true} {
			for _, page := range []string{"", "/products/desk-lamp", "/cart", "/no-such-page"} {
				resp, body := b.do(t, http.MethodGet, shop(name)+page)
				m := style.FindStringSubmatch(body)
				require.NotNil(t, m, "%s%s has its stylesheet", name, page)
				sum := sha256.Sum256([]byte(m[1]))
				require.Contains(t, resp.Header.Get("Content-Security-Policy"), "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'",
					"%s%s: the browser would refuse a stylesheet the CSP does not hash", name, page)
				require.Equal(t, wrong, strings.Contains(m[1], "li.product::before"), "%s%s", name, page)
				if !wrong {
					require.Equal(t, styleSheet, m[1], "the copy's stylesheet is the sandbox's")
				}
			}
		}
	})

	t.Run("without defects the broken rebuild is a copy", func(t *testing.T) {
		t.Parallel()
		b := rebuildsBundle(t, Defects{})
		for _, page := range []string{"", "/products/desk-lamp", "/cart", "/orders", "/orders/1003", "/admin", "/no-such-page"} {
			copyStatus, copyBody := b.get(t, shop(RebuildCopy)+page)
			brokenStatus, brokenBody := b.get(t, shop(RebuildBroken)+page)
			require.Equal(t, copyStatus, brokenStatus, page)
			require.Equal(t, strings.ReplaceAll(copyBody, "/"+RebuildCopy+"/", "/"+RebuildBroken+"/"), brokenBody, page)
		}
	})
}

func TestRebuildCandidate(t *testing.T) {
	t.Parallel()
	require.Equal(t, RebuildURLs{
		BaseURL:    "http://127.0.0.1:8080/rebuilds/broken/{visitor}/shop",
		RestartURL: "http://127.0.0.1:8080/rebuilds/broken/restart",
		HealthURL:  "http://127.0.0.1:8080/rebuilds/broken/health",
	}, RebuildCandidate("http://127.0.0.1:8080/", RebuildBroken))
}
