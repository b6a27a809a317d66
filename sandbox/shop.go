package sandbox

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the shop's forms.
const (
	maxQuantity    = 99
	maxReviewText  = 2000
	maxAddress     = 200
	maxStock       = 100000
	maxPriceCents  = 10000000
	maxReviews     = 500 // per namespace, to bound memory
	maxOrders      = 500
	dateFormat     = "2006-01-02"
	dateTimeFormat = "2006-01-02 15:04"
)

// option is a choice in a select.
type option struct {
	Value, Label string
}

func productSorts() []option {
	return []option{
		{"", "Featured"}, {"price_asc", "Price: low to high"}, {"price_desc", "Price: high to low"},
		{"rating", "Average rating"}, {"name", "Name"},
	}
}

// productRow is a product with what listings show about it.
type productRow struct {
	*product
	CategoryName string
	Rating       float64
	Reviews      int
	InCart       int
}

func (st *shopState) row(p *product) productRow {
	avg, n := st.rating(p.ID)
	return productRow{product: p, CategoryName: categoryName(p.Category), Rating: avg, Reviews: n, InCart: st.cartQty(p.ID)}
}

// productList is the data of the product list page.
type productList struct {
	Q, Category, Sort string
	Categories        []category
	Sorts             []option
	Products          []productRow
	Action            string
}

// shopProducts lists products, filtered by ?q= (every word must appear in the
// name, description or category) and ?category=, ordered by ?sort=.
func (s *Server) shopProducts(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := sp.shop
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	cat := r.URL.Query().Get("category")
	sortBy := r.URL.Query().Get("sort")
	words := strings.Fields(strings.ToLower(q))

	var rows []productRow
	for _, p := range st.products {
		if cat != "" && p.Category != cat {
			continue
		}
		hay := strings.ToLower(p.Name + " " + p.Description + " " + categoryName(p.Category))
		match := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				match = false
				break
			}
		}
		if match {
			rows = append(rows, st.row(p))
		}
	}
	switch sortBy {
	case "price_asc":
		slices.SortStableFunc(rows, func(a, b productRow) int { return a.Price - b.Price })
	case "price_desc":
		slices.SortStableFunc(rows, func(a, b productRow) int { return b.Price - a.Price })
	case "rating":
		slices.SortStableFunc(rows, func(a, b productRow) int {
			switch {
			case a.Rating > b.Rating:
				return -1
			case a.Rating < b.Rating:
				return 1
			}
			return b.Reviews - a.Reviews
		})
	case "name":
		slices.SortStableFunc(rows, func(a, b productRow) int { return strings.Compare(a.Name, b.Name) })
	default:
		sortBy = ""
	}

	title := "All products"
	switch {
	case q != "":
		title = fmt.Sprintf("Search results for “%s”", q)
	case cat != "":
		title = categoryName(cat)
	}
	v := s.view(r, siteShop, title)
	v.Flash = takeFlash(sp)
	v.Data = productList{
		Q: q, Category: cat, Sort: sortBy, Categories: shopCategories(), Sorts: productSorts(), Products: rows,
		Action: s.sitePath(v.NS, siteShop) + "/products",
	}
	s.render(w, http.StatusOK, "shop_products", v)
}

// productPage is the data of a product page.
type productPage struct {
	productRow
	ReviewList []*review
	Base       string
}

// shopProduct shows a product with its reviews, the add-to-cart form and the
// review form.
func (s *Server) shopProduct(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p := sp.shop.product(r.PathValue("id"))
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such product.")
		return
	}
	v := s.view(r, siteShop, p.Name)
	v.Flash = takeFlash(sp)
	v.Data = productPage{productRow: sp.shop.row(p), ReviewList: sp.shop.productReviews(p.ID), Base: v.Home}
	s.render(w, http.StatusOK, "shop_product", v)
}

