package handlers

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// Export formats of a board.
const (
	boardHTML = ""
	boardJSON = "json"
	boardCSV  = "csv"
)

// leaderboardRoutes registers the leaderboard pages, their JSON and CSV
// exports and the JSON API. Boards are public: they show only published runs,
// and a board of an unpublished benchmark answers 404 to everyone but admins.
// Each is rendered once per version of the board and kept (serveBoard), and
// answers carry an ETag of that version: an unchanged board is a 304.
func (s *Server) leaderboardRoutes(e *echo.Echo) {
	e.GET("/benchmarks/:slug/leaderboard", s.showLeaderboard)
	e.GET("/benchmarks/:slug/leaderboard.json", s.showLeaderboard)
	e.GET("/benchmarks/:slug/leaderboard.csv", s.showLeaderboard)
	// The subset's name carries the export's extension (hard.csv): subset
	// names are slugs, so a dot can only start one.
	e.GET("/benchmarks/:slug/leaderboard/:subset", s.showLeaderboard)
	e.GET("/api/v1/benchmarks/:slug/leaderboard", s.apiLeaderboard)
}

// boardTarget reads which subset's board a request asks for and in which format.
func boardTarget(c echo.Context) (subset, format string) {
	subset, format = models.SubsetFull, boardHTML
	switch {
	case strings.HasSuffix(c.Path(), ".json"):
		format = boardJSON
	case strings.HasSuffix(c.Path(), ".csv"):
		format = boardCSV
	}
	if name := pathParam(c, "subset"); name != "" {
		subset = name
		for _, f := range []string{boardJSON, boardCSV} {
			if base, ok := strings.CutSuffix(name, "."+f); ok {
				subset, format = base, f
			}
		}
	}
	return subset, format
}

// showLeaderboard is a board as a page, as the table alone for htmx's sorts
// and filters, or as a JSON or CSV export with the same filters and sort.
func (s *Server) showLeaderboard(c echo.Context) error {
	subset, format := boardTarget(c)
	if format == boardHTML && !wantsFragment(c) {
		return s.serveBoardPage(c, subset)
	}
	return s.serveBoard(c, subset, format == boardHTML, func() error { return s.answerLeaderboard(c, subset, format) })
}

// answerLeaderboard renders a board's export or its table for htmx, or a
// refusal, without the kept boards.
func (s *Server) answerLeaderboard(c echo.Context, subset, format string) error {
	lb, err := s.leaderboard(c, subset)
	if err != nil {
		if format == boardJSON {
			return jsonExportError(c, err)
		}
		return err
	}
	switch format {
	case boardJSON:
		return c.JSON(http.StatusOK, s.toAPILeaderboard(c, lb))
	case boardCSV:
		return s.writeLeaderboardCSV(c, lb)
	}
	v := web.LeaderboardView{Board: lb}
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		// The address bar gets the board's permalink rather than the form's
		// every field, empty ones included.
		c.Response().Header().Set("HX-Push-Url", web.LeaderboardURL(lb.BenchmarkSlug, lb.Subset, "", lb.Query))
		return s.render(c, http.StatusOK, web.LeaderboardTable(v))
	}
	return s.render(c, http.StatusOK, web.LeaderboardPage(s.page(c, boardTitle(lb.BenchmarkName, lb.Subset)), v))
}

// boardTitle is a board page's title.
func boardTitle(benchmark, subset string) string {
	title := "Leaderboard of " + benchmark
	if subset != models.SubsetFull {
		title += " (" + subset + ")"
	}
	return title
}

// apiLeaderboard is a board as JSON: ?subset= picks the subset (full by
// default); the other parameters are the page's.
func (s *Server) apiLeaderboard(c echo.Context) error {
	subset := c.QueryParam("subset")
	if subset == "" {
		subset = models.SubsetFull
	}
	return s.serveBoard(c, subset, false, func() error {
		lb, err := s.leaderboard(c, subset)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, s.toAPILeaderboard(c, lb))
	})
}

