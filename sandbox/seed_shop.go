package sandbox

// The shop's seed: the benchmark's tasks and their expected answers are written
// against exactly this data, so changing it means re-checking benchmark.jsonl
// (TestBenchmark_ReferenceScripts does).

// category is a product category.
type category struct {
	Slug, Name string
}

// product is one thing the shop sells. Prices are in cents.
type product struct {
	ID          string
	Name        string
	Category    string
	Description string
	Price       int
	Stock       int
}

// review is a customer's review of a product.
type review struct {
	ID        int
	ProductID string
	Author    string
	Rating    int
	Text      string
	Date      string
}

// orderItem is one line of an order, priced when the order was placed.
type orderItem struct {
	ProductID string
	Name      string
	Qty       int
	UnitPrice int
}

// LineTotal is the line's price.
func (it orderItem) LineTotal() int { return it.Qty * it.UnitPrice }

// order is a placed order.
type order struct {
	ID           int
	Account      string // whose order history shows it
	Customer     string // the name it ships to
	Address      string
	Shipping     string // standard | express
	ShippingCost int
	Date         string
	Status       string
	Items        []orderItem
}

// Subtotal is the sum of the order's lines.
func (o *order) Subtotal() int {
	sum := 0
	for _, it := range o.Items {
		sum += it.Qty * it.UnitPrice
	}
	return sum
}

// Total is what the order cost, shipping included.
func (o *order) Total() int { return o.Subtotal() + o.ShippingCost }

// ItemCount is how many units the order holds.
func (o *order) ItemCount() int {
	n := 0
	for _, it := range o.Items {
		n += it.Qty
	}
	return n
}

// cartLine is one product in the cart.
type cartLine struct {
	ProductID string
	Qty       int
}

// shopState is one namespace's shop.
type shopState struct {
	products   []*product // catalogue order
	reviews    []*review
	cart       []cartLine
	orders     []*order
	nextOrder  int
	nextReview int
}

// Shipping methods and their cost in cents.
const (
	shippingStandard     = "standard"
	shippingExpress      = "express"
	expressShippingCents = 900
)

func shopCategories() []category {
	return []category{
		{"lighting", "Lighting"}, {"furniture", "Furniture"}, {"kitchen", "Kitchen"},
		{"electronics", "Electronics"}, {"outdoor", "Outdoor"},
	}
}

func categoryName(slug string) string {
	for _, c := range shopCategories() {
		if c.Slug == slug {
			return c.Name
		}
	}
	return slug
}