// shopAddReview adds the visitor's review to a product.
func (s *Server) shopAddReview(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := sp.shop
	p := st.product(r.PathValue("id"))
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such product.")
		return
	}
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	rating, err := strconv.Atoi(r.PostFormValue("rating"))
	if err != nil || rating < 1 || rating > 5 {
		s.fail(w, r, http.StatusBadRequest, "Choose a rating from 1 to 5 stars.")
		return
	}
	text := strings.TrimSpace(r.PostFormValue("text"))
	if text == "" || utf8.RuneCountInString(text) > maxReviewText {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Write a review of 1 to %d characters.", maxReviewText))
		return
	}
	if len(st.reviews) >= maxReviews {
		s.fail(w, r, http.StatusConflict, "This sandbox holds no more reviews.")
		return
	}
	st.reviews = append(st.reviews, &review{ID: st.nextReview, ProductID: p.ID, Author: currentUser, Rating: rating,
		Text: text, Date: s.now().Format(dateFormat)})
	st.nextReview++
	s.redirect(w, r, sp, s.sitePath(r.PathValue("ns"), siteShop)+"/products/"+p.ID, "Thank you for your review!")
}

// cartRow is one line of the cart page.
type cartRow struct {
	*product
	Qty       int
	LineTotal int
}

// cartPage is the data of the cart page.
type cartPage struct {
	Lines       []cartRow
	Subtotal    int
	Count       int
	FullName    string
	ExpressCost int
	Base        string
}

// shopCart shows the cart and the checkout form.
func (s *Server) shopCart(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	v := s.view(r, siteShop, "Your cart")
	v.Flash = takeFlash(sp)
	page := cartPage{FullName: currentFullName, ExpressCost: expressShippingCents, Base: v.Home}
	for _, l := range sp.shop.cart {
		p := sp.shop.product(l.ProductID)
		page.Lines = append(page.Lines, cartRow{product: p, Qty: l.Qty, LineTotal: l.Qty * p.Price})
		page.Subtotal += l.Qty * p.Price
		page.Count += l.Qty
	}
	v.Data = page
	s.render(w, http.StatusOK, "shop_cart", v)
}

// shopCartAdd puts a quantity of a product into the cart.
func (s *Server) shopCartAdd(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := sp.shop
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	p := st.product(r.PostFormValue("product_id"))
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such product.")
		return
	}
	qty := 1
	if raw := strings.TrimSpace(r.PostFormValue("quantity")); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxQuantity {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Choose a quantity from 1 to %d.", maxQuantity))
			return
		}
		qty = n
	}
	if p.Stock == 0 {
		s.fail(w, r, http.StatusConflict, p.Name+" is out of stock.")
		return
	}
	if inCart := st.cartQty(p.ID); inCart+qty > p.Stock {
		s.fail(w, r, http.StatusConflict, fmt.Sprintf("Only %d of %s in stock (%d already in your cart).", p.Stock, p.Name, inCart))
		return
	}
	found := false
	for i := range st.cart {
		if st.cart[i].ProductID == p.ID {
			st.cart[i].Qty += qty
			found = true
		}
	}
	if !found {
		st.cart = append(st.cart, cartLine{ProductID: p.ID, Qty: qty})
	}
	s.redirect(w, r, sp, s.sitePath(r.PathValue("ns"), siteShop)+"/cart", fmt.Sprintf("Added %d × %s to your cart.", qty, p.Name))
}

// shopCartRemove takes a product out of the cart.
func (s *Server) shopCartRemove(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	id := r.PostFormValue("product_id")
	st := sp.shop
	st.cart = slices.DeleteFunc(st.cart, func(l cartLine) bool { return l.ProductID == id })
	msg := "Removed the item from your cart."
	if p := st.product(id); p != nil {
		msg = "Removed " + p.Name + " from your cart."
	}
	s.redirect(w, r, sp, s.sitePath(r.PathValue("ns"), siteShop)+"/cart", msg)
}

