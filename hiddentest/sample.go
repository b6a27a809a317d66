package hiddentest

import _ "embed"

//go:embed samples/sandbox-shop.json
var sandboxShopSuite []byte

// SandboxShopSuite returns the sample hidden-test suite written against the
// sandbox shop (package sandbox): request, browser (L1–L3) and system tests
// whose expectations follow from the shop's seed, with checkpoints naming the
// reference captures listed by SandboxShopSuiteCaptures.
func SandboxShopSuite() []byte {
	return append([]byte(nil), sandboxShopSuite...)
}

// SandboxShopSuiteCaptures lists the reference captures the sample suite's
// checkpoints compare with; a benchmark shipping the suite ships these images.
func SandboxShopSuiteCaptures() []string {
	return []string{"cart-table", "order-summary", "product-card", "product-detail-card", "search-result-card", "shop-home-header"}
}