// seedShop builds a fresh shop from the seed.
func seedShop() *shopState {
	products := []*product{
		{"desk-lamp", "Arc Desk Lamp", "lighting", "An adjustable arc lamp with warm and cool light modes and a weighted base.", 3400, 12},
		{"floor-lamp", "Linen Floor Lamp", "lighting", "A tall floor lamp with a linen shade that gives soft, diffused light.", 8900, 5},
		{"string-lights", "Warm String Lights", "lighting", "Ten metres of warm white LED string lights with a USB plug.", 1550, 40},
		{"reading-light", "Clip-on Reading Light", "lighting", "A small rechargeable light that clips onto books and headboards.", 1299, 25},
		{"oak-desk", "Oak Writing Desk", "furniture", "A solid oak desk with two drawers, 120 by 60 cm.", 24900, 3},
		{"office-chair", "Mesh Office Chair", "furniture", "An ergonomic chair with a breathable mesh back and adjustable arms.", 15900, 8},
		{"bookshelf", "Five-Shelf Bookcase", "furniture", "A tall bookcase with five adjustable shelves in white ash.", 11900, 6},
		{"side-table", "Round Side Table", "furniture", "A small round table in walnut veneer, 45 cm across.", 5900, 0},
		{"chef-knife", "Chef's Knife 20 cm", "kitchen", "A forged stainless steel chef's knife with a 20 cm blade.", 4500, 15},
		{"cast-iron-pan", "Cast Iron Skillet", "kitchen", "A pre-seasoned 26 cm cast iron skillet for stove, oven and campfire.", 3900, 10},
		{"french-press", "French Press 1 L", "kitchen", "A one-litre glass French press with a stainless steel filter.", 2750, 18},
		{"spice-rack", "Bamboo Spice Rack", "kitchen", "A two-tier bamboo rack holding up to 16 jars.", 2200, 9},
		{"usb-c-cable", "USB-C Cable 2 m", "electronics", "A braided two-metre USB-C to USB-C cable supporting 60 W charging.", 999, 60},
		{"wireless-mouse", "Wireless Mouse", "electronics", "A quiet wireless mouse with a USB receiver and 18-month battery life.", 2499, 30},
		{"mech-keyboard", "Mechanical Keyboard", "electronics", "A compact mechanical keyboard with hot-swappable tactile switches.", 7900, 7},
		{"noise-headphones", "Noise-Cancelling Headphones", "electronics", "Over-ear headphones with active noise cancelling and 30 hours of battery.", 19900, 4},
		{"camping-tent", "Two-Person Tent", "outdoor", "A light three-season tent for two that packs down to 2.1 kg.", 12900, 0},
		{"water-bottle", "Insulated Water Bottle", "outdoor", "A 750 ml steel bottle that keeps drinks cold for 24 hours.", 1900, 50},
		{"trail-backpack", "Trail Backpack 30 L", "outdoor", "A 30-litre hiking pack with a rain cover and hip belt.", 7400, 11},
		{"hammock", "Travel Hammock", "outdoor", "A parachute-nylon hammock with straps, 300 g packed.", 3500, 14},
	}
	type r struct {
		product, author string
		rating          int
		text, date      string
	}
	seed := []r{
		{"desk-lamp", "maria", 5, "Perfect for late-night work, the warm mode is easy on the eyes.", "2025-01-20"},
		{"desk-lamp", "tom", 4, "Sturdy and bright. The cable could be longer.", "2025-02-11"},
		{"floor-lamp", "li", 4, "Lovely soft light in the living room.", "2025-01-05"},
		{"floor-lamp", "omar", 3, "Looks great but wobbles a little on carpet.", "2025-02-17"},
		{"string-lights", "sofia", 5, "Cozy! Brightened up the balcony.", "2024-12-22"},
		{"reading-light", "ben", 4, "Handy for reading in bed.", "2025-01-30"},
		{"oak-desk", "greta", 5, "Beautiful grain and very solid.", "2024-11-14"},
		{"oak-desk", "ivan", 4, "Took an hour to assemble, but worth it.", "2025-02-02"},
		{"office-chair", "nina", 4, "Comfortable for long days.", "2025-01-12"},
		{"office-chair", "paul", 2, "The armrest came loose after two months.", "2025-02-25"},
		{"bookshelf", "maria", 4, "Holds all my books, easy to assemble.", "2024-12-03"},
		{"side-table", "li", 5, "Cute and sturdy, shame it sold out so fast.", "2025-01-08"},
		{"chef-knife", "omar", 5, "Razor sharp out of the box.", "2024-12-18"},
		{"chef-knife", "sofia", 4, "Great balance, a bit heavy.", "2025-01-26"},
		{"chef-knife", "ben", 4, "Good value for a forged knife.", "2025-02-14"},
		{"cast-iron-pan", "greta", 5, "Heats evenly and sears perfectly.", "2024-12-09"},
		{"cast-iron-pan", "tom", 5, "Will outlive me.", "2025-01-15"},
		{"cast-iron-pan", "nina", 4, "Heavy, but that's the point.", "2025-02-20"},
		{"french-press", "ivan", 4, "Makes a rich cup of coffee.", "2024-12-28"},
		{"french-press", "priya", 2, "The glass cracked after a month of daily use.", "2025-02-06"},
		{"french-press", "paul", 5, "Simple and does the job.", "2025-02-27"},
		{"spice-rack", "sofia", 4, "Tidy and looks nice on the counter.", "2025-01-19"},
		{"usb-c-cable", "ben", 5, "Long and sturdy.", "2025-01-03"},
		{"usb-c-cable", "tom", 3, "Works, but the connector is a bit loose.", "2025-02-09"},
		{"wireless-mouse", "nina", 4, "Quiet clicks, good battery.", "2025-01-22"},
		{"mech-keyboard", "omar", 5, "Typing feels amazing.", "2025-01-11"},
		{"mech-keyboard", "priya", 5, "Best keyboard I've owned.", "2025-02-16"},
		{"noise-headphones", "ivan", 4, "Great on flights.", "2024-12-30"},
		{"noise-headphones", "maria", 4, "Comfortable, strong noise cancelling.", "2025-02-01"},
		{"camping-tent", "greta", 5, "Survived a stormy night on the coast.", "2024-10-21"},
		{"water-bottle", "li", 5, "Ice still there the next morning.", "2025-01-27"},
		{"trail-backpack", "paul", 4, "Comfortable on day hikes.", "2024-11-30"},
		{"hammock", "sofia", 5, "Set up in two minutes.", "2025-02-22"},
	}
	st := &shopState{products: products, nextOrder: 1007}
	for i, s := range seed {
		st.reviews = append(st.reviews, &review{ID: i + 1, ProductID: s.product, Author: s.author, Rating: s.rating, Text: s.text, Date: s.date})
	}
	st.nextReview = len(seed) + 1
	name := func(id string) string { return st.product(id).Name }
	price := func(id string) int { return st.product(id).Price }
	item := func(id string, qty int) orderItem {
		return orderItem{ProductID: id, Name: name(id), Qty: qty, UnitPrice: price(id)}
	}
	st.orders = []*order{
		{ID: 1001, Account: currentUser, Customer: currentFullName, Address: "4 Elm Street, Springfield", Shipping: shippingStandard,
			Date: "2025-01-14", Status: "delivered", Items: []orderItem{item("french-press", 1), item("spice-rack", 1)}},
		{ID: 1002, Account: "mira", Customer: "Mira Kovac", Address: "18 Castle Road, Northam", Shipping: shippingStandard,
			Date: "2025-02-03", Status: "delivered", Items: []orderItem{item("oak-desk", 1), item("office-chair", 1)}},
		{ID: 1003, Account: currentUser, Customer: currentFullName, Address: "4 Elm Street, Springfield", Shipping: shippingExpress,
			ShippingCost: expressShippingCents, Date: "2025-02-20", Status: "delivered",
			Items: []orderItem{item("wireless-mouse", 1), item("usb-c-cable", 2)}},
		{ID: 1004, Account: "jonas", Customer: "Jonas Weber", Address: "7 Quay Lane, Harbourtown", Shipping: shippingStandard,
			Date: "2025-03-01", Status: "shipped", Items: []orderItem{item("camping-tent", 1), item("trail-backpack", 1)}},
		{ID: 1005, Account: currentUser, Customer: currentFullName, Address: "4 Elm Street, Springfield", Shipping: shippingExpress,
			ShippingCost: expressShippingCents, Date: "2025-03-08", Status: "shipped", Items: []orderItem{item("desk-lamp", 2)}},
		{ID: 1006, Account: "lena", Customer: "Lena Fischer", Address: "22 Mill Road, Eastbrook", Shipping: shippingStandard,
			Date: "2025-03-10", Status: "placed", Items: []orderItem{item("noise-headphones", 1), item("hammock", 1)}},
	}
	return st
}

// product returns a product by id, or nil.
func (st *shopState) product(id string) *product {
	for _, p := range st.products {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// productReviews lists a product's reviews, oldest first.
func (st *shopState) productReviews(id string) []*review {
	var out []*review
	for _, r := range st.reviews {
		if r.ProductID == id {
			out = append(out, r)
		}
	}
	return out
}

// rating is a product's average review rating and how many reviews it has.
func (st *shopState) rating(id string) (float64, int) {
	sum, n := 0, 0
	for _, r := range st.reviews {
		if r.ProductID == id {
			sum += r.Rating
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), n
}

// order returns an order by id, or nil.
func (st *shopState) order(id int) *order {
	for _, o := range st.orders {
		if o.ID == id {
			return o
		}
	}
	return nil
}

// cartQty is how many units of a product are in the cart.
func (st *shopState) cartQty(id string) int {
	for _, l := range st.cart {
		if l.ProductID == id {
			return l.Qty
		}
	}
	return 0
}
