package handlers

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// LeaderboardStore is what the leaderboard pages need from storage.
type LeaderboardStore interface {
	// Leaderboard returns a benchmark's board for a subset, filtered, ranked
	// and sorted by the query; ENOTFOUND for unknown or hidden boards.
	Leaderboard(ctx context.Context, slug, subset string, q models.LeaderboardQuery) (*models.Leaderboard, error)
}

// Export formats of a board.
const (
	boardHTML = ""
	boardJSON = "json"
	boardCSV  = "csv"
)

// leaderboardRoutes registers the leaderboard pages, their JSON and CSV
// exports and the JSON API. Boards are public: they show only published runs,
// and a board of an unpublished benchmark answers 404 to everyone but admins.
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
	title := "Leaderboard of " + lb.BenchmarkName
	if lb.Subset != models.SubsetFull {
		title += " (" + lb.Subset + ")"
	}
	return s.render(c, http.StatusOK, web.LeaderboardPage(s.page(c, title), v))
}

// apiLeaderboard is a board as JSON: ?subset= picks the subset (full by
// default); the other parameters are the page's.
func (s *Server) apiLeaderboard(c echo.Context) error {
	subset := c.QueryParam("subset")
	if subset == "" {
		subset = models.SubsetFull
	}
	lb, err := s.leaderboard(c, subset)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.toAPILeaderboard(c, lb))
}

