// Package api holds the wire types of Proctor's JSON API (/api/v1): every
// request body and answer, the error body and the listing envelope, written
// once. The server builds these values from the domain's and encodes them;
// its client (internal/apiclient) decodes into the very same types; the
// OpenAPI document is read from them by reflection, so the three cannot
// drift apart.
//
// The types are plain shapes with JSON tags and no behaviour beyond small
// helpers. A type's name is its schema's name in the OpenAPI document.
// Where the API answers a domain value as is (a submission, a benchmark's
// summary), an alias names it here.
package api

// Page is the envelope of every paginated listing: one page of items with
// where it stands. Items is never null: an empty page is [].
type Page[T any] struct {
	Items   []T  `json:"items"`
	Page    int  `json:"page"`
	PerPage int  `json:"per_page"`
	Total   int  `json:"total"`
	HasMore bool `json:"has_more"`
}

// NewPage is page number page (from 1) of perPage items out of total,
// with items [] rather than null.
func NewPage[T any](items []T, page, perPage, total int) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Items: items, Page: page, PerPage: perPage, Total: total, HasMore: page*perPage < total}
}

// IndexInfo is GET /api/v1: the API's name and version and where its
// documentation lives.
type IndexInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Docs    string `json:"docs"`    // the human-readable page
	OpenAPI string `json:"openapi"` // the OpenAPI document
}