// shopCheckout turns the cart into an order.
func (s *Server) shopCheckout(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st := sp.shop
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if len(st.cart) == 0 {
		s.fail(w, r, http.StatusConflict, "Your cart is empty.")
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	address := strings.TrimSpace(r.PostFormValue("address"))
	if name == "" || address == "" || utf8.RuneCountInString(name) > maxAddress || utf8.RuneCountInString(address) > maxAddress {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Give a name and a delivery address of at most %d characters.", maxAddress))
		return
	}
	shipping := r.PostFormValue("shipping")
	cost := 0
	switch shipping {
	case "", shippingStandard:
		shipping = shippingStandard
	case shippingExpress:
		cost = expressShippingCents
	default:
		s.fail(w, r, http.StatusBadRequest, "Choose standard or express shipping.")
		return
	}
	for _, l := range st.cart {
		if p := st.product(l.ProductID); l.Qty > p.Stock {
			s.fail(w, r, http.StatusConflict, fmt.Sprintf("Only %d of %s left in stock.", p.Stock, p.Name))
			return
		}
	}
	if len(st.orders) >= maxOrders {
		s.fail(w, r, http.StatusConflict, "This sandbox holds no more orders.")
		return
	}
	o := &order{ID: st.nextOrder, Account: currentUser, Customer: name, Address: address, Shipping: shipping,
		ShippingCost: cost, Date: s.now().Format(dateFormat), Status: "placed"}
	for _, l := range st.cart {
		p := st.product(l.ProductID)
		p.Stock -= l.Qty
		o.Items = append(o.Items, orderItem{ProductID: p.ID, Name: p.Name, Qty: l.Qty, UnitPrice: p.Price})
	}
	st.nextOrder++
	st.orders = append(st.orders, o)
	st.cart = nil
	s.redirect(w, r, sp, fmt.Sprintf("%s/orders/%d", s.sitePath(r.PathValue("ns"), siteShop), o.ID),
		fmt.Sprintf("Thank you! Your order #%d has been placed.", o.ID))
}

// ordersPage is the data of the order history and the admin page.
type ordersPage struct {
	Orders   []*order
	Products []productRow
	Base     string
}

// newestFirst returns orders by descending id.
func newestFirst(orders []*order) []*order {
	out := slices.Clone(orders)
	slices.SortFunc(out, func(a, b *order) int { return b.ID - a.ID })
	return out
}

// shopOrders lists the visitor's orders, newest first.
func (s *Server) shopOrders(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var mine []*order
	for _, o := range sp.shop.orders {
		if o.Account == currentUser {
			mine = append(mine, o)
		}
	}
	v := s.view(r, siteShop, "Your orders")
	v.Flash = takeFlash(sp)
	v.Data = ordersPage{Orders: newestFirst(mine), Base: v.Home}
	s.render(w, http.StatusOK, "shop_orders", v)
}

// shopOrder shows one order.
func (s *Server) shopOrder(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	id, err := strconv.Atoi(r.PathValue("id"))
	o := sp.shop.order(id)
	if err != nil || o == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such order.")
		return
	}
	v := s.view(r, siteShop, fmt.Sprintf("Order #%d", o.ID))
	v.Flash = takeFlash(sp)
	v.Data = struct {
		*order
		Base string
	}{o, v.Home}
	s.render(w, http.StatusOK, "shop_order", v)
}

// shopAdmin lists every order and lets the visitor change prices and stock. The
// sandbox has no login: everyone is the shop's administrator.
func (s *Server) shopAdmin(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	v := s.view(r, siteShop, "Shop admin")
	v.Flash = takeFlash(sp)
	page := ordersPage{Orders: newestFirst(sp.shop.orders), Base: v.Home}
	for _, p := range sp.shop.products {
		page.Products = append(page.Products, sp.shop.row(p))
	}
	v.Data = page
	s.render(w, http.StatusOK, "shop_admin", v)
}

// shopAdminUpdate sets a product's price and stock.
func (s *Server) shopAdminUpdate(w http.ResponseWriter, r *http.Request) {
	sp := s.space(r.PathValue("ns"))
	sp.mu.Lock()
	defer sp.mu.Unlock()
	p := sp.shop.product(r.PathValue("id"))
	if p == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such product.")
		return
	}
	if err := parseForm(w, r); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	price, ok := parsePrice(r.PostFormValue("price"))
	if !ok {
		s.fail(w, r, http.StatusBadRequest, "Give the price in dollars, such as 24.99.")
		return
	}
	stock, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("stock")))
	if err != nil || stock < 0 || stock > maxStock {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Give the stock as a whole number from 0 to %d.", maxStock))
		return
	}
	p.Price, p.Stock = price, stock
	s.redirect(w, r, sp, s.sitePath(r.PathValue("ns"), siteShop)+"/admin",
		fmt.Sprintf("Saved %s: %s, %d in stock.", p.Name, money(price), stock))
}

// parsePrice reads dollars ("79", "79.00", "$79.5") into cents.
func parsePrice(raw string) (int, bool) {
	t := strings.TrimPrefix(strings.TrimSpace(raw), "$")
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	cents := int(math.Round(f * 100))
	if cents <= 0 || cents > maxPriceCents {
		return 0, false
	}
	return cents, true
}