// leaderboard parses the board's query parameters and loads it.
func (s *Server) leaderboard(c echo.Context, subset string) (*models.Leaderboard, error) {
	q, err := models.ParseLeaderboardQuery(c.QueryParams())
	if err != nil {
		return nil, err
	}
	lb, err := s.deps.Benchmarks.Leaderboard(c.Request().Context(), pathParam(c, "slug"), subset, q)
	if err != nil {
		return nil, err
	}
	lb.Lenient = s.deps.Evaluators.Grading(lb.Evaluator).Lenient
	return lb, nil
}

// jsonExportError answers a failed .json export in the API's error shape, as
// its client expects JSON; internal errors go to the one error handler, which
// logs them.
func jsonExportError(c echo.Context, err error) error {
	code := models.ErrorCode(err)
	if code == models.EINTERNAL {
		return err
	}
	return c.JSON(statusOf(code), api.ErrorResponse{Error: api.ErrorBody{Code: code, Field: models.ErrorField(err), Message: models.ErrorMessage(err)}})
}

// apiLeaderboard is a board in JSON exports and the API: the API's envelope
// with this server's rows.
type apiLeaderboard = api.Leaderboard[apiLeaderboardItem]

// apiLeaderboardItem is one row of a board as the JSON exports and the API
// write it: an object of the board's exported columns
// (models.LeaderboardExports), in their order, by their field names. A
// figure the row lacks is null, or left out if only hidden-tests boards
// have it; links are absolute URLs. Its documented schema is read from the
// same columns (jsonFields).
type apiLeaderboardItem struct {
	row  models.LeaderboardRow
	cols []models.LeaderboardColumn
	link func(models.LeaderboardValue) string
}

// MarshalJSON writes the row's exported columns.
func (it apiLeaderboardItem) MarshalJSON() ([]byte, error) {
	out := []byte{'{'}
	for _, col := range it.cols {
		v := col.Value(it.row)
		if v.Missing && col.HiddenTestsOnly {
			continue
		}
		val, err := exportJSON(col, v, it.link)
		if err != nil {
			return nil, fmt.Errorf("leaderboard column %s: %w", col.Field, err)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, col.Field)
		out = append(append(out, ':'), val...)
	}
	return append(out, '}'), nil
}

// jsonFields are the JSON fields of a row, for the documentation: those of
// the exported columns, nullable when a row may lack the value, optional
// when only hidden-tests boards have it.
func (apiLeaderboardItem) jsonFields() []structField {
	cols := models.LeaderboardExports()
	fields := make([]structField, len(cols))
	for i, col := range cols {
		var typ reflect.Type
		switch col.Kind {
		case models.KindNumber:
			typ = reflect.TypeFor[float64]()
		case models.KindInteger:
			typ = reflect.TypeFor[int64]()
		case models.KindFlag:
			typ = reflect.TypeFor[bool]()
		case models.KindTime:
			typ = reflect.TypeFor[time.Time]()
		default:
			typ = reflect.TypeFor[string]()
		}
		if col.Nullable {
			typ = reflect.PointerTo(typ)
		}
		fields[i] = structField{name: col.Field, tagged: true, omitEmpty: col.HiddenTestsOnly, typ: typ, index: i}
	}
	return fields
}

// exportJSON is a value as the JSON writes it.
func exportJSON(col models.LeaderboardColumn, v models.LeaderboardValue, link func(models.LeaderboardValue) string) ([]byte, error) {
	if v.Missing {
		return []byte("null"), nil
	}
	switch col.Kind {
	case models.KindNumber:
		return json.Marshal(v.Number)
	case models.KindInteger:
		return strconv.AppendInt(nil, v.Integer, 10), nil
	case models.KindFlag:
		return strconv.AppendBool(nil, v.Flag), nil
	case models.KindTime:
		return json.Marshal(v.Time)
	case models.KindLink:
		return json.Marshal(link(v))
	}
	return json.Marshal(v.Text)
}

