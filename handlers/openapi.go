package handlers

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/agreement"
	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// The JSON API is documented by one declarative table, apiOperations: the
// OpenAPI document at /api/v1/openapi.json and the page at /api are both built
// from it, and a test compares it with the routes the server registers. Response
// and request schemas are read by reflection from the very Go types the
// handlers encode and decode and the client decodes (package api), so a field
// added to a response shows up in the documentation without anyone
// remembering to write it down.

// Where the documentation lives.
const (
	openAPIPath   = "/api/v1/openapi.json"
	apiDocsPath   = "/api"
	apiBasePath   = "/api/v1"
	openAPIVer    = "3.1.0"
	apiVersion    = "v1"
	jsonMIME      = "application/json"
	binaryMIME    = "application/octet-stream"
	multipartMIME = "multipart/form-data"
)

// apiAccess says which credentials an operation needs; what the caller may
// then do is decided by the store, and apiOp.Who says it in words.
type apiAccess int

const (
	// accessAnyone: anonymous callers too; a token or session may show more.
	accessAnyone apiAccess = iota
	// accessSignedIn: a bearer token or a signed-in session (401 otherwise).
	accessSignedIn
)

// The episode token's endpoints.
const (
	episodeHolder    = "the holder of the episode's token"
	episodeTokenNote = "Authenticate with the episode token the claim returned (Authorization: Bearer pep_…), which opens this episode only while its lease lasts: 401 without it, 403 for another episode's, 410 once the episode is over or its lease lapsed. Every call renews the lease."
)

// apiOp is one documented operation of the JSON API.
type apiOp struct {
	Method      string
	Path        string // OpenAPI form under /api/v1: "/runs/{id}"; "" is /api/v1 itself
	ID          string // operationId, unique
	Tag         string
	Summary     string
	Description string
	Access      apiAccess
	Who         string // who may call it, in words: "team member, admin"
	Params      []apiParam
	Body        *apiBody
	Replies     []apiReply // success answers, the usual one first
	Errors      []int      // error statuses beyond those every operation of its kind can answer
}

// apiParam is a path, query or header parameter.
type apiParam struct {
	Name        string
	In          string // path, query or header
	Type        string // string, integer or boolean
	Description string
	Required    bool
	Enum        []string
	Example     string
}

// apiBody is a request body.
type apiBody struct {
	ContentType string
	Type        reflect.Type // JSON bodies: decoded into this type
	Fields      []apiParam   // multipart bodies: the form fields (Type "file" for files)
	Required    []string     // JSON fields that must be present
	Optional    bool         // the body may be left out
	Description string
	Example     string // JSON text, for the curl example
}

