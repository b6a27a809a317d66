package sandbox

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// dataset returns a dataset by slug, or nil.
func (s *Server) dataset(slug string) *dataset {
	for _, d := range s.datasets {
		if d.Slug == slug {
			return d
		}
	}
	return nil
}

// dataIndex lists the datasets.
func (s *Server) dataIndex(w http.ResponseWriter, r *http.Request) {
	v := s.view(r, siteData, "Datasets")
	v.Data = struct {
		Datasets []*dataset
		Base     string
	}{s.datasets, v.Home}
	s.render(w, http.StatusOK, "data_index", v)
}

// headerView is a column header with its sort link.
type headerView struct {
	column
	Href     string
	AriaSort string // ascending | descending | "" when the table is not sorted by it
}

// filterView is a filter select.
type filterView struct {
	column
	Options  []string
	Selected string
}

// cellView is one table cell.
type cellView struct {
	Text    string
	Numeric bool
}

// tableView is the data of a dataset page.
type tableView struct {
	*dataset
	Headers   []headerView
	Filters   []filterView
	Rows      [][]cellView
	Shown     int
	Total     int
	Sort      string
	SortLabel string
	Dir       string
	Chart     chart
	Base      string
	Self      string
}

// dataDataset shows a dataset as a table, filtered by ?<column>=<value> for the
// filterable columns and sorted by ?sort=<column>&dir=asc|desc, with a bar chart
// of the rows shown.
func (s *Server) dataDataset(w http.ResponseWriter, r *http.Request) {
	d := s.dataset(r.PathValue("slug"))
	if d == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such dataset.")
		return
	}
	q := r.URL.Query()
	v := s.view(r, siteData, d.Title)
	tv := tableView{dataset: d, Base: v.Home, Self: v.Home + "/datasets/" + d.Slug, Total: len(d.Rows)}

	// Filters.
	keep := url.Values{}
	rows := slices.Clone(d.Rows)
	for i, c := range d.Columns {
		if !c.Filter {
			continue
		}
		fv := filterView{column: c}
		for _, row := range d.Rows {
			if !slices.Contains(fv.Options, row[i]) {
				fv.Options = append(fv.Options, row[i])
			}
		}
		if want := q.Get(c.Key); want != "" && slices.Contains(fv.Options, want) {
			fv.Selected = want
			keep.Set(c.Key, want)
			rows = slices.DeleteFunc(rows, func(row []string) bool { return row[i] != want })
		}
		tv.Filters = append(tv.Filters, fv)
	}

	// Sorting.
	sortCol := d.column(q.Get("sort"))
	dir := q.Get("dir")
	if dir != "desc" {
		dir = "asc"
	}
	if sortCol >= 0 {
		tv.Sort, tv.SortLabel, tv.Dir = d.Columns[sortCol].Key, d.Columns[sortCol].Label, dir
		numeric := d.Columns[sortCol].Numeric
		slices.SortStableFunc(rows, func(a, b []string) int {
			var c int
			if numeric {
				x, _ := strconv.ParseFloat(a[sortCol], 64)
				y, _ := strconv.ParseFloat(b[sortCol], 64)
				switch {
				case x < y:
					c = -1
				case x > y:
					c = 1
				}
			} else {
				c = strings.Compare(a[sortCol], b[sortCol])
			}
			if dir == "desc" {
				c = -c
			}
			return c
		})
	}
	for _, c := range d.Columns {
		h := headerView{column: c}
		next := "asc"
		if tv.Sort == c.Key {
			h.AriaSort = map[string]string{"asc": "ascending", "desc": "descending"}[tv.Dir]
			if tv.Dir == "asc" {
				next = "desc"
			}
		}
		link := url.Values{}
		for k, vs := range keep {
			link[k] = vs
		}
		link.Set("sort", c.Key)
		link.Set("dir", next)
		h.Href = tv.Self + "?" + link.Encode()
		tv.Headers = append(tv.Headers, h)
	}

	for _, row := range rows {
		cells := make([]cellView, len(row))
		for i, val := range row {
			cells[i] = cellView{Text: displayValue(val, d.Columns[i].Numeric), Numeric: d.Columns[i].Numeric}
		}
		tv.Rows = append(tv.Rows, cells)
	}
	tv.Shown = len(rows)
	tv.Chart = barChart(d, rows)
	v.Data = tv
	s.render(w, http.StatusOK, "data_dataset", v)
}

// displayValue writes whole numbers with thousands separators (32410 → 32,410)
// and leaves everything else as stored.
func displayValue(val string, numeric bool) string {
	if !numeric || strings.Contains(val, ".") {
		return val
	}
	n, err := strconv.Atoi(val)
	if err != nil {
		return val
	}
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	digits := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// dataMetadata shows a dataset's metadata and column descriptions.
func (s *Server) dataMetadata(w http.ResponseWriter, r *http.Request) {
	d := s.dataset(r.PathValue("slug"))
	if d == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such dataset.")
		return
	}
	v := s.view(r, siteData, d.Title+": metadata")
	v.Data = struct {
		*dataset
		Base string
		Self string
	}{d, v.Home, v.Home + "/datasets/" + d.Slug}
	s.render(w, http.StatusOK, "data_metadata", v)
}

// dataCSV downloads the whole dataset as CSV.
func (s *Server) dataCSV(w http.ResponseWriter, r *http.Request) {
	d := s.dataset(r.PathValue("slug"))
	if d == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such dataset.")
		return
	}
	var b strings.Builder
	cw := csv.NewWriter(&b)
	header := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		header[i] = c.Key
	}
	_ = cw.Write(header) // a strings.Builder never fails
	_ = cw.WriteAll(d.Rows)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", d.Slug+".csv"))
	_, _ = w.Write([]byte(b.String()))
}