// exportCSV is a value as the CSV writes it: numbers unrounded, empty when
// missing, a team's text kept from being read as a formula.
func exportCSV(col models.LeaderboardColumn, v models.LeaderboardValue, link func(models.LeaderboardValue) string) string {
	if v.Missing {
		return ""
	}
	switch col.Kind {
	case models.KindNumber:
		return strconv.FormatFloat(v.Number, 'f', -1, 64)
	case models.KindInteger:
		return strconv.FormatInt(v.Integer, 10)
	case models.KindFlag:
		return strconv.FormatBool(v.Flag)
	case models.KindTime:
		return v.Time.UTC().Format(time.RFC3339)
	case models.KindLink:
		return link(v)
	case models.KindFreeText:
		return csvText(v.Text)
	}
	return v.Text
}

// boardLink is a run's address a link column names, as an absolute URL.
func (s *Server) boardLink(c echo.Context) func(models.LeaderboardValue) string {
	return func(v models.LeaderboardValue) string {
		if v.Text == models.LinkRunAPI {
			return s.absoluteURL(c, apiRunPath(v.Integer))
		}
		return s.absoluteURL(c, runPath(v.Integer))
	}
}

// absoluteURL makes a path absolute with the configured base URL (or, when
// none is configured, the request's own), for links that leave the site.
func (s *Server) absoluteURL(c echo.Context, path string) string {
	base := s.opts.BaseURL
	if base == "" {
		base = c.Scheme() + "://" + c.Request().Host
	}
	return strings.TrimSuffix(base, "/") + path
}

func (s *Server) toAPILeaderboard(c echo.Context, lb *models.Leaderboard) apiLeaderboard {
	out := apiLeaderboard{
		Benchmark: lb.BenchmarkSlug, Name: lb.BenchmarkName, Version: lb.Version, CurrentVersion: lb.CurrentVersion,
		Subset: lb.Subset, SubsetTasks: lb.SubsetTasks, Evaluator: lb.Evaluator, Sort: lb.Query.Sort, Dir: lb.Query.Dir,
		Filters: map[string]string{}, PublishedRuns: lb.Published,
		URL:     s.absoluteURL(c, web.LeaderboardURL(lb.BenchmarkSlug, lb.Subset, "", lb.Query)),
		Entries: make([]apiLeaderboardItem, len(lb.Rows)),
	}
	for k := range lb.Query.Values() {
		if k != "sort" && k != "dir" {
			out.Filters[k] = lb.Query.Values().Get(k)
		}
	}
	cols, link := models.LeaderboardExports(), s.boardLink(c)
	for i, r := range lb.Rows {
		out.Entries[i] = apiLeaderboardItem{row: r, cols: cols, link: link}
	}
	return out
}

// writeLeaderboardCSV answers the CSV export: one header line of the
// exported columns' field names (those of the JSON but its JSON-only ones),
// one line per row.
func (s *Server) writeLeaderboardCSV(c echo.Context, lb *models.Leaderboard) error {
	name := lb.BenchmarkSlug + "-" + lb.Subset + "-leaderboard.csv"
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)
	var cols []models.LeaderboardColumn
	var header []string
	for _, col := range models.LeaderboardExports() {
		if !col.JSONOnly {
			cols, header = append(cols, col), append(header, col.Field)
		}
	}
	w := csv.NewWriter(c.Response())
	if err := w.Write(header); err != nil {
		return err
	}
	link := s.boardLink(c)
	rec := make([]string, len(cols))
	for _, r := range lb.Rows {
		for i, col := range cols {
			rec[i] = exportCSV(col, col.Value(r), link)
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// csvText keeps a team's free text from being read as a formula by the
// spreadsheet that opens the export: a leading =, +, -, @, tab or carriage
// return gets a quote in front.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