// apiReply is one success answer.
type apiReply struct {
	Status      int
	Description string
	ContentType string       // application/json unless set
	Type        reflect.Type // nil: no content
	Paginated   bool         // Type is the item of a paginated listing
	Headers     []string     // response headers worth naming: Location, ETag, Cache-Control
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// inPath is a path parameter.
func inPath(name, typ, desc, example string) apiParam {
	return apiParam{Name: name, In: "path", Type: typ, Description: desc, Required: true, Example: example}
}

// inQuery is an optional query parameter.
func inQuery(name, typ, desc string, enum ...string) apiParam {
	return apiParam{Name: name, In: "query", Type: typ, Description: desc, Enum: enum}
}

// paging are the query parameters of every paginated listing.
func paging() []apiParam {
	return []apiParam{
		inQuery("page", "integer", fmt.Sprintf("Page number, from 1 (at most %d).", maxPage)),
		inQuery("per_page", "integer", fmt.Sprintf("Items per page, 1 to %d (default %d).", maxPerPage, defaultPerPage)),
	}
}

func jsonBody[T any](example string, required ...string) *apiBody {
	return &apiBody{ContentType: jsonMIME, Type: typeOf[T](), Required: required, Example: example}
}

func ok[T any](desc string) apiReply {
	return apiReply{Status: http.StatusOK, Description: desc, Type: typeOf[T]()}
}

func created[T any](desc string, headers ...string) apiReply {
	return apiReply{Status: http.StatusCreated, Description: desc, Type: typeOf[T](), Headers: headers}
}

func page[T any](desc string) apiReply {
	return apiReply{Status: http.StatusOK, Description: desc, Type: typeOf[T](), Paginated: true}
}

func noContent(desc string) apiReply {
	return apiReply{Status: http.StatusNoContent, Description: desc}
}

// apiOpenAPIDocument stands for the OpenAPI document itself in its own
// listing: it is served as built, not encoded from a Go value.
type apiOpenAPIDocument map[string]any

// apiTags are the groups of the documentation, in page order.
func apiTags() []struct{ Name, Description string } {
	return []struct{ Name, Description string }{
		{"Meta", "The API itself and this documentation."},
		{"Account", "The caller's own user and personal API tokens."},
		{"Teams", "Teams, their members and invitations."},
		{"Agents", "The agent registry: every team's agents, with secrets that are write-only."},
		{"Benchmarks", "Benchmarks, their tasks and imports."},
		{"Runs", "Queuing runs and following their progress, attempts, timelines and metrics."},
		{"Episodes", "Agents that connect to Proctor: claiming a run's episodes and driving their browsers over MCP or in pull mode."},
		{"Moderation", "Publishing runs on the leaderboards and the administrators' moderation."},
		{"Leaderboards", "Ranked published runs of a benchmark and the boards' public change log."},
		{"Compare", "Two to four runs of one benchmark side by side."},
		{"Submissions", "Uploading bundles of runs made elsewhere: resumable part uploads, validation and ingest."},
		{"Studies", "Human vs LLM-judge agreement studies: creating them, annotating their items, the judges' verdicts and the agreement report."},
	}
}

// apiOperations is every route of /api/v1, documented. TestOpenAPI_RouteParity
// fails when a registered route is missing here or an entry has no route.
func apiOperations() []apiOp {
	slug := inPath("slug", "string", "The team's slug.", "browser-lab")
	benchmark := inPath("slug", "string", "The benchmark's slug.", "webarena-verified")
	agent := inPath("agent", "string", "The agent's slug within the team.", "walker")
	runID := inPath("id", "integer", "The run's id.", "12")
	subID := inPath("id", "integer", "The submission's id.", "7")
	studyID := inPath("id", "integer", "The study's id.", "4")
	studyItem := []apiParam{studyID, inPath("item_id", "integer", "The study item's id (not the attempt's).", "31")}
	partN := inPath("n", "integer", "The part's number, from 1 (400 otherwise).", "1")
	runOnly := []apiParam{runID}
	episodeParams := []apiParam{runID, inPath("episode", "integer", "The episode's id (its attempt's).", "345")}
	episodeErrors := []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusGone, http.StatusTooManyRequests}
	const (
		teamMember   = "team member, admin"
		studyManager = "the study's owner, admin"
		studyMember  = "the study's owner, its annotators, admin"
		seesRun      = "who may see the run: its team's members, anyone once published, admins"
		storeAnswers = "A run the caller may not see answers 404."
	)
	moderation := func(id, action, summary, who, desc string) apiOp {
		return apiOp{
			Method: http.MethodPost, Path: "/runs/{id}/" + action, ID: id, Tag: "Moderation", Summary: summary,
			Description: desc, Access: accessSignedIn, Who: who, Params: runOnly,
			Replies: []apiReply{ok[api.Moderation]("The run's publication state after the change.")},
			Errors:  []int{http.StatusConflict},
		}
	}
	return []apiOp{
		// Meta
		{Method: http.MethodGet, Path: "", ID: "getIndex", Tag: "Meta", Summary: "API name and version",
			Description: "Names the API and links to this documentation.", Access: accessAnyone, Who: "anyone",
			Replies: []apiReply{ok[api.IndexInfo]("The API's name, version and documentation.")}},
		{Method: http.MethodGet, Path: "/openapi.json", ID: "getOpenAPI", Tag: "Meta", Summary: "This OpenAPI document",
			Description: "The OpenAPI 3.1 description of every route of /api/v1. Cacheable: send If-None-Match with the last ETag to get 304 when it has not changed.",
			Access:      accessAnyone, Who: "anyone",
			Params: []apiParam{{Name: "If-None-Match", In: "header", Type: "string", Description: "The ETag of a copy you hold."}},
			Replies: []apiReply{
				{Status: http.StatusOK, Description: "The OpenAPI document.", Type: typeOf[apiOpenAPIDocument](), Headers: []string{"ETag", "Cache-Control"}},
				{Status: http.StatusNotModified, Description: "Your copy (If-None-Match) is current.", Headers: []string{"ETag"}},
			}},

		// Account
		{Method: http.MethodGet, Path: "/me", ID: "getMe", Tag: "Account", Summary: "Your user and teams",
			Access: accessSignedIn, Who: "signed in", Replies: []apiReply{ok[api.MeResponse]("The signed-in user with their teams and roles.")}},
		{Method: http.MethodGet, Path: "/tokens", ID: "listTokens", Tag: "Account", Summary: "Your API tokens",
			Description: "Every token of yours, revoked ones included; never their values.",
			Access:      accessSignedIn, Who: "signed in", Replies: []apiReply{ok[api.TokenList]("Your tokens: active ones first, each group newest first.")}},
		{Method: http.MethodPost, Path: "/tokens", ID: "createToken", Tag: "Account", Summary: "Create an API token",
			Description: "The only answer that carries the token's value (prt_…): Proctor keeps only its SHA-256.",
			Access:      accessSignedIn, Who: "signed in", Body: jsonBody[api.TokenInput](`{"name":"ci"}`, "name"),
			Replies: []apiReply{created[api.CreatedToken]("The new token with its value, shown once.", "Cache-Control")},
			Errors:  []int{http.StatusConflict}},
		{Method: http.MethodDelete, Path: "/tokens/{id}", ID: "revokeToken", Tag: "Account", Summary: "Revoke an API token",
			Access: accessSignedIn, Who: "the token's owner",
			Params:  []apiParam{inPath("id", "integer", "The token's id.", "3")},
			Replies: []apiReply{ok[api.Token]("The revoked token.")}},

		// Teams
		{Method: http.MethodGet, Path: "/teams", ID: "listTeams", Tag: "Teams", Summary: "Teams with member counts",
			Access: accessAnyone, Who: "anyone", Params: paging(), Replies: []apiReply{page[api.TeamListItem]("A page of teams.")}},
		{Method: http.MethodPost, Path: "/teams", ID: "createTeam", Tag: "Teams", Summary: "Create a team",
			Description: "You become its owner. The slug is derived from the name when left out.",
			Access:      accessSignedIn, Who: "signed in", Body: jsonBody[api.TeamInput](`{"name":"Browser Lab"}`, "name"),
			Replies: []apiReply{created[api.Team]("The new team.")}, Errors: []int{http.StatusConflict}},
		{Method: http.MethodGet, Path: "/teams/{slug}", ID: "getTeam", Tag: "Teams", Summary: "A team",
			Description: "members is present only for the team's members and administrators.",
			Access:      accessAnyone, Who: "anyone", Params: []apiParam{slug}, Replies: []apiReply{ok[api.TeamDetail]("The team.")}},
		{Method: http.MethodPost, Path: "/teams/{slug}/invites", ID: "createInvite", Tag: "Teams", Summary: "Invite someone to a team",
			Description: "A single-use invitation link, valid 7 days. The body is optional: the role defaults to member.",
			Access:      accessSignedIn, Who: "team owner, admin", Params: []apiParam{slug},
			Body:    &apiBody{ContentType: jsonMIME, Type: typeOf[api.InviteInput](), Optional: true, Example: `{"role":"member"}`},
			Replies: []apiReply{created[api.Invite]("The invitation link.", "Cache-Control")}},
		{Method: http.MethodDelete, Path: "/teams/{slug}/members/{user_id}", ID: "removeMember", Tag: "Teams", Summary: "Remove a member",
			Description: "Never the team's last owner (409).",
			Access:      accessSignedIn, Who: "team owner, admin",
			Params:  []apiParam{slug, inPath("user_id", "integer", "The member's user id.", "5")},
			Replies: []apiReply{noContent("The member was removed.")}, Errors: []int{http.StatusConflict}},

		// Agents
		{Method: http.MethodGet, Path: "/agents", ID: "listAgents", Tag: "Agents", Summary: "Every registered agent",
			Access: accessAnyone, Who: "anyone", Params: paging(), Replies: []apiReply{page[api.Agent]("A page of agents.")}},
		{Method: http.MethodGet, Path: "/teams/{slug}/agents", ID: "listTeamAgents", Tag: "Agents", Summary: "A team's agents",
			Description: "The whole registry of the team in one page.",
			Access:      accessAnyone, Who: "anyone", Params: []apiParam{slug}, Replies: []apiReply{page[api.Agent]("The team's agents.")}},
		{Method: http.MethodPost, Path: "/teams/{slug}/agents", ID: "createAgent", Tag: "Agents", Summary: "Register an agent",
			Description: "Secrets are write-only: answers say only whether each is set. An endpoint on a private network is refused unless an admin allow-lists its host.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{slug},
			Body:    jsonBody[api.AgentInput](`{"name":"Walker","kind":"http","endpoint_url":"https://agent.example.org/step","model":"gpt-4o","secrets":{"OPENAI_API_KEY":"sk-..."}}`, "name", "kind"),
			Replies: []apiReply{created[api.Agent]("The new agent.", "Location")}, Errors: []int{http.StatusConflict}},
		{Method: http.MethodGet, Path: "/teams/{slug}/agents/{agent}", ID: "getAgent", Tag: "Agents", Summary: "An agent",
			Description: "endpoint_url is present only for the team's members and admins.",
			Access:      accessAnyone, Who: "anyone", Params: []apiParam{slug, agent}, Replies: []apiReply{ok[api.Agent]("The agent.")}},
		{Method: http.MethodPatch, Path: "/teams/{slug}/agents/{agent}", ID: "updateAgent", Tag: "Agents", Summary: "Change some of an agent's fields or secrets",
			Description: "Only the fields sent change. An empty secret value keeps the stored one; clear_secrets removes secrets by name; config null removes the configuration.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{slug, agent},
			Body:    jsonBody[api.AgentInput](`{"description":"Now with retries","clear_secrets":["OPENAI_API_KEY"]}`),
			Replies: []apiReply{ok[api.Agent]("The agent after the change.")}, Errors: []int{http.StatusConflict}},
		{Method: http.MethodDelete, Path: "/teams/{slug}/agents/{agent}", ID: "deleteAgent", Tag: "Agents", Summary: "Delete an agent no run has used",
			Access: accessSignedIn, Who: teamMember, Params: []apiParam{slug, agent},
			Replies: []apiReply{noContent("The agent was deleted.")}, Errors: []int{http.StatusConflict}},

		// Benchmarks
		{Method: http.MethodGet, Path: "/benchmarks", ID: "listBenchmarks", Tag: "Benchmarks", Summary: "Benchmarks",
			Description: "Published benchmarks; administrators also see unpublished ones.",
			Access:      accessAnyone, Who: "anyone", Params: paging(), Replies: []apiReply{page[api.Benchmark]("A page of benchmarks.")}},
		{Method: http.MethodPost, Path: "/benchmarks/import", ID: "importBenchmark", Tag: "Benchmarks", Summary: "Import a benchmark version",
			Description: "A multipart upload, the same as `proctor import`. 201 for a new version, 200 when the same data was imported before. A malformed file answers 400 naming the task and the field, and nothing is written.",
			Access:      accessSignedIn, Who: "admin",
			Body: &apiBody{ContentType: multipartMIME, Fields: []apiParam{
				{Name: "format", Type: "string", Required: true, Enum: models.ImportFormats(), Description: "The dataset's format.", Example: models.FormatWebArenaVerified},
				{Name: "slug", Type: "string", Required: true, Description: "The benchmark's slug (lower-case letters, digits, hyphens).", Example: "webarena-verified"},
				{Name: "dataset", Type: "file", Required: true, Description: "The dataset file.", Example: "webarena-verified.json"},
				{Name: "subset_name_1", Type: "string", Description: fmt.Sprintf("A named subset (N from 1 to %d).", web.ImportSubsetSlots), Example: "hard"},
				{Name: "subset_file_1", Type: "file", Description: "The task ids of subset N.", Example: "subsets/webarena-verified-hard.json"},
			}},
			Replies: []apiReply{
				created[api.ImportResult]("A new version was imported."),
				{Status: http.StatusOK, Description: "The same data was imported before; nothing changed.", Type: typeOf[api.ImportResult]()},
			},
			Errors: []int{http.StatusRequestEntityTooLarge}},
		{Method: http.MethodGet, Path: "/benchmarks/{slug}", ID: "getBenchmark", Tag: "Benchmarks", Summary: "A benchmark's summary",
			Description: "The same JSON as `proctor benchmark show --json`. Unpublished benchmarks answer 404 to non-admins.",
			Access:      accessAnyone, Who: "anyone", Params: []apiParam{benchmark}, Replies: []apiReply{ok[api.BenchmarkSummary]("The summary of the current version.")}},
		{Method: http.MethodGet, Path: "/benchmarks/{slug}/tasks", ID: "listTasks", Tag: "Benchmarks", Summary: "A benchmark's tasks",
			Description: "The site filter matches every task that touches the site, multi-site tasks included.",
			Access:      accessAnyone, Who: "anyone",
			Params: append([]apiParam{benchmark,
				inQuery("site", "string", "Tasks that touch this site."),
				inQuery("task_type", "string", "Task type."),
				inQuery("difficulty", "string", "Difficulty."),
				inQuery("domain", "string", "Domain."),
				inQuery("attribute", "string", "Tasks with this attribute."),
				inQuery("subset", "string", "Tasks of this subset."),
				inQuery("q", "string", "Tasks whose intent contains this text."),
			}, paging()...),
			Replies: []apiReply{page[api.Task]("A page of tasks; eval_spec, reference_answers and reference_actions only for admins.")}},
		{Method: http.MethodGet, Path: "/benchmarks/{slug}/tasks/{task_id}", ID: "getTask", Tag: "Benchmarks", Summary: "A task",
			Description: "eval_spec, reference_answers and reference_actions are present only for admins.",
			Access:      accessAnyone, Who: "anyone",
			Params:  []apiParam{benchmark, inPath("task_id", "string", "The task's id in the benchmark.", "44")},
			Replies: []apiReply{ok[api.Task]("The task.")}},

		// Leaderboards
		{Method: http.MethodGet, Path: "/benchmarks/{slug}/leaderboard", ID: "getLeaderboard", Tag: "Leaderboards", Summary: "A benchmark's leaderboard",
			Description: "Ranked published runs with 95% intervals; rank_best and rank_worst are the places the intervals allow. A hidden-tests board ranks by pass rate: there success_rate and its interval are the tests passed of the tests run (hidden_passed of hidden_ran), every task's together. The same filters and sort as the page (also at /benchmarks/{slug}/leaderboard.json and .csv).",
			Access:      accessAnyone, Who: "anyone (published benchmarks)",
			Params: []apiParam{benchmark,
				inQuery("subset", "string", "The subset's board (default full)."),
				inQuery("sort", "string", "The column to sort by.", leaderboardSortKeys()...),
				inQuery("dir", "string", "Sort direction.", models.SortAsc, models.SortDesc),
				inQuery("origin", "string", "Only runs of this origin (candidates: a hidden-tests run, candidate websites its team submitted and Proctor tested).", models.RunOrigins()...),
				inQuery("open_source", "string", "Only open-source (yes) or closed (no) agents.", "yes", "no"),
				inQuery("model", "string", "Only runs whose model matches."),
				inQuery("model_match", "string", "How model matches.", models.ModelContains, models.ModelExact),
				inQuery("from", "string", "Runs finished on or after this day (YYYY-MM-DD)."),
				inQuery("to", "string", "Runs finished on or before this day (YYYY-MM-DD)."),
				inQuery("best", "string", "1: each agent's best run only.", "1", "0"),
				inQuery("version", "integer", "The benchmark version (default the current one)."),
			},
			Replies: []apiReply{ok[apiLeaderboard]("The board.")}},
		{Method: http.MethodGet, Path: "/benchmarks/{slug}/leaderboard/changes", ID: "listLeaderboardChanges", Tag: "Leaderboards", Summary: "A leaderboard's change log",
			Description: "Added, withdrawn, hidden, unhidden, verified, reproduced and rescored runs, newest first.",
			Access:      accessAnyone, Who: "anyone (published benchmarks)",
			Params:  append([]apiParam{benchmark, inQuery("subset", "string", "Only changes of this subset's board.")}, paging()...),
			Replies: []apiReply{page[api.Change]("A page of changes.")}},

		// Runs
		{Method: http.MethodGet, Path: "/runs", ID: "listRuns", Tag: "Runs", Summary: "Runs you may see",
			Description: "Your teams' runs and published runs; administrators see all.",
			Access:      accessAnyone, Who: "anyone",
			Params:  append([]apiParam{inQuery("team", "string", "Only this team's runs (its slug).")}, paging()...),
			Replies: []apiReply{page[api.RunItem]("A page of runs, newest first.")}},
		{Method: http.MethodPost, Path: "/runs", ID: "queueRun", Tag: "Runs", Summary: "Queue a run",
			Description: "Budgets left at zero take their defaults; subset defaults to full. 429 over the team's daily quota; 503 when this server has no queue.",
			Access:      accessSignedIn, Who: teamMember,
			Body:    jsonBody[api.RunInput](`{"team":"browser-lab","agent":"walker","benchmark":"sandbox","subset":"hard","parallelism":4}`, "team", "agent", "benchmark"),
			Replies: []apiReply{created[api.Run]("The queued run.", "Location")},
			Errors:  []int{http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}},
		{Method: http.MethodGet, Path: "/runs/{id}", ID: "getRun", Tag: "Runs", Summary: "A run's progress",
			Description: "Status, done / total, successes, errors by class and ETA. " + storeAnswers,
			Access:      accessAnyone, Who: seesRun, Params: runOnly, Replies: []apiReply{ok[api.RunState]("The run's live state.")}},
		{Method: http.MethodGet, Path: "/runs/{id}/metrics", ID: "getRunMetrics", Tag: "Runs", Summary: "A run's metrics and breakdowns",
			Description: "Per subset (the run's own first; for a full run also each named subset, restricted: true): success rate with its interval, judge and rubric scores, efficiency, steps, tokens, cost, error classes, and breakdowns by site, domain, difficulty, attribute, task type and intent template.",
			Access:      accessAnyone, Who: seesRun, Params: runOnly, Replies: []apiReply{ok[apiRunMetrics]("The metrics.")}},
		{Method: http.MethodGet, Path: "/runs/{id}/attempts", ID: "listAttempts", Tag: "Runs", Summary: "A run's attempts",
			Access: accessAnyone, Who: seesRun, Params: append(runOnly, paging()...),
			Replies: []apiReply{page[api.Attempt]("A page of attempts in task order.")}},
		{Method: http.MethodGet, Path: "/runs/{id}/attempts/{attempt_id}", ID: "getAttempt", Tag: "Runs", Summary: "An attempt's timeline",
			Description: "The task (public fields only), final answer, the primary verdict and every verdict (what an evaluator expected is removed for non-admins), and the steps with signed screenshot URLs.",
			Access:      accessAnyone, Who: seesRun,
			Params:  []apiParam{runID, inPath("attempt_id", "integer", "The attempt's id.", "345")},
			Replies: []apiReply{ok[api.Timeline]("The timeline.")}},
		{Method: http.MethodGet, Path: "/runs/{id}/hidden-tests", ID: "getRunHiddenTests", Tag: "Runs", Summary: "A hidden-tests run's pass rates",
			Description: "For a run of a hidden-tests benchmark (404 for other runs): each task's tally of tests per group (request, browser, system) and browser level with its pass rates (null until its tests have run), the mean over the tasks (each weighs the same; a task without results counts 0) and the mean per website. tests_visible says whether the caller may list the tests themselves (tests_api_url): administrators, and everyone who may see the run on a benchmark that reveals its references. 403 while the run is in a blind study.",
			Access:      accessAnyone, Who: seesRun, Params: runOnly,
			Replies: []apiReply{ok[api.HiddenRunResults]("The run's hidden-test results.")},
			Errors:  []int{http.StatusForbidden}},
		{Method: http.MethodGet, Path: "/runs/{id}/attempts/{attempt_id}/tests", ID: "listAttemptHiddenTests", Tag: "Runs", Summary: "An attempt's hidden tests",
			Description: "The attempt's tally and, in suite order, its tests that pass the filter with their titles, results and reasons. The tests belong to the benchmark's hidden suite: who may see the run but not the tests gets 401 (signed out) or 403.",
			Access:      accessAnyone, Who: "admin; who may see the run when the benchmark reveals its references",
			Params: []apiParam{runID, inPath("attempt_id", "integer", "The attempt's id.", "345"),
				inQuery("result", "string", "Only tests with this result; not_run: those this platform cannot carry out (an offline build), left out of pass rates; flaky: those that passed only when run again.", models.HiddenResultFilters()...),
				inQuery("group", "string", "Only tests of this group.", models.HiddenGroupRequest, models.HiddenGroupBrowser, models.HiddenGroupSystem),
				inQuery("level", "integer", "Only browser tests of this level, 1 to 3.")},
			Replies: []apiReply{ok[api.HiddenTests]("The attempt's tests.")},
			Errors:  []int{http.StatusForbidden}},
		{Method: http.MethodGet, Path: "/runs/{id}/attempts/{attempt_id}/tests/{test_id}", ID: "getAttemptHiddenTest", Tag: "Runs", Summary: "One hidden test with its runs",
			Description: "Both runs of a test that was run again (the second decides): their steps with results, reasons and signed screenshot links, and every visual checkpoint with its SSIM score against the threshold and signed links to the candidate's and the reference's regions and the SSIM map. Who may call it as for the attempt's tests.",
			Access:      accessAnyone, Who: "admin; who may see the run when the benchmark reveals its references",
			Params:  []apiParam{runID, inPath("attempt_id", "integer", "The attempt's id.", "345"), inPath("test_id", "string", "The test's id in the suite.", "b1-home-page")},
			Replies: []apiReply{ok[api.HiddenTest]("The test with its runs.")},
			Errors:  []int{http.StatusForbidden}},
		{Method: http.MethodPost, Path: "/runs/{id}/cancel", ID: "cancelRun", Tag: "Runs", Summary: "Cancel a run",
			Description: "Running episodes stop within seconds.",
			Access:      accessSignedIn, Who: teamMember, Params: runOnly,
			Replies: []apiReply{noContent("The run is canceled.")}, Errors: []int{http.StatusConflict}},
		{Method: http.MethodPost, Path: "/runs/{id}/retry", ID: "retryRun", Tag: "Runs", Summary: "Re-queue the attempts that ended in error",
			Access: accessSignedIn, Who: teamMember, Params: runOnly,
			Replies: []apiReply{ok[api.Retried]("How many attempts were re-queued.")},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodPost, Path: "/runs/{id}/rerun", ID: "rerunRun", Tag: "Runs", Summary: "Run again with the same configuration",
			Description: "A new run with the same configuration and agent snapshot.",
			Access:      accessSignedIn, Who: teamMember, Params: runOnly,
			Replies: []apiReply{created[api.Run]("The new run.", "Location")},
			Errors:  []int{http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}},
		// Episodes of connecting agents
		{Method: http.MethodPost, Path: "/runs/{id}/episodes/claim", ID: "claimEpisode", Tag: "Episodes", Summary: "Claim an episode of a connecting agent's run",
			Description: "For a run of an agent that connects (kind mcp, or an http agent with {\"pull\": true}): hands out one waiting episode under a lease, with the task (public fields), budgets, the episode's MCP, observation, action and heartbeat URLs and a token that opens that episode only. A long poll: 204 when no episode frees up within wait; 409 when the run is over or its agent does not connect. The run's parallelism bounds the leases out at once; renew the lease (a heartbeat or any call on the episode) within lease_seconds, or the episode ends and is offered again.",
			Access:      accessSignedIn, Who: "member of the run's team",
			Params:  []apiParam{runID, inQuery("wait", "integer", "Seconds to wait for an episode, 0 to 60 (default 30).")},
			Replies: []apiReply{ok[api.EpisodeClaim]("The claimed episode."), noContent("No episode freed up within the wait: claim again.")},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodPost, Path: "/runs/{id}/episodes/{episode}/heartbeat", ID: "episodeHeartbeat", Tag: "Episodes", Summary: "Renew an episode's lease",
			Description: episodeTokenNote, Access: accessAnyone, Who: episodeHolder, Params: episodeParams,
			Replies: []apiReply{ok[api.EpisodeHeartbeat]("The lease's new end.")}, Errors: episodeErrors},
		{Method: http.MethodGet, Path: "/runs/{id}/episodes/{episode}/observation", ID: "episodeObservation", Tag: "Episodes", Summary: "Pull the observation waiting for an action",
			Description: "Pull mode: the step waiting for an action, as push mode's request body (a long poll of up to 30 s; 204: ask again). " + episodeTokenNote,
			Access:      accessAnyone, Who: episodeHolder,
			Params:  append(append([]apiParam{}, episodeParams...), inQuery("after", "integer", "Only a step after this one (the last step you answered).")),
			Replies: []apiReply{ok[models.StepRequest]("The step waiting for an action."), noContent("No step waited within 30 s: ask again.")},
			Errors:  episodeErrors},
		{Method: http.MethodPost, Path: "/runs/{id}/episodes/{episode}/action", ID: "episodeAction", Tag: "Episodes", Summary: "Answer the waiting step with an action",
			Description: "Pull mode: push mode's response body for the step waiting; 409 when step names another step. " + episodeTokenNote,
			Access:      accessAnyone, Who: episodeHolder,
			Params:  append(append([]apiParam{}, episodeParams...), inQuery("step", "integer", "The step this action answers.")),
			Body:    jsonBody[models.StepResponse](`{"action":{"type":"click","target":{"element_id":"e12"}},"thought":"open the product"}`, "action"),
			Replies: []apiReply{{Status: http.StatusAccepted, Description: "The action was handed to the step.", Type: typeOf[api.ActionAccepted]()}},
			Errors:  append([]int{http.StatusConflict}, episodeErrors...)},
		{Method: http.MethodPost, Path: "/runs/{id}/episodes/{episode}/mcp", ID: "episodeMCP", Tag: "Episodes", Summary: "The episode's browser as an MCP server",
			Description: "MCP's streamable HTTP transport (stateless, JSON answers): Playwright MCP's browser tools plus submit_answer and give_up; every tool call that acts is a recorded step. " + episodeTokenNote,
			Access:      accessAnyone, Who: episodeHolder, Params: episodeParams,
			Body:    &apiBody{ContentType: jsonMIME, Type: typeOf[api.MCPMessage](), Description: "A JSON-RPC message of the Model Context Protocol.", Example: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
			Replies: []apiReply{{Status: http.StatusOK, Description: "The JSON-RPC answer.", Type: typeOf[api.MCPMessage]()}},
			Errors:  episodeErrors},
		{Method: http.MethodGet, Path: "/runs/{id}/results.jsonl", ID: "exportRunResults", Tag: "Runs", Summary: "A run's results as JSON Lines",
			Description: "One line per attempt in task order: the WebArena-Verified result shape (task_id, status, score, evaluators_results; the public view for non-admins) plus outcome, steps, tokens, cost, duration and judge score. Each line is a ResultLine.",
			Access:      accessAnyone, Who: "who may see the run's attempts", Params: runOnly,
			Replies: []apiReply{{Status: http.StatusOK, Description: "One JSON object per line.", ContentType: "application/jsonl", Type: typeOf[api.ResultLine]()}}},

		// Moderation
		moderation("publishRun", "publish", "Publish a run on its leaderboards", teamMember, "Puts a completed run on its benchmark's public leaderboards; 409 when the run's state does not allow it."),
		moderation("withdrawRun", "withdraw", "Withdraw a published run", teamMember, "Takes the run off the leaderboards; it is private to its team again."),
		moderation("verifyRun", "verify", "Mark a run verified", "admin", "Uploaded runs must be reproduced first (409). Written to the leaderboard's public change log."),
		{Method: http.MethodPost, Path: "/runs/{id}/hide", ID: "hideRun", Tag: "Moderation", Summary: "Hide a run from the leaderboards",
			Description: "The reason is public: the run page and the change log show it.",
			Access:      accessSignedIn, Who: "admin", Params: runOnly,
			Body:    jsonBody[api.HideInput](`{"reason":"Answers were read from a leaked file."}`, "reason"),
			Replies: []apiReply{ok[api.Moderation]("The run's publication state after the change.")},
			Errors:  []int{http.StatusConflict}},
		moderation("unhideRun", "unhide", "Show a hidden run again", "admin", "Written to the leaderboard's public change log."),
		moderation("reproduceRun", "reproduce", "Mark an uploaded run reproduced", "admin", "Admins reproduced the run's results; its origin becomes reproduced."),

		// Compare
		{Method: http.MethodGet, Path: "/compare", ID: "compareRuns", Tag: "Compare", Summary: "Compare 2 to 4 runs",
			Description: "Runs of one benchmark, the first being the baseline: metrics with deltas against it, breakdown deltas, per-task outcomes with timeline URLs and exact McNemar tests. A run the caller may not see answers 404.",
			Access:      accessAnyone, Who: "who may see every run",
			Params: []apiParam{{Name: models.CompareParam, In: "query", Type: "string", Required: true, Example: "12,15",
				Description: fmt.Sprintf("%d to %d run ids separated by commas, the baseline first.", models.MinCompareRuns, models.MaxCompareRuns)}},
			Replies: []apiReply{ok[api.Comparison]("The comparison.")}},

		// Submissions
		{Method: http.MethodGet, Path: "/submissions", ID: "listSubmissions", Tag: "Submissions", Summary: "Submissions",
			Description: "Your teams' submissions; administrators see all. Items leave out the validation report: read one submission for it.",
			Access:      accessSignedIn, Who: "signed in",
			Params: append([]apiParam{
				inQuery("team", "string", "Only this team's submissions (its slug)."),
				inQuery("status", "string", "Only submissions in this status.", submissionStatusEnum()...),
			}, paging()...),
			Replies: []apiReply{page[api.Submission]("A page of submissions, newest first.")}},
		{Method: http.MethodPost, Path: "/submissions", ID: "createSubmission", Tag: "Submissions", Summary: "Start (or resume) an upload",
			Description: "Declares the bundle: agent (\"team/agent\" or a slug of one of your teams' agents), benchmark, subset (default full), file name (.zip, .tar.gz or .tgz), size and SHA-256. 201 with a new submission; 200 with resumed: true when an unfinished upload of the same bundle exists. 409 when the same bundle was already ingested; 413 over the size limit; 429 over the team's daily quota.",
			Access:      accessSignedIn, Who: teamMember,
			Body: jsonBody[api.SubmissionRequest](`{"agent":"browser-lab/walker","benchmark":"webarena-verified","subset":"hard","filename":"results.zip","size":73400320,"sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}`, "agent", "benchmark", "filename", "size"),
			Replies: []apiReply{
				created[api.SubmissionCreated]("A new submission: upload its parts.", "Location"),
				{Status: http.StatusOK, Description: "Your unfinished upload of the same bundle (resumed: true): compare its parts with your file and send the missing ones.", Type: typeOf[api.SubmissionCreated](), Headers: []string{"Location"}},
			},
			Errors: []int{http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusServiceUnavailable}},
		{Method: http.MethodGet, Path: "/submissions/{id}", ID: "getSubmission", Tag: "Submissions", Summary: "A submission",
			Description: "Status, the parts the store holds (md5 is each part's digest, to compare with your chunks when resuming), the validation report, progress and, once ingested, run_id.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{subID},
			Replies: []apiReply{ok[api.Submission]("The submission.")}},
		{Method: http.MethodPut, Path: "/submissions/{id}/parts/{n}", ID: "putSubmissionPart", Tag: "Submissions", Summary: "Upload one part",
			Description: "The raw bytes of part n. Every part but the last has the submission's part size; Content-Length must equal the part's length. Re-sending a part replaces it.",
			Access:      accessSignedIn, Who: teamMember,
			Params: []apiParam{subID, partN,
				{Name: "Content-Length", In: "header", Type: "integer", Required: true, Description: "The part's length in bytes."},
				{Name: "Content-MD5", In: "header", Type: "string", Description: "The base64 MD5 of the part (RFC 1864); a mismatch is refused."},
			},
			Body:    &apiBody{ContentType: binaryMIME, Description: "The part's bytes.", Example: "@part-0001"},
			Replies: []apiReply{ok[api.SubmissionPart]("The stored part with its MD5 (hex).")},
			Errors:  []int{http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable}},
		{Method: http.MethodGet, Path: "/submissions/{id}/parts/{n}/url", ID: "getSubmissionPartURL", Tag: "Submissions", Summary: "A presigned URL for one part",
			Description: "With S3 storage (direct_upload: true), a URL to PUT the part straight to the store. With local storage it answers 409: PUT parts to the API instead.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{subID, partN},
			Replies: []apiReply{ok[api.PresignedPart]("Where and how to send the part.")},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodPost, Path: "/submissions/{id}/complete", ID: "completeSubmission", Tag: "Submissions", Summary: "Finish the upload",
			Description: "Every part must be present with its length (409 names the missing or short parts). The bundle is assembled and its validation queued.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{subID},
			Replies: []apiReply{{Status: http.StatusAccepted, Description: "Assembled; validation is queued.", Type: typeOf[api.Submission]()}},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodPost, Path: "/submissions/{id}/ingest", ID: "ingestSubmission", Tag: "Submissions", Summary: "Ingest a validated submission",
			Description: "Creates the run (origin uploaded) in one step with every attempt, then evaluates it. Refused (409) unless the submission is validated with no blocking problem.",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{subID},
			Replies: []apiReply{{Status: http.StatusAccepted, Description: "The ingest is queued.", Type: typeOf[api.Submission]()}},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodDelete, Path: "/submissions/{id}", ID: "discardSubmission", Tag: "Submissions", Summary: "Discard an unfinished submission",
			Description: "Deletes its bytes; a finished submission cannot be discarded (409).",
			Access:      accessSignedIn, Who: teamMember, Params: []apiParam{subID},
			Replies: []apiReply{noContent("Discarded.")},
			Errors:  []int{http.StatusConflict, http.StatusServiceUnavailable}},
		{Method: http.MethodPost, Path: "/candidate-runs", ID: "submitCandidates", Tag: "Submissions", Summary: "Submit candidate websites",
			Description: "For a hidden-tests benchmark: one candidate per task of the subset (default full), each with the base URL its website answers at (reachable from Proctor's workers; private addresses are refused unless the server allows them), optional restart and health hooks, and what building it cost (cost_usd, tokens_in, tokens_out, turns). Creates a run (origin candidates: stored as uploaded, shown as candidate websites its team submitted and Proctor tested) whose hidden tests are queued at once. A refusal names its field, e.g. candidates[2].base_url. 429 over the team's daily run quota; 503 when this server has no queue.",
			Access:      accessSignedIn, Who: teamMember,
			Body:    jsonBody[api.CandidateRunRequest](`{"team":"browser-lab","agent":"builder","benchmark":"sandbox-rebuild","candidates":[{"task_id":"shop-rebuild","base_url":"https://rebuild.example.org/shop","restart_url":"https://rebuild.example.org/restart","cost_usd":1.2,"tokens_in":50000,"tokens_out":8000,"turns":40}]}`, "team", "agent", "benchmark", "candidates"),
			Replies: []apiReply{created[api.Run]("The created run, its hidden tests queued.", "Location")},
			Errors:  []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}},

		// Studies
		{Method: http.MethodGet, Path: "/studies", ID: "listStudies", Tag: "Studies", Summary: "Your studies",
			Description: "The studies you own or annotate, with your role and your own progress; administrators see all.",
			Access:      accessSignedIn, Who: "signed in",
			Replies: []apiReply{ok[api.StudyList]("Your studies, newest first.")}},
		{Method: http.MethodPost, Path: "/studies", ID: "createStudy", Tag: "Studies", Summary: "Create a study and draw its sample",
			Description: fmt.Sprintf("Samples up to sample_size finished attempts (success, failure or error) of the runs (run_ids) and of every completed run of the benchmarks (slugs) you may see: random, or stratified by %s. The same sources and seed draw the same sample. "+
				"overlap_fraction of the items go to overlap_annotators annotators each (default 2) when the study is opened, the rest to one. labels are among %s; judges name the LLM judge configurations to compare (prompt among %s). annotators are the emails of users to invite. The study starts as a draft.",
				strings.Join(models.StudyStrata(), ", "), strings.Join(models.StudyLabelNames(), ", "), strings.Join(models.StudyPrompts(), ", ")),
			Access: accessSignedIn, Who: "signed in",
			Body:    jsonBody[api.StudyInput](`{"name":"Judge check","run_ids":[12,15],"sampling":"stratified","stratify_by":"outcome","seed":7,"sample_size":100,"overlap_fraction":0.2,"labels":["success","side_effect"],"judges":[{"name":"gpt-4o labels","model":"gpt-4o","prompt":"labels-v1","screenshots":true}],"annotators":["ann@example.org"]}`, "name", "sample_size", "labels"),
			Replies: []apiReply{created[api.Study]("The new study, a draft with its sample drawn.", "Location")},
			Errors:  []int{http.StatusConflict}},
		{Method: http.MethodGet, Path: "/studies/{id}", ID: "getStudy", Tag: "Studies", Summary: "A study's settings and progress",
			Description: "Managers get the whole study's progress, the annotators with theirs and what each judge configuration has judged; an annotator gets the settings and their own progress.",
			Access:      accessSignedIn, Who: studyMember, Params: []apiParam{studyID},
			Replies: []apiReply{ok[api.StudyOverview]("The study.")}},
		{Method: http.MethodGet, Path: "/studies/{id}/queue", ID: "getStudyQueue", Tag: "Studies", Summary: "Your queue in a study",
			Description: "Your assignments in queue order with their status; next_item_id is the first pending one (0 when you are done).",
			Access:      accessSignedIn, Who: studyMember, Params: []apiParam{studyID},
			Replies: []apiReply{ok[api.StudyQueue]("Your queue.")}},
		{Method: http.MethodGet, Path: "/studies/{id}/items/{item_id}", ID: "getStudyItem", Tag: "Studies", Summary: "A study item to annotate",
			Description: "The attempt's timeline with signed screenshot URLs, your labels so far and the rubric items to answer. Annotators see only the items assigned to them; in a blind study they get no evaluation, outcome, score or run success counts, and reveal is null. Managers and annotators of studies that are not blind get reveal: the evaluations, the judges' verdicts and every annotator's labels.",
			Access:      accessSignedIn, Who: studyMember, Params: studyItem,
			Replies: []apiReply{ok[api.StudyItem]("The item.")}},
		{Method: http.MethodPut, Path: "/studies/{id}/items/{item_id}/labels", ID: "saveStudyLabels", Tag: "Studies", Summary: "Save your labels for an item",
			Description: "While the study is open (409 once closed), for an item assigned to you (403 otherwise). action save keeps the status (autosave), submit needs every asked label (and every rubric item when rubric is asked), skip and flag need a reason. Values may be spelled as the CSV files spell them; rubric items are answered pass or fail under rubric:<rubric item id>. A label left out keeps its saved value; \"\" clears it. time_spent_ms adds up.",
			Access:      accessSignedIn, Who: "an annotator the item is assigned to", Params: studyItem,
			Body:    jsonBody[api.StudyLabelInput](`{"labels":{"success":"successful","side_effect":"no"},"action":"submit","time_spent_ms":45000}`, "action"),
			Replies: []apiReply{ok[api.StudyAssignment]("Your assignment after the change.")},
			Errors:  []int{http.StatusConflict}},
		{Method: http.MethodGet, Path: "/studies/{id}/verdicts", ID: "listStudyVerdicts", Tag: "Studies", Summary: "The judges' verdicts",
			Description: "Every verdict of the study's judge configurations and imported judges. Annotators of a blind study get 403.",
			Access:      accessSignedIn, Who: "the study's owner, admin, annotators of studies that are not blind", Params: []apiParam{studyID},
			Replies: []apiReply{ok[api.StudyVerdictList]("The verdicts.")}},
		{Method: http.MethodGet, Path: "/studies/{id}/report", ID: "getStudyReport", Tag: "Studies", Summary: "A study's agreement report",
			Description: "Per label, human-vs-human agreement and each judge against the human majority (agreement, Cohen's and quadratic kappa, Krippendorff's alpha, precision, recall, F1, accuracy, NPV, TNR, 95% bootstrap intervals, confusion matrices), the same per benchmark, agent, site and difficulty (breakdowns without intervals), the judge leaderboard with cost per judgment, and every disagreement. A study without labels yet has a report of zero items. The same JSON as the report.json export.",
			Access:      accessSignedIn, Who: studyManager, Params: []apiParam{studyID},
			Replies: []apiReply{ok[agreement.StudyReport]("The report.")}},
	}
}

