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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testBundle is a running sandbox with a client that does not follow redirects.
type testBundle struct {
	srv    *Server
	ts     *httptest.Server
	client *http.Client
	clock  *fakeClock
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func setup(t *testing.T, opts Options) *testBundle {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	if opts.Now == nil {
		opts.Now = clock.now
	}
	srv := New(opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, srv.Close())
	})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &testBundle{srv: srv, ts: ts, client: client, clock: clock}
}

// get fetches a path and returns the status and body.
func (b *testBundle) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := b.client.Get(b.ts.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// post submits a form and returns the status and the redirect target.
func (b *testBundle) post(t *testing.T, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := b.client.PostForm(b.ts.URL+path, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Location")
}

func title(body string) string {
	m := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestServer_PagesRender(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	pages := []struct{ path, title, contains string }{
		{"/sandbox/t1", "Proctor sandbox", `id="link-shop"`},
		{"/sandbox/t1/", "Proctor sandbox", `id="link-data"`},
		{"/sandbox/t1/shop", "All products · Sandbox Shop", `id="product-link-mech-keyboard"`},
		{"/sandbox/t1/shop/", "All products · Sandbox Shop", `id="search"`},
		{"/sandbox/t1/shop/products?q=lamp", "Search results for “lamp” · Sandbox Shop", `id="product-link-floor-lamp"`},
		{"/sandbox/t1/shop/products?category=kitchen&sort=price_asc", "Kitchen · Sandbox Shop", `id="product-link-spice-rack"`},
		{"/sandbox/t1/shop/products/french-press", "French Press 1 L · Sandbox Shop", "The glass cracked after a month"},
		{"/sandbox/t1/shop/products/side-table", "Round Side Table · Sandbox Shop", "Out of stock"},
		{"/sandbox/t1/shop/cart", "Your cart · Sandbox Shop", `id="cart-empty"`},
		{"/sandbox/t1/shop/orders", "Your orders · Sandbox Shop", `id="order-link-1005"`},
		{"/sandbox/t1/shop/orders/1005", "Order #1005 · Sandbox Shop", "$77.00"},
		{"/sandbox/t1/shop/admin", "Shop admin · Sandbox Shop", "Mira Kovac"},
		{"/sandbox/t1/forum", "Top posts · Sandbox Forum", `id="post-link-7"`},
		{"/sandbox/t1/forum?sort=new&tag=data", "New posts tagged data · Sandbox Forum", `id="post-link-15"`},
		{"/sandbox/t1/forum/posts/6", "Which bike station is the busiest? · Sandbox Forum", `id="comment-form"`},
		{"/sandbox/t1/forum/new", "New post · Sandbox Forum", `id="new-post-form"`},
		{"/sandbox/t1/forum/users", "Users · Sandbox Forum", `id="user-link-frank"`},
		{"/sandbox/t1/forum/users/carol", "carol · Sandbox Forum", "Weekly data digest #12"},
		{"/sandbox/t1/data", "Datasets · Sandbox Data Portal", `id="dataset-link-bike-trips"`},
		{"/sandbox/t1/data/datasets/air-quality", "City Air Quality 2024 · Sandbox Data Portal", "<svg"},
		{"/sandbox/t1/data/datasets/library-loans?year=2023&sort=loans&dir=desc", "Library Loans by Branch · Sandbox Data Portal", "Showing 5 of 15 rows"},
		{"/sandbox/t1/data/datasets/city-budget/metadata", "City Budget 2024: metadata · Sandbox Data Portal", "City Finance Office"},
	}
	for _, p := range pages {
		status, body := b.get(t, p.path)
		require.Equal(t, http.StatusOK, status, p.path)
		require.Equal(t, p.title, strings.ReplaceAll(title(body), "&#39;", "'"), p.path)
		require.Contains(t, body, "<h1", p.path)
		require.Contains(t, body, `<html lang="en">`, p.path)
		require.Contains(t, body, p.contains, p.path)
	}
}

func TestServer_Headers(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	resp, err := b.client.Get(b.ts.URL + "/sandbox/h1/shop")
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := sha256.Sum256([]byte(styleSheet))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "<style>"+styleSheet+"</style>", "the inline stylesheet must be byte-identical to the hashed one")
}

func TestServer_NotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for _, p := range []string{
		"/sandbox/", "/sandbox//shop", "/sandbox/Upper/shop", "/sandbox/a_b/shop", "/sandbox/a.b/shop",
		"/sandbox/" + strings.Repeat("a", 41) + "/shop", "/elsewhere", "/sandbox/ok/nope",
		"/sandbox/ok/shop/products/espresso-machine", "/sandbox/ok/shop/orders/999", "/sandbox/ok/shop/orders/x",
		"/sandbox/ok/forum/posts/99", "/sandbox/ok/forum/posts/x", "/sandbox/ok/forum/users/zoe",
		"/sandbox/ok/data/datasets/nope", "/sandbox/ok/data/datasets/nope/download.csv",
	} {
		status, body := b.get(t, p)
		require.Equal(t, http.StatusNotFound, status, p)
		require.Contains(t, body, "<title>Not Found", p)
	}
	status, _ := b.get(t, "/sandbox/"+strings.Repeat("a", 40)+"/shop")
	require.Equal(t, http.StatusOK, status)
	require.False(t, ValidNamespace("a/b"))
	require.True(t, ValidNamespace("a42t1"))
}

func TestServer_NamespacesAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	status, loc := b.post(t, "/sandbox/ns-a/shop/cart/add", url.Values{"product_id": {"hammock"}, "quantity": {"2"}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/sandbox/ns-a/shop/cart", loc)

	_, cartA := b.get(t, "/sandbox/ns-a/shop/cart")
	require.Contains(t, cartA, `id="cart-line-hammock"`)
	require.Contains(t, cartA, "Added 2 × Travel Hammock to your cart.")
	_, cartB := b.get(t, "/sandbox/ns-b/shop/cart")
	require.Contains(t, cartB, `id="cart-empty"`)
	require.NotContains(t, cartB, "hammock")

	b.post(t, "/sandbox/ns-a/forum/posts/1/vote", url.Values{"direction": {"up"}})
	_, forumA := b.get(t, "/sandbox/ns-a/forum/posts/1")
	_, forumB := b.get(t, "/sandbox/ns-b/forum/posts/1")
	require.Contains(t, forumA, `id="score-1">43<`)
	require.Contains(t, forumB, `id="score-1">42<`)
}

func TestServer_ShopFlows(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const base = "/sandbox/shop-flow/shop"

	t.Run("Cart", func(t *testing.T) {
		status, _ := b.post(t, base+"/cart/add", url.Values{"product_id": {"desk-lamp"}})
		require.Equal(t, http.StatusSeeOther, status)
		b.post(t, base+"/cart/add", url.Values{"product_id": {"desk-lamp"}, "quantity": {"2"}})
		_, cart := b.get(t, base+"/cart")
		require.Regexp(t, `id="cart-line-desk-lamp">.*cart-qty">3<`, cart)
		require.Contains(t, cart, `id="cart-subtotal">$102.00<`)

		status, loc := b.post(t, base+"/cart/remove", url.Values{"product_id": {"desk-lamp"}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/cart", loc)
		_, cart = b.get(t, base+"/cart")
		require.Contains(t, cart, `id="cart-empty"`)
	})

	t.Run("CartRefusals", func(t *testing.T) {
		for _, tc := range []struct {
			form   url.Values
			status int
		}{
			{url.Values{"product_id": {"nope"}}, http.StatusNotFound},
			{url.Values{"product_id": {"side-table"}}, http.StatusConflict},
			{url.Values{"product_id": {"oak-desk"}, "quantity": {"4"}}, http.StatusConflict},
			{url.Values{"product_id": {"oak-desk"}, "quantity": {"0"}}, http.StatusBadRequest},
			{url.Values{"product_id": {"oak-desk"}, "quantity": {"x"}}, http.StatusBadRequest},
		} {
			status, _ := b.post(t, base+"/cart/add", tc.form)
			require.Equal(t, tc.status, status, tc.form.Encode())
		}
		status, _ := b.post(t, base+"/checkout", url.Values{"name": {"A"}, "address": {"B"}})
		require.Equal(t, http.StatusConflict, status, "empty cart")
	})

	t.Run("Checkout", func(t *testing.T) {
		b.post(t, base+"/cart/add", url.Values{"product_id": {"chef-knife"}, "quantity": {"2"}})
		status, _ := b.post(t, base+"/checkout", url.Values{"name": {"Sam"}, "address": {""}})
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.post(t, base+"/checkout", url.Values{"name": {"Sam"}, "address": {"x"}, "shipping": {"drone"}})
		require.Equal(t, http.StatusBadRequest, status)

		status, loc := b.post(t, base+"/checkout", url.Values{"name": {"Sam Sandbox"}, "address": {"12 Harbour Road"}, "shipping": {"express"}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/orders/1007", loc)
		_, page := b.get(t, loc)
		require.Contains(t, page, "Your order #1007 has been placed.")
		require.Contains(t, page, `id="order-total">$99.00<`)
		require.Contains(t, page, `id="order-date">2026-05-01<`)
		_, orders := b.get(t, base+"/orders")
		require.Contains(t, orders, `id="order-link-1007"`)
		_, product := b.get(t, base+"/products/chef-knife")
		require.Contains(t, product, `id="product-stock">13 in stock<`)
		_, cart := b.get(t, base+"/cart")
		require.Contains(t, cart, `id="cart-empty"`)
	})

	t.Run("Review", func(t *testing.T) {
		status, _ := b.post(t, base+"/products/usb-c-cable/reviews", url.Values{"rating": {"6"}, "text": {"x"}})
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.post(t, base+"/products/usb-c-cable/reviews", url.Values{"rating": {"2"}, "text": {"  "}})
		require.Equal(t, http.StatusBadRequest, status)
		status, loc := b.post(t, base+"/products/usb-c-cable/reviews", url.Values{"rating": {"2"}, "text": {"Stopped charging after a week."}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/products/usb-c-cable", loc)
		_, page := b.get(t, loc)
		require.Contains(t, page, "Stopped charging after a week.")
		require.Contains(t, page, "Rated 3.3 / 5 from 3 reviews")
	})

	t.Run("AdminPrice", func(t *testing.T) {
		status, _ := b.post(t, base+"/admin/products/floor-lamp", url.Values{"price": {"-1"}, "stock": {"5"}})
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.post(t, base+"/admin/products/floor-lamp", url.Values{"price": {"79"}, "stock": {"many"}})
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.post(t, base+"/admin/products/nope", url.Values{"price": {"79"}, "stock": {"1"}})
		require.Equal(t, http.StatusNotFound, status)

		status, loc := b.post(t, base+"/admin/products/floor-lamp", url.Values{"price": {"$79.00"}, "stock": {"7"}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/admin", loc)
		_, admin := b.get(t, loc)
		require.Contains(t, admin, "Saved Linen Floor Lamp: $79.00, 7 in stock.")
		_, page := b.get(t, base+"/products/floor-lamp")
		require.Contains(t, page, `id="product-price">$79.00<`)
		require.Contains(t, page, `id="product-stock">7 in stock<`)
	})
}

func TestServer_ForumFlows(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const base = "/sandbox/forum-flow/forum"

	t.Run("Post", func(t *testing.T) {
		status, _ := b.post(t, base+"/posts", url.Values{"title": {""}, "body": {"x"}})
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.post(t, base+"/posts", url.Values{"title": {"x"}, "body": {"y"}, "tag": {"meta"}})
		require.Equal(t, http.StatusBadRequest, status)
		status, loc := b.post(t, base+"/posts", url.Values{"title": {"Looking for a camping buddy"}, "body": {"Anyone up for a weekend trip in June?"}, "tag": {"question"}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/posts/16", loc)
		_, page := b.get(t, loc)
		require.Contains(t, page, `<h1 id="post-title">Looking for a camping buddy</h1>`)
		_, list := b.get(t, base+"?sort=new")
		require.Less(t, strings.Index(list, `id="post-16"`), strings.Index(list, `id="post-15"`), "the new post comes first")
		_, user := b.get(t, base+"/users/"+currentUser)
		require.Contains(t, user, "Looking for a camping buddy")
	})

	t.Run("Comment", func(t *testing.T) {
		status, _ := b.post(t, base+"/posts/1/comments", url.Values{"body": {" "}})
		require.Equal(t, http.StatusBadRequest, status)
		status, loc := b.post(t, base+"/posts/1/comments", url.Values{"body": {"The Arc Desk Lamp has a warm mode too."}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"/posts/1", loc)
		_, page := b.get(t, loc)
		require.Contains(t, page, "The Arc Desk Lamp has a warm mode too.")
		require.Contains(t, page, "3 comments")
	})

	t.Run("Vote", func(t *testing.T) {
		score := func() string {
			_, page := b.get(t, base+"/posts/15")
			return regexp.MustCompile(`id="score-15">(-?\d+)<`).FindStringSubmatch(page)[1]
		}
		require.Equal(t, "11", score())
		status, loc := b.post(t, base+"/posts/15/vote", url.Values{"direction": {"up"}, "next": {base + "?sort=new"}})
		require.Equal(t, http.StatusSeeOther, status)
		require.Equal(t, base+"?sort=new", loc)
		require.Equal(t, "12", score())
		b.post(t, base+"/posts/15/vote", url.Values{"direction": {"up"}})
		require.Equal(t, "11", score(), "voting the same way again takes the vote back")
		_, loc = b.post(t, base+"/posts/15/vote", url.Values{"direction": {"down"}, "next": {"https://evil.example/"}})
		require.Equal(t, base+"/posts/15", loc, "next must stay on the forum")
		require.Equal(t, "10", score())
		status, _ = b.post(t, base+"/posts/15/vote", url.Values{"direction": {"sideways"}})
		require.Equal(t, http.StatusBadRequest, status)
	})
}

func TestServer_DataPortal(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	const base = "/sandbox/data-1/data"

	resp, err := b.client.Get(b.ts.URL + base + "/datasets/bike-trips/download.csv")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="bike-trips.csv"`, resp.Header.Get("Content-Disposition"))
	csv, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	require.Len(t, lines, 11)
	require.Equal(t, "station,district,trips_2024,docks", lines[0])
	require.Equal(t, "Central Station,Old Town,32410,40", lines[1])

	_, page := b.get(t, base+"/datasets/bike-trips?district=Harbour&sort=trips_2024&dir=desc")
	require.Contains(t, page, "Showing 3 of 10 rows")
	require.Less(t, strings.Index(page, "Harbour Front"), strings.Index(page, "Ferry Terminal"))
	require.NotContains(t, page, "<td>Central Station</td>")
	require.Contains(t, page, `aria-sort="descending"`)
	require.Contains(t, page, "<title>Harbour Front: 24,880</title>")

	_, page = b.get(t, base+"/datasets/air-quality?sort=pm25&dir=desc")
	rows := regexp.MustCompile(`<tr><td>(2024-\d\d)</td>`).FindAllStringSubmatch(page, -1)
	require.Equal(t, "2024-07", rows[0][1])

	_, page = b.get(t, base+"/datasets/bike-trips?district=Nowhere")
	require.Contains(t, page, "Showing 10 of 10 rows", "an unknown filter value is ignored")
}

func TestServer_IdleNamespacesAreDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{IdleTTL: 10 * time.Minute})
	b.post(t, "/sandbox/old/shop/cart/add", url.Values{"product_id": {"hammock"}})
	b.get(t, "/sandbox/busy/shop/cart")
	require.Equal(t, 2, b.srv.namespaces())

	b.clock.advance(6 * time.Minute)
	b.get(t, "/sandbox/busy/shop/cart")
	b.clock.advance(6 * time.Minute)
	b.get(t, "/sandbox/busy/shop/cart") // sweeps: old idle 12 min, busy 0
	require.Equal(t, 1, b.srv.namespaces())

	_, cart := b.get(t, "/sandbox/old/shop/cart")
	require.Contains(t, cart, `id="cart-empty"`, "a dropped namespace starts again from the seed")
	require.Equal(t, 2, b.srv.namespaces())

	require.NoError(t, b.srv.Close())
	require.Equal(t, 0, b.srv.namespaces())
}

func TestServer_MaxNamespaces(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{MaxNamespaces: 2})
	b.get(t, "/sandbox/n1/shop")
	b.clock.advance(time.Second)
	b.get(t, "/sandbox/n2/shop")
	b.clock.advance(time.Second)
	b.get(t, "/sandbox/n1/shop")
	b.clock.advance(time.Second)
	b.get(t, "/sandbox/n3/shop") // evicts n2, the least recently used
	require.Equal(t, 2, b.srv.namespaces())
	b.srv.mu.Lock()
	_, has1 := b.srv.spaces["n1"]
	_, has2 := b.srv.spaces["n2"]
	b.srv.mu.Unlock()
	require.True(t, has1)
	require.False(t, has2)
}

func TestServer_Concurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := []string{"c1", "c2"}[i%2]
			for range 5 {
				resp, err := b.client.PostForm(b.ts.URL+"/sandbox/"+ns+"/shop/cart/add", url.Values{"product_id": {"usb-c-cable"}})
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	for _, ns := range []string{"c1", "c2"} {
		_, cart := b.get(t, "/sandbox/"+ns+"/shop/cart")
		require.Regexp(t, `cart-qty">20<`, cart)
	}
}

func TestSiteURLs(t *testing.T) {
	t.Parallel()
	require.Equal(t, map[string]string{
		"shop":  "http://127.0.0.1:8080/sandbox/{episode}/shop",
		"forum": "http://127.0.0.1:8080/sandbox/{episode}/forum",
		"data":  "http://127.0.0.1:8080/sandbox/{episode}/data",
	}, SiteURLs("http://127.0.0.1:8080/"))
}