// leaderboard parses the board's query parameters and loads it.
func (s *Server) leaderboard(c echo.Context, subset string) (*models.Leaderboard, error) {
	q, err := models.ParseLeaderboardQuery(c.QueryParams())
	if err != nil {
		return nil, err
	}
	return s.store.Leaderboard(c.Request().Context(), pathParam(c, "slug"), subset, q)
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

// apiLeaderboardItem is one row of a board.
type apiLeaderboardItem struct {
	Rank int `json:"rank"`
	// RankRange is "2–4" when the 95% intervals allow places 2 to 4
	// (RankBest to RankWorst), the rank alone when they fix it.
	RankRange   string   `json:"rank_range"`
	RankBest    int      `json:"rank_best"`
	RankWorst   int      `json:"rank_worst"`
	RunID       int64    `json:"run_id"`
	URL         string   `json:"url"`
	APIURL      string   `json:"api_url"`
	Agent       string   `json:"agent"`
	AgentSlug   string   `json:"agent_slug"`
	Team        string   `json:"team"`
	TeamSlug    string   `json:"team_slug"`
	Model       string   `json:"model"`
	OpenSource  bool     `json:"open_source"`
	Origin      string   `json:"origin"`
	Verified    bool     `json:"verified"`
	RunSubset   string   `json:"run_subset"`
	Restricted  bool     `json:"restricted"`
	Tasks       int      `json:"tasks"`
	Successes   int      `json:"successes"`
	SuccessRate float64  `json:"success_rate"`
	CI95Low     float64  `json:"ci95_low"`
	CI95High    float64  `json:"ci95_high"`
	JudgeScore  *float64 `json:"judge_score"`
	Judged      int      `json:"judged"`
	RubricScore *float64 `json:"rubric_score"`
	PerfectRate *float64 `json:"perfect_rate"`
	Efficiency  *float64 `json:"efficiency"`
	// MeanSteps, CostPerTask and Tokens are null when unknown: an uploaded
	// run whose bundle did not state them.
	MeanSteps   *float64   `json:"mean_steps"`
	CostPerTask *float64   `json:"cost_per_task"`
	Tokens      *int64     `json:"tokens"`
	FinishedAt  *time.Time `json:"finished_at"`
	// Hidden-tests boards only: the mean over the board's tasks of each
	// task's pass rate, overall and per group (R, B, S).
	HiddenOverall *float64 `json:"hidden_overall,omitempty"`
	HiddenRequest *float64 `json:"hidden_request,omitempty"`
	HiddenBrowser *float64 `json:"hidden_browser,omitempty"`
	HiddenSystem  *float64 `json:"hidden_system,omitempty"`
	// Hidden-tests boards only: the tests behind the pass rate, which
	// success_rate and its interval then are (tests passed of tests run).
	HiddenPassed *int `json:"hidden_passed,omitempty"`
	HiddenRan    *int `json:"hidden_ran,omitempty"`
}

// unlessUnknown is v, or nil when it is unknown.
func unlessUnknown[T any](unknown bool, v T) *T {
	if unknown {
		return nil
	}
	return &v
}

// unknownOrText is text, or empty when the figure is unknown.
func unknownOrText(unknown bool, text string) string {
	if unknown {
		return ""
	}
	return text
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
	for i, r := range lb.Rows {
		out.Entries[i] = apiLeaderboardItem{
			Rank: r.Rank, RankRange: r.RankText(), RankBest: r.RankBest, RankWorst: r.RankWorst,
			RunID: r.RunID, URL: s.absoluteURL(c, runPath(r.RunID)), APIURL: s.absoluteURL(c, apiRunPath(r.RunID)),
			Agent: r.AgentName, AgentSlug: r.AgentSlug, Team: r.TeamName, TeamSlug: r.TeamSlug, Model: r.Model,
			OpenSource: r.OpenSource, Origin: r.Origin, Verified: r.Verified, RunSubset: r.RunSubset, Restricted: r.Restricted,
			Tasks: r.Tasks, Successes: r.Successes, SuccessRate: r.SuccessRate, CI95Low: r.CILow, CI95High: r.CIHigh,
			JudgeScore: r.JudgeScore, Judged: r.Judged, RubricScore: r.RubricScore, PerfectRate: r.PerfectRate,
			Efficiency: r.Efficiency, MeanSteps: unlessUnknown(r.Unknown.Steps, r.MeanSteps), CostPerTask: unlessUnknown(r.Unknown.Cost, r.CostPerTask),
			Tokens: unlessUnknown(r.Unknown.Tokens, r.Tokens), FinishedAt: r.FinishedAt,
			HiddenOverall: r.HiddenOverall, HiddenRequest: r.HiddenRequest, HiddenBrowser: r.HiddenBrowser, HiddenSystem: r.HiddenSystem,
			HiddenPassed: r.HiddenPassed, HiddenRan: r.HiddenRan,
		}
	}
	return out
}

// leaderboardCSVHeader names the CSV export's columns, as in the JSON export.
func leaderboardCSVHeader() []string {
	return []string{
		"rank", "rank_best", "rank_worst", "run_id", "url", "agent", "agent_slug", "team", "team_slug", "model",
		"open_source", "origin", "verified", "run_subset", "restricted", "tasks", "successes", "success_rate",
		"ci95_low", "ci95_high", "judge_score", "judged", "rubric_score", "perfect_rate", "efficiency",
		"mean_steps", "cost_per_task", "tokens", "finished_at",
		"hidden_overall", "hidden_request", "hidden_browser", "hidden_system", "hidden_passed", "hidden_ran",
	}
}

// writeLeaderboardCSV answers the CSV export: one header line, one line per
// row, numbers unrounded and empty where a metric is missing.
func (s *Server) writeLeaderboardCSV(c echo.Context, lb *models.Leaderboard) error {
	name := lb.BenchmarkSlug + "-" + lb.Subset + "-leaderboard.csv"
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	if err := w.Write(leaderboardCSVHeader()); err != nil {
		return err
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	opt := func(x *float64) string {
		if x == nil {
			return ""
		}
		return num(*x)
	}
	count := func(n *int) string {
		if n == nil {
			return ""
		}
		return strconv.Itoa(*n)
	}
	for _, r := range lb.Rows {
		finished := ""
		if r.FinishedAt != nil {
			finished = r.FinishedAt.UTC().Format(time.RFC3339)
		}
		rec := []string{
			strconv.Itoa(r.Rank), strconv.Itoa(r.RankBest), strconv.Itoa(r.RankWorst), strconv.FormatInt(r.RunID, 10),
			s.absoluteURL(c, runPath(r.RunID)), csvText(r.AgentName), r.AgentSlug, csvText(r.TeamName), r.TeamSlug, csvText(r.Model),
			strconv.FormatBool(r.OpenSource), r.Origin, strconv.FormatBool(r.Verified), r.RunSubset, strconv.FormatBool(r.Restricted),
			strconv.Itoa(r.Tasks), strconv.Itoa(r.Successes), num(r.SuccessRate), num(r.CILow), num(r.CIHigh),
			opt(r.JudgeScore), strconv.Itoa(r.Judged), opt(r.RubricScore), opt(r.PerfectRate), opt(r.Efficiency),
			opt(unlessUnknown(r.Unknown.Steps, r.MeanSteps)), opt(unlessUnknown(r.Unknown.Cost, r.CostPerTask)),
			unknownOrText(r.Unknown.Tokens, strconv.FormatInt(r.Tokens, 10)), finished,
			opt(r.HiddenOverall), opt(r.HiddenRequest), opt(r.HiddenBrowser), opt(r.HiddenSystem),
			count(r.HiddenPassed), count(r.HiddenRan),
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