// leaderboardSortKeys are the leaderboard's sort columns.
func leaderboardSortKeys() []string {
	var keys []string
	for _, k := range models.LeaderboardSortKeys() {
		keys = append(keys, k.Key)
	}
	return keys
}

// submissionStatusEnum lists a submission's statuses in the order a bundle
// goes through them.
func submissionStatusEnum() []string {
	return []string{models.SubmissionUploading, models.SubmissionUploaded, models.SubmissionValidating, models.SubmissionValidated,
		models.SubmissionRefused, models.SubmissionIngesting, models.SubmissionIngested, models.SubmissionFailed, models.SubmissionDiscarded}
}

// FullPath is the operation's path with /api/v1 in front.
func (op apiOp) FullPath() string { return apiBasePath + op.Path }

// errorStatuses are the error answers the operation documents: those every
// operation of its kind can give, then its own, in order.
func (op apiOp) errorStatuses() []int {
	set := map[int]bool{http.StatusUnauthorized: true} // an invalid token is refused everywhere
	for _, p := range op.Params {
		switch p.In {
		case "path":
			set[http.StatusNotFound] = true
		case "query":
			set[http.StatusBadRequest] = true
		}
	}
	if op.Body != nil {
		set[http.StatusBadRequest] = true
		if op.Body.ContentType == jsonMIME {
			set[http.StatusRequestEntityTooLarge] = true
		}
	}
	if op.Method != http.MethodGet {
		set[http.StatusForbidden] = true // a cookie session without its CSRF token, or a caller without the role
	}
	for _, s := range op.Errors {
		set[s] = true
	}
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

// errorMeaning says what an error status means for an operation.
func errorMeaning(status int, op apiOp) string {
	switch status {
	case http.StatusBadRequest:
		return "A parameter or the body is malformed; field names it."
	case http.StatusUnauthorized:
		if op.Access == accessAnyone {
			return "The bearer token is malformed, unknown or revoked."
		}
		return "No valid token or session."
	case http.StatusForbidden:
		return "Signed in, but not allowed; or a cookie session without its X-CSRF-Token."
	case http.StatusNotFound:
		return "Does not exist, or is not visible to you."
	case http.StatusConflict:
		return "The current state forbids it, or it already exists."
	case http.StatusRequestEntityTooLarge:
		return "The body exceeds a size limit."
	case http.StatusGone:
		return "It is over: the episode ended or its lease lapsed."
	case http.StatusTooManyRequests:
		return "Over a quota; see Retry-After."
	case http.StatusServiceUnavailable:
		return "A dependency (queue, database, storage) is unavailable."
	}
	return http.StatusText(status)
}

// openAPISpec is an OpenAPI 3.1 document, in the field order of the spec.
type openAPISpec struct {
	OpenAPI    string                           `json:"openapi"`
	Info       openAPIInfo                      `json:"info"`
	Servers    []map[string]string              `json:"servers"`
	Tags       []map[string]string              `json:"tags"`
	Paths      map[string]map[string]*openAPIOp `json:"paths"`
	Components openAPIComponents                `json:"components"`
}

type openAPIInfo struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

type openAPIComponents struct {
	Schemas         map[string]*jsonSchema       `json:"schemas"`
	Responses       map[string]*openAPIResponse  `json:"responses"`
	SecuritySchemes map[string]map[string]string `json:"securitySchemes"`
}

type openAPIOp struct {
	OperationID string                      `json:"operationId"`
	Tags        []string                    `json:"tags"`
	Summary     string                      `json:"summary"`
	Description string                      `json:"description,omitempty"`
	Who         string                      `json:"x-proctor-who"`
	Security    []map[string][]string       `json:"security"`
	Parameters  []openAPIParam              `json:"parameters,omitempty"`
	RequestBody *openAPIRequestBody         `json:"requestBody,omitempty"`
	Responses   map[string]*openAPIResponse `json:"responses"`
}

type openAPIParam struct {
	Name        string      `json:"name"`
	In          string      `json:"in"`
	Description string      `json:"description,omitempty"`
	Required    bool        `json:"required,omitempty"`
	Schema      *jsonSchema `json:"schema"`
	Example     any         `json:"example,omitempty"`
}

type openAPIRequestBody struct {
	Description string                      `json:"description,omitempty"`
	Required    bool                        `json:"required"`
	Content     map[string]openAPIMediaType `json:"content"`
}

type openAPIMediaType struct {
	Schema  *jsonSchema `json:"schema,omitempty"`
	Example any         `json:"example,omitempty"`
}

type openAPIResponse struct {
	Ref         string                      `json:"$ref,omitempty"`
	Description string                      `json:"description,omitempty"`
	Headers     map[string]openAPIHeader    `json:"headers,omitempty"`
	Content     map[string]openAPIMediaType `json:"content,omitempty"`
}

type openAPIHeader struct {
	Description string      `json:"description"`
	Schema      *jsonSchema `json:"schema"`
}

// jsonSchema is the part of JSON Schema 2020-12 the document uses.
type jsonSchema struct {
	Ref                  string                 `json:"$ref,omitempty"`
	Type                 any                    `json:"type,omitempty"` // a name, or [name, "null"]
	Format               string                 `json:"format,omitempty"`
	ContentMediaType     string                 `json:"contentMediaType,omitempty"`
	Description          string                 `json:"description,omitempty"`
	Enum                 []string               `json:"enum,omitempty"`
	Minimum              *int                   `json:"minimum,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties any                    `json:"additionalProperties,omitempty"` // *jsonSchema or false
	Items                *jsonSchema            `json:"items,omitempty"`
	AnyOf                []*jsonSchema          `json:"anyOf,omitempty"`
	AllOf                []*jsonSchema          `json:"allOf,omitempty"`
}

// Names of the document's shared components.
const (
	schemaError      = "Error"
	schemaPage       = "Page"
	securityBearer   = "bearerToken"
	securitySession  = "sessionCookie"
	componentsPrefix = "#/components/schemas/"
)

// apiDocs is the documentation built from the operation table: the OpenAPI
// document, its JSON and ETag, and the fields of each schema for the page.
type apiDocs struct {
	ops    []apiOp
	spec   *openAPISpec
	json   []byte
	etag   string
	fields map[string][]schemaField // component name -> fields in declaration order
	names  map[schemaKey]string     // Go type as a body or an answer -> component name
}

// buildAPIDocs builds the documentation; an error names a type or an operation
// the table describes wrongly.
func buildAPIDocs() (*apiDocs, error) {
	ops := apiOperations()
	reg := newSchemaRegistry()
	spec := &openAPISpec{
		OpenAPI: openAPIVer,
		Info: openAPIInfo{
			Title: "Proctor API", Version: apiVersion,
			Description: "Everything the web pages do, as JSON. Authenticate with a personal API token (prt_…, from your account page) sent as `Authorization: Bearer prt_…`; without one you act as an anonymous visitor. " +
				"Errors share one shape, {\"error\": {\"code\", \"message\", \"field\"}}, with field present when one input is at fault. Listings are paginated with page and per_page and answer {\"items\", \"page\", \"per_page\", \"total\", \"has_more\"}. JSON bodies are decoded strictly: unknown fields, trailing data and bodies over 1 MiB are refused.",
		},
		Servers: []map[string]string{{"url": "/", "description": "This server"}},
		Paths:   map[string]map[string]*openAPIOp{},
		Components: openAPIComponents{
			Responses: map[string]*openAPIResponse{},
			SecuritySchemes: map[string]map[string]string{
				securityBearer: {"type": "http", "scheme": "bearer", "bearerFormat": "prt_…",
					"description": "A personal API token from Account → API tokens or POST /api/v1/tokens. Bearer requests need no CSRF token."},
				securitySession: {"type": "apiKey", "in": "cookie", "name": sessionCookie,
					"description": "The web pages' session. State-changing requests with it must also send the page's CSRF token in the X-CSRF-Token header."},
			},
		},
	}
	for _, t := range apiTags() {
		spec.Tags = append(spec.Tags, map[string]string{"name": t.Name, "description": t.Description})
	}
	reg.extra[schemaError] = errorSchema()
	reg.extra[schemaPage] = pageSchema()
	if err := checkHandWritten(reg.extra[schemaError], reg.extra[schemaPage]); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	for _, status := range []int{400, 401, 403, 404, 409, 410, 413, 429, 503} {
		spec.Components.Responses[errorResponseName(status)] = &openAPIResponse{
			Description: http.StatusText(status),
			Content:     map[string]openAPIMediaType{jsonMIME: {Schema: refTo(schemaError)}},
		}
	}
	seenIDs := map[string]bool{}
	for _, op := range ops {
		if seenIDs[op.ID] {
			return nil, fmt.Errorf("openapi: operationId %q is used twice", op.ID)
		}
		seenIDs[op.ID] = true
		o, err := reg.operation(op)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: %w", op.Method, op.FullPath(), err)
		}
		if spec.Paths[op.FullPath()] == nil {
			spec.Paths[op.FullPath()] = map[string]*openAPIOp{}
		}
		method := strings.ToLower(op.Method)
		if spec.Paths[op.FullPath()][method] != nil {
			return nil, fmt.Errorf("openapi: %s %s is documented twice", op.Method, op.FullPath())
		}
		spec.Paths[op.FullPath()][method] = o
	}
	schemas, fields := reg.finish()
	if len(reg.errs) > 0 {
		return nil, fmt.Errorf("openapi: %s", strings.Join(reg.errs, "; "))
	}
	spec.Components.Schemas = schemas
	body, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi: encode: %w", err)
	}
	sum := sha256.Sum256(body)
	return &apiDocs{ops: ops, spec: spec, json: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, fields: fields, names: reg.names}, nil
}

func errorResponseName(status int) string { return "Error" + strconv.Itoa(status) }

func refTo(name string) *jsonSchema { return &jsonSchema{Ref: componentsPrefix + name} }

// errorSchema is the one error shape of the API (api.ErrorResponse, which
// handleError encodes).
func errorSchema() *jsonSchema {
	codes := []string{models.EINVALID, models.EUNAUTHORIZED, models.EFORBIDDEN, models.ENOTFOUND, models.ECONFLICT,
		models.ETOOLARGE, models.ERATELIMIT, models.EUNAVAILABLE, models.EINTERNAL, models.EGONE}
	return &jsonSchema{
		Type: "object", Required: []string{"error"}, Description: "Every error answer.",
		Properties: map[string]*jsonSchema{"error": {
			Type: "object", Required: []string{"code", "message"},
			Properties: map[string]*jsonSchema{
				"code":    {Type: "string", Enum: codes, Description: "Matches the HTTP status: invalid 400, unauthorized 401, forbidden 403, not_found 404, conflict 409, gone 410, too_large 413, rate_limited 429, internal_error 500, unavailable 503."},
				"message": {Type: "string", Description: "What went wrong, for a person to read."},
				"field":   {Type: "string", Description: "The input field at fault, when there is one."},
				"problems": {Type: "array", Description: "When input checked whole has several problems (a candidate run's candidates, for one): each with its field; the first is also code, message and field above.",
					Items: &jsonSchema{Type: "object", Required: []string{"field", "message"}, Properties: map[string]*jsonSchema{
						"field":   {Type: "string", Description: "The input field at fault, such as candidates[2].base_url; empty when the problem is the input's as a whole."},
						"message": {Type: "string"},
					}}},
			},
		}},
	}
}

// pageSchema is the envelope of paginated listings (api.Page) without items.
func pageSchema() *jsonSchema {
	one := 1
	return &jsonSchema{
		Type: "object", Required: []string{"items", "page", "per_page", "total", "has_more"},
		Description: "A page of a listing; items holds the page's entries.",
		Properties: map[string]*jsonSchema{
			"items":    {Type: "array"},
			"page":     {Type: "integer", Minimum: &one},
			"per_page": {Type: "integer", Minimum: &one},
			"total":    {Type: "integer", Description: "Entries over every page."},
			"has_more": {Type: "boolean", Description: "Whether a next page exists."},
		},
	}
}

// checkHandWritten checks the hand-written Error and Page components (they
// carry the words and bounds reflection cannot give) against the wire types
// their answers are encoded from.
func checkHandWritten(errorSchema, pageSchema *jsonSchema) error {
	body := errorSchema.Properties["error"]
	var problem *jsonSchema
	if body != nil && body.Properties["problems"] != nil {
		problem = body.Properties["problems"].Items
	}
	for _, c := range []struct {
		name   string
		schema *jsonSchema
		typ    reflect.Type
	}{
		{schemaError, errorSchema, reflect.TypeFor[api.ErrorResponse]()},
		{schemaError + ".error", body, reflect.TypeFor[api.ErrorBody]()},
		{schemaError + ".error.problems[]", problem, reflect.TypeFor[api.Problem]()},
		{schemaPage, pageSchema, reflect.TypeFor[api.Page[struct{}]]()},
	} {
		if err := matchesType(c.schema, c.typ); err != nil {
			return fmt.Errorf("the schema %s does not describe %s: %w", c.name, c.typ, err)
		}
	}
	return nil
}

// matchesType checks that an object schema has the JSON fields of t as its
// properties, requiring exactly those that are always encoded.
func matchesType(s *jsonSchema, t reflect.Type) error {
	if s == nil {
		return fmt.Errorf("no schema")
	}
	var props, required []string
	for _, f := range jsonFields(t) {
		props = append(props, f.name)
		if !f.omitEmpty {
			required = append(required, f.name)
		}
	}
	slices.Sort(props)
	slices.Sort(required)
	if have := slices.Sorted(maps.Keys(s.Properties)); !slices.Equal(have, props) {
		return fmt.Errorf("properties %v, but the type encodes %v", have, props)
	}
	if have := slices.Sorted(slices.Values(s.Required)); !slices.Equal(have, required) {
		return fmt.Errorf("required %v, but the type always encodes %v", have, required)
	}
	return nil
}

// operation builds an operation's OpenAPI form.
func (r *schemaRegistry) operation(op apiOp) (*openAPIOp, error) {
	if op.ID == "" || op.Tag == "" || op.Summary == "" || op.Who == "" || len(op.Replies) == 0 {
		return nil, fmt.Errorf("needs an id, tag, summary, who and a reply")
	}
	if !slices.ContainsFunc(apiTags(), func(t struct{ Name, Description string }) bool { return t.Name == op.Tag }) {
		return nil, fmt.Errorf("unknown tag %q", op.Tag)
	}
	o := &openAPIOp{
		OperationID: op.ID, Tags: []string{op.Tag}, Summary: op.Summary, Description: op.Description, Who: op.Who,
		Responses: map[string]*openAPIResponse{},
	}
	switch op.Access {
	case accessAnyone:
		o.Security = []map[string][]string{{}, {securityBearer: {}}, {securitySession: {}}}
	case accessSignedIn:
		o.Security = []map[string][]string{{securityBearer: {}}, {securitySession: {}}}
	}
	for _, p := range op.Params {
		param := openAPIParam{Name: p.Name, In: p.In, Description: p.Description, Required: p.Required,
			Schema: &jsonSchema{Type: p.Type, Enum: p.Enum}}
		if p.Example != "" {
			param.Example = p.Example
			if p.Type == "integer" {
				n, err := strconv.Atoi(p.Example)
				if err != nil {
					return nil, fmt.Errorf("parameter %s: the example %q is not an integer", p.Name, p.Example)
				}
				param.Example = n
			}
		}
		o.Parameters = append(o.Parameters, param)
	}
	if b := op.Body; b != nil {
		rb := &openAPIRequestBody{Description: b.Description, Required: !b.Optional, Content: map[string]openAPIMediaType{}}
		switch b.ContentType {
		case jsonMIME:
			s, err := r.input(b.Type, b.Required)
			if err != nil {
				return nil, err
			}
			mt := openAPIMediaType{Schema: s}
			if b.Example != "" {
				var ex any
				if err := json.Unmarshal([]byte(b.Example), &ex); err != nil {
					return nil, fmt.Errorf("the body example is not JSON: %w", err)
				}
				mt.Example = ex
			}
			rb.Content[jsonMIME] = mt
		case multipartMIME:
			s := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{}}
			for _, f := range b.Fields {
				fs := &jsonSchema{Type: "string", Description: f.Description, Enum: f.Enum}
				if f.Type == "file" {
					fs.ContentMediaType = binaryMIME
				}
				s.Properties[f.Name] = fs
				if f.Required {
					s.Required = append(s.Required, f.Name)
				}
			}
			rb.Content[multipartMIME] = openAPIMediaType{Schema: s}
		case binaryMIME:
			rb.Content[binaryMIME] = openAPIMediaType{}
		default:
			return nil, fmt.Errorf("unsupported request content type %q", b.ContentType)
		}
		o.RequestBody = rb
	}
	for _, rep := range op.Replies {
		res, err := r.reply(rep)
		if err != nil {
			return nil, err
		}
		key := strconv.Itoa(rep.Status)
		if o.Responses[key] != nil {
			return nil, fmt.Errorf("status %d is documented twice", rep.Status)
		}
		o.Responses[key] = res
	}
	for _, status := range op.errorStatuses() {
		o.Responses[strconv.Itoa(status)] = &openAPIResponse{Ref: "#/components/responses/" + errorResponseName(status), Description: errorMeaning(status, op)}
	}
	o.Responses["default"] = &openAPIResponse{Description: "An internal error (500); details are in the server log under the X-Request-Id.",
		Content: map[string]openAPIMediaType{jsonMIME: {Schema: refTo(schemaError)}}}
	return o, nil
}

// reply builds a success answer.
func (r *schemaRegistry) reply(rep apiReply) (*openAPIResponse, error) {
	res := &openAPIResponse{Description: rep.Description}
	for _, h := range rep.Headers {
		if res.Headers == nil {
			res.Headers = map[string]openAPIHeader{}
		}
		res.Headers[h] = openAPIHeader{Description: headerMeaning(h), Schema: &jsonSchema{Type: "string"}}
	}
	if rep.Type == nil {
		return res, nil
	}
	var s *jsonSchema
	if rep.Type == typeOf[apiOpenAPIDocument]() {
		s = &jsonSchema{Type: "object", Description: "An OpenAPI 3.1 document."}
	} else {
		s = r.output(rep.Type)
	}
	if rep.Paginated {
		s = &jsonSchema{AllOf: []*jsonSchema{refTo(schemaPage), {
			Type: "object", Properties: map[string]*jsonSchema{"items": {Type: "array", Items: s}},
		}}}
	}
	ct := rep.ContentType
	if ct == "" {
		ct = jsonMIME
	}
	res.Content = map[string]openAPIMediaType{ct: {Schema: s}}
	return res, nil
}

func headerMeaning(h string) string {
	switch h {
	case "Location":
		return "The new resource's API URL."
	case "ETag":
		return "The document's version, for If-None-Match."
	case "Cache-Control":
		return "How long the answer may be kept (no-store for secrets)."
	}
	return h
}

// schemaField is one field of a component, for the documentation page.
type schemaField struct {
	Name     string
	Type     string // in words: "string (date-time)", "array of Team"
	Ref      string // the component the type names, if one
	Required bool   // always present in answers
	Nullable bool
}

// component is a struct type's schema while the document is built.
type component struct {
	schemaKey
	schema *jsonSchema
	fields []pendingField
}

// schemaKey is a struct type as an answer or as (part of) a request body:
// the two are different schemas (a body allows no other property and
// requires nothing by itself), so a type that is both has two components,
// the body's named with "Input" after the answer's (models.StudyJudge is
// StudyJudge in answers and StudyJudgeInput in a study's request).
type schemaKey struct {
	typ   reflect.Type
	input bool // a request body's
}

// pendingField is a field whose words wait for the components' names.
type pendingField struct {
	name     string
	schema   *jsonSchema
	required bool
}

// schemaRegistry turns Go types into component schemas the way encoding/json
// encodes them: JSON names from tags, embedded structs flattened, omitempty
// fields optional, pointers nullable. Components are named once every type is
// known (finish), so that a name two types would share is settled the same
// way whatever the order of the table.
type schemaRegistry struct {
	order []*component
	byKey map[schemaKey]*component
	refs  map[*jsonSchema]schemaKey // references to fill in with the final names
	names map[schemaKey]string      // set by finish
	extra map[string]*jsonSchema    // hand-written components: Error, Page
	errs  []string
}

func newSchemaRegistry() *schemaRegistry {
	return &schemaRegistry{byKey: map[schemaKey]*component{}, refs: map[*jsonSchema]schemaKey{},
		names: map[schemaKey]string{}, extra: map[string]*jsonSchema{}}
}

// bareName is a struct type's preferred component name: a wire type's own
// name without its type arguments (api.Leaderboard[row] is Leaderboard),
// handler types without their api prefix (apiLeaderboardItem is
// LeaderboardItem), other packages' types their name.
func bareName(t reflect.Type) string {
	name, _, _ := strings.Cut(t.Name(), "[")
	if t.PkgPath() == handlersPkg {
		name = strings.TrimPrefix(name, "api")
		name = strings.ToUpper(name[:1]) + name[1:]
	}
	return name
}

// bareName is a component's preferred name: its type's, with "Input" after
// it for the body's component of a type that is also an answer.
func (r *schemaRegistry) bareName(k schemaKey) string {
	name := bareName(k.typ)
	if k.input && r.byKey[schemaKey{k.typ, false}] != nil {
		name += "Input"
	}
	return name
}

// Where the API's own types live: the wire types, and the few answers
// handlers encode beside them.
var (
	wirePkg     = reflect.TypeFor[api.ErrorResponse]().PkgPath()
	handlersPkg = reflect.TypeFor[Server]().PkgPath()
)

// isOwnType reports whether t is one of the API's own types, whose names the
// document keeps as they are.
func isOwnType(t reflect.Type) bool { return t.PkgPath() == wirePkg || t.PkgPath() == handlersPkg }

// finish names the components and fills in every reference. An own type
// keeps the bare name; another package's type sharing it is prefixed with its
// package (models.Team beside api.Team is ModelsTeam).
func (r *schemaRegistry) finish() (map[string]*jsonSchema, map[string][]schemaField) {
	count := map[string]int{}
	for name := range r.extra {
		count[name]++
	}
	for _, c := range r.order {
		count[r.bareName(c.schemaKey)]++
	}
	taken := map[string]reflect.Type{}
	for _, c := range r.order {
		name := r.bareName(c.schemaKey)
		if count[name] > 1 && !isOwnType(c.typ) {
			pkg := c.typ.PkgPath()[strings.LastIndex(c.typ.PkgPath(), "/")+1:]
			name = strings.ToUpper(pkg[:1]) + pkg[1:] + name
		}
		if other, dup := taken[name]; dup || r.extra[name] != nil {
			r.errs = append(r.errs, fmt.Sprintf("%s and %v would both be the schema %q: rename one", c.typ, other, name))
		}
		taken[name], r.names[c.schemaKey] = c.typ, name
	}
	for ref, k := range r.refs {
		ref.Ref = componentsPrefix + r.names[k]
	}
	schemas, fields := map[string]*jsonSchema{}, map[string][]schemaField{}
	for name, s := range r.extra {
		schemas[name] = s
	}
	for _, c := range r.order {
		name := r.names[c.schemaKey]
		schemas[name] = c.schema
		for _, f := range c.fields {
			words, ref := describeSchema(f.schema)
			fields[name] = append(fields[name], schemaField{Name: f.name, Type: words, Ref: ref, Required: f.required, Nullable: isNullable(f.schema)})
		}
	}
	return schemas, fields
}

// output is the schema of an answer's type: fields that are always encoded
// are required.
func (r *schemaRegistry) output(t reflect.Type) *jsonSchema { return r.schema(t, false) }

// input is the schema of a JSON request body. Handlers decode strictly, so the
// component allows no other property; which fields must be sent depends on the
// operation (POST and PATCH share a body type), so the requirement sits beside
// the reference.
func (r *schemaRegistry) input(t reflect.Type, required []string) (*jsonSchema, error) {
	if t.Kind() != reflect.Struct || t.Name() == "" {
		return nil, fmt.Errorf("a JSON body must be a named struct, not %s", t)
	}
	s := r.schema(t, true)
	props := r.byKey[schemaKey{t, true}].schema.Properties
	for _, f := range required {
		if props[f] == nil {
			return nil, fmt.Errorf("required field %q is not a field of %s", f, t)
		}
	}
	if len(required) == 0 {
		return s, nil
	}
	return &jsonSchema{AllOf: []*jsonSchema{s, {Required: required}}}, nil
}

// ref is a reference to a struct type's component, named by finish.
func (r *schemaRegistry) ref(k schemaKey) *jsonSchema {
	s := &jsonSchema{Ref: "pending " + k.typ.String()}
	r.refs[s] = k
	return s
}

// schema returns the schema of t: a reference for named structs (registering
// the component on first sight), inline otherwise.
func (r *schemaRegistry) schema(t reflect.Type, input bool) *jsonSchema {
	marshaler, textMarshaler := reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()
	switch {
	case t.Kind() == reflect.Pointer:
		return nullable(r.schema(t.Elem(), input))
	case t == reflect.TypeFor[time.Time]():
		return &jsonSchema{Type: "string", Format: "date-time"}
	case t == reflect.TypeFor[json.RawMessage]():
		return anyJSONSchema()
	case t.Implements(reflect.TypeFor[jsonObject]()):
		// Described by its fields, as a struct (below).
	case t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		r.errs = append(r.errs, fmt.Sprintf("%s marshals itself: describe it by hand", t))
		return &jsonSchema{}
	}
	switch t.Kind() {
	case reflect.Interface:
		return anyJSONSchema()
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonSchema{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &jsonSchema{Type: "number"}
	case reflect.String:
		return &jsonSchema{Type: "string"}
	case reflect.Slice, reflect.Array:
		return &jsonSchema{Type: "array", Items: r.schema(t.Elem(), input)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			r.errs = append(r.errs, fmt.Sprintf("%s: map keys must be strings", t))
		}
		return &jsonSchema{Type: "object", AdditionalProperties: r.schema(t.Elem(), input)}
	case reflect.Struct:
		if t.Name() == "" {
			s, _ := r.object(t, input)
			return s
		}
		k := schemaKey{t, input}
		if _, known := r.byKey[k]; known {
			return r.ref(k)
		}
		c := &component{schemaKey: k}
		r.byKey[k] = c // before its fields, which may refer back to it
		r.order = append(r.order, c)
		c.schema, c.fields = r.object(t, input)
		return r.ref(k)
	}
	r.errs = append(r.errs, fmt.Sprintf("%s: no JSON form", t))
	return &jsonSchema{}
}

// anyJSONSchema is the schema of a value that may be any JSON, null
// included (a stored JSON document passed through, or null when there is
// none): every type is listed, as validators read a schema without a type as
// refusing null.
func anyJSONSchema() *jsonSchema {
	return &jsonSchema{Type: []string{"object", "array", "string", "number", "boolean", "null"}, Description: "Any JSON value."}
}

// nullable lets a schema also be null.
func nullable(s *jsonSchema) *jsonSchema {
	switch typ := s.Type.(type) {
	case string:
		cp := *s
		cp.Type = []string{typ, "null"}
		return &cp
	case nil:
		if s.Ref != "" || len(s.AllOf) > 0 {
			return &jsonSchema{AnyOf: []*jsonSchema{s, {Type: "null"}}}
		}
		return s // any JSON value already includes null
	}
	return s
}

// structField is a JSON field of a struct as encoding/json resolves it.
type structField struct {
	name      string
	depth     int
	tagged    bool
	omitEmpty bool
	typ       reflect.Type
	index     int
}

// jsonObject is a struct that writes itself as a JSON object (MarshalJSON)
// and lists the fields it writes, in order, for the documentation.
type jsonObject interface {
	jsonFields() []structField
}

// jsonFields lists the fields encoding/json writes for t, in order, applying
// its rules for embedded structs: the shallowest field of a name wins, a
// tagged one among equals, and ambiguous names are dropped. A jsonObject
// lists its own.
func jsonFields(t reflect.Type) []structField {
	if t.Implements(reflect.TypeFor[jsonObject]()) {
		return reflect.Zero(t).Interface().(jsonObject).jsonFields()
	}
	var all []structField
	var walk func(t reflect.Type, depth int, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, depth int, seen map[reflect.Type]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					walk(et, depth+1, seen)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			sf := structField{name: name, depth: depth, tagged: name != "", typ: ft, index: len(all)}
			if sf.name == "" {
				sf.name = f.Name
			}
			for _, o := range strings.Split(opts, ",") {
				if o == "omitempty" || o == "omitzero" {
					sf.omitEmpty = true
				}
				if o == "string" {
					sf.typ = reflect.TypeFor[string]()
				}
			}
			all = append(all, sf)
		}
	}
	walk(t, 0, map[reflect.Type]bool{})
	byName := map[string][]structField{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	var out []structField
	for _, f := range all {
		rivals := byName[f.name]
		best := slices.MinFunc(rivals, func(a, b structField) int { return a.depth - b.depth })
		var winners []structField
		for _, r := range rivals {
			if r.depth == best.depth {
				winners = append(winners, r)
			}
		}
		if len(winners) > 1 {
			var tagged []structField
			for _, w := range winners {
				if w.tagged {
					tagged = append(tagged, w)
				}
			}
			if len(tagged) != 1 {
				continue // ambiguous: encoding/json writes none of them
			}
			winners = tagged
		}
		if winners[0].index == f.index {
			out = append(out, f)
		}
	}
	return out
}

// object is the schema of a struct and its fields for the page. Answers
// require the fields that are always encoded; bodies require none here (see
// input).
func (r *schemaRegistry) object(t reflect.Type, input bool) (*jsonSchema, []pendingField) {
	s := &jsonSchema{Type: "object", Properties: map[string]*jsonSchema{}}
	if input {
		s.AdditionalProperties = false
	}
	var fields []pendingField
	for _, f := range jsonFields(t) {
		fs := r.schema(f.typ, input)
		kind := f.typ.Kind()
		if !f.omitEmpty && (kind == reflect.Slice || kind == reflect.Map) && f.typ != reflect.TypeFor[json.RawMessage]() {
			fs = nullable(fs) // a nil slice or map is encoded as null
		}
		s.Properties[f.name] = fs
		req := !input && !f.omitEmpty
		if req {
			s.Required = append(s.Required, f.name)
		}
		fields = append(fields, pendingField{name: f.name, schema: fs, required: req})
	}
	return s, fields
}

func isNullable(s *jsonSchema) bool {
	if typ, ok := s.Type.([]string); ok {
		return slices.Contains(typ, "null")
	}
	return len(s.AnyOf) == 2 && s.AnyOf[1].Type == "null"
}

// describeSchema says a schema's type in words, with the component it names.
func describeSchema(s *jsonSchema) (words, ref string) {
	if len(s.AnyOf) == 2 && s.AnyOf[1].Type == "null" {
		return describeSchema(s.AnyOf[0])
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, componentsPrefix)
		return name, name
	}
	typ, _ := s.Type.(string)
	if list, ok := s.Type.([]string); ok {
		if len(list) > 2 {
			return "any JSON", ""
		}
		typ = list[0]
	}
	switch typ {
	case "":
		return "any JSON", ""
	case "array":
		w, ref := describeSchema(s.Items)
		return "array of " + w, ref
	case "object":
		if add, ok := s.AdditionalProperties.(*jsonSchema); ok {
			w, ref := describeSchema(add)
			return "map of " + w, ref
		}
		return "object", ""
	case "string":
		if s.Format != "" {
			return "string (" + s.Format + ")", ""
		}
	}
	return typ, ""
}

// openAPIRoutes registers the OpenAPI document and the documentation page.
// Both are public. The documentation is built once, when the server starts;
// should the table be wrong, both answer 500 and the log says why (the tests
// build it, so a wrong table does not get that far).
func (s *Server) openAPIRoutes(e *echo.Echo) {
	docs, err := buildAPIDocs()
	fail := func(c echo.Context) error { return fmt.Errorf("api documentation: %w", err) }
	if err != nil {
		if s.log != nil {
			s.log.Error("api documentation cannot be built", "error", err.Error())
		}
		e.GET(openAPIPath, fail)
		e.GET(apiDocsPath, fail)
		return
	}
	e.GET(openAPIPath, func(c echo.Context) error { return serveOpenAPI(c, docs) })
	e.GET(apiDocsPath, func(c echo.Context) error { return s.showAPIDocs(c, docs) })
}

// serveOpenAPI answers the document, or 304 when the client's copy is current.
func serveOpenAPI(c echo.Context, docs *apiDocs) error {
	h := c.Response().Header()
	h.Set("ETag", docs.etag)
	h.Set("Cache-Control", "public, max-age=300")
	if etagMatches(c.Request().Header.Get("If-None-Match"), docs.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, docs.json)
}

// etagMatches reports whether an If-None-Match header names etag (weakly, as
// RFC 9110 asks for GET).
func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}

// showAPIDocs is the documentation page.
func (s *Server) showAPIDocs(c echo.Context, docs *apiDocs) error {
	return s.render(c, http.StatusOK, web.APIDocsPage(s.page(c, "API documentation"), docs.view()))
}

// view turns the documentation into the page's view.
func (d *apiDocs) view() web.APIDocsView {
	v := web.APIDocsView{Version: apiVersion, OpenAPIURL: openAPIPath}
	for _, tag := range apiTags() {
		g := web.APIGroup{Name: tag.Name, Description: tag.Description, Anchor: "tag-" + strings.ToLower(tag.Name)}
		for _, op := range d.ops {
			if op.Tag == tag.Name {
				g.Operations = append(g.Operations, d.operationView(op))
			}
		}
		v.Groups = append(v.Groups, g)
	}
	names := make([]string, 0, len(d.fields))
	for name := range d.fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sv := web.APISchema{Name: name, Anchor: schemaAnchor(name)}
		for _, f := range d.fields[name] {
			fv := web.APIField{Name: f.Name, Type: f.Type, Required: f.Required, Nullable: f.Nullable}
			if f.Ref != "" {
				fv.TypeAnchor = schemaAnchor(f.Ref)
			}
			sv.Fields = append(sv.Fields, fv)
		}
		v.Schemas = append(v.Schemas, sv)
	}
	return v
}

func schemaAnchor(name string) string { return "schema-" + name }

// operationView is one operation on the page.
func (d *apiDocs) operationView(op apiOp) web.APIOperation {
	o := web.APIOperation{
		ID: op.ID, Anchor: "op-" + op.ID, Method: op.Method, Path: op.FullPath(), Summary: op.Summary,
		Description: op.Description, Who: op.Who, Anonymous: op.Access == accessAnyone, Curl: op.curl(),
	}
	for _, p := range op.Params {
		o.Params = append(o.Params, web.APIParam{Name: p.Name, In: p.In, Type: p.Type, Required: p.Required, Description: paramWords(p)})
	}
	if b := op.Body; b != nil {
		bv := &web.APIBody{ContentType: b.ContentType, Description: b.Description, Optional: b.Optional}
		if b.Type != nil {
			bv.Schema = d.names[schemaKey{b.Type, true}]
			bv.SchemaAnchor = schemaAnchor(bv.Schema)
			if len(b.Required) > 0 {
				bv.Description = strings.TrimSpace(bv.Description + " Required: " + strings.Join(b.Required, ", ") + ".")
			}
		}
		for _, f := range b.Fields {
			bv.Fields = append(bv.Fields, web.APIParam{Name: f.Name, In: "form", Type: f.Type, Required: f.Required, Description: paramWords(f)})
		}
		o.Body = bv
	}
	for _, rep := range op.Replies {
		rv := web.APIResponse{Status: strconv.Itoa(rep.Status), Description: rep.Description}
		if rep.Type != nil && rep.Type != typeOf[apiOpenAPIDocument]() {
			rv.Schema = d.names[schemaKey{rep.Type, false}]
			rv.SchemaAnchor = schemaAnchor(rv.Schema)
			if _, ok := d.fields[rv.Schema]; !ok {
				rv.SchemaAnchor = ""
			}
			if rep.Paginated {
				rv.Paginated = true
			}
		}
		o.Responses = append(o.Responses, rv)
	}
	for _, status := range op.errorStatuses() {
		o.Responses = append(o.Responses, web.APIResponse{Status: strconv.Itoa(status), Description: errorMeaning(status, op), Schema: schemaError, Error: true})
	}
	return o
}

// paramWords is a parameter's description with its allowed values.
func paramWords(p apiParam) string {
	w := p.Description
	if len(p.Enum) > 0 {
		w = strings.TrimSpace(w + " One of: " + strings.Join(p.Enum, ", ") + ".")
	}
	return w
}

// curl is the operation as a curl command against $PROCTOR with $TOKEN.
func (op apiOp) curl() string {
	path := op.FullPath()
	var query []string
	for _, p := range op.Params {
		switch {
		case p.In == "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", p.Example)
		case p.In == "query" && p.Required:
			query = append(query, p.Name+"="+p.Example)
		}
	}
	if len(query) > 0 {
		path += "?" + strings.Join(query, "&")
	}
	args := []string{"curl -s"}
	hasBody := op.Body != nil && (op.Body.Example != "" || len(op.Body.Fields) > 0)
	if op.Method != http.MethodGet && (op.Method != http.MethodPost || !hasBody) {
		args = append(args, "-X "+op.Method)
	}
	if op.Access == accessSignedIn {
		args = append(args, `-H "Authorization: Bearer $TOKEN"`)
	}
	if b := op.Body; hasBody {
		switch b.ContentType {
		case jsonMIME:
			args = append(args, "-H 'Content-Type: application/json'", "-d '"+b.Example+"'")
		case multipartMIME:
			for _, f := range b.Fields {
				if f.Type == "file" {
					args = append(args, "-F "+f.Name+"=@"+f.Example)
				} else {
					args = append(args, "-F "+f.Name+"="+f.Example)
				}
			}
		case binaryMIME:
			args = append(args, "-H 'Content-Type: application/octet-stream'", `-H "Content-MD5: $(openssl md5 -binary part-0001 | base64)"`, "--data-binary "+b.Example)
		}
	}
	args = append(args, `"$PROCTOR`+path+`"`)
	return strings.Join(args, " \\\n     ")
}
