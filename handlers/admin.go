package handlers

import (
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/importer"
	"proctor/models"
	"proctor/service"
	"proctor/web"
)

// importFormMemory is how much of a multipart upload is held in memory; larger
// file parts are spooled to temporary files that net/http removes afterwards.
const importFormMemory = 8 << 20

// adminRoutes registers the admin pages; every one is for administrators only
// (anonymous page visits go to the login page, other users get 403). The
// benchmark service checks the same again.
func (s *Server) adminRoutes(e *echo.Echo) {
	e.Pre(s.limitImportBody)
	e.GET("/admin", s.showAdmin, requireAdmin)
	e.GET("/admin/benchmarks/import", s.showImport, requireAdmin)
	e.POST("/admin/benchmarks/import", s.importBenchmark, requireAdmin)
	e.GET("/admin/benchmarks/:slug/sites", s.showSites, requireAdmin)
	e.POST("/admin/benchmarks/:slug/sites/:site", s.updateSite, requireAdmin)
	e.POST("/admin/benchmarks/:slug/publish", s.publishBenchmark, requireAdmin)
	e.POST("/admin/benchmarks/:slug/rescore", s.rescoreBenchmark, requireAdmin)
	e.POST("/admin/rescore", s.rescoreAll, requireAdmin)
	e.GET("/admin/benchmarks/:slug/judge", s.showJudge, requireAdmin)
	e.POST("/admin/benchmarks/:slug/judge", s.updateJudge, requireAdmin)
	e.GET("/admin/benchmarks/:slug/grading", s.showGrading, requireAdmin)
	e.POST("/admin/benchmarks/:slug/grading", s.updateGrading, requireAdmin)
}

// limitImportBody caps the import uploads, which skip the global 2 MB body limit,
// at Options.MaxImportBytes. It runs before routing so the cap is in place
// before anything (the CSRF check included) reads the body.
func (s *Server) limitImportBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method == http.MethodPost && isUploadRoute(req.URL.Path) {
			if req.ContentLength > s.opts.MaxImportBytes {
				return tooLargeUpload(s.opts.MaxImportBytes)
			}
			req.Body = http.MaxBytesReader(c.Response(), req.Body, s.opts.MaxImportBytes)
		}
		return next(c)
	}
}

// guardUploads refuses upload POSTs from anyone but an administrator before a
// byte of the body is read, then parses the multipart form with bounded memory
// (larger parts spool to temporary files) so that the CSRF check can read its
// field without loading the upload.
func (s *Server) guardUploads(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isUpload(c) {
			return next(c)
		}
		u := currentUser(c)
		switch {
		case u == nil:
			return models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
		case !u.IsAdmin:
			return models.Errorf(models.EFORBIDDEN, "Only administrators may import benchmarks.")
		}
		if err := s.parseUploadForm(c.Request()); err != nil {
			return err
		}
		return next(c)
	}
}

// parseUploadForm parses a multipart upload once (later calls are no-ops),
// holding at most importFormMemory in memory.
func (s *Server) parseUploadForm(req *http.Request) error {
	err := req.ParseMultipartForm(importFormMemory)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLarge):
		return tooLargeUpload(s.opts.MaxImportBytes)
	case errors.Is(err, http.ErrNotMultipart), errors.Is(err, http.ErrMissingBoundary):
		return models.Errorf(models.EINVALID, "Send the import as multipart/form-data.")
	}
	return &models.Error{Code: models.EINVALID, Message: "The upload could not be read.", Err: err}
}

func tooLargeUpload(limit int64) error {
	return &models.Error{Code: models.ETOOLARGE, Field: "dataset",
		Message: fmt.Sprintf("The upload is larger than %d MiB.", limit>>20)}
}

func (s *Server) showAdmin(c echo.Context) error {
	items, err := s.deps.Benchmarks.AdminBenchmarks(c.Request().Context())
	if err != nil {
		return err
	}
	for i := range items {
		items[i].Grading = s.deps.Evaluators.Grading(items[i].Benchmark.Evaluator)
	}
	return s.render(c, http.StatusOK, web.AdminPage(s.page(c, "Administration"), items))
}

func (s *Server) showImport(c echo.Context) error {
	f := web.NewForm()
	f.Values["format"] = models.FormatWebArenaVerified
	return s.render(c, http.StatusOK, web.ImportPage(s.page(c, "Import a benchmark"), f))
}

// importBenchmark imports an uploaded benchmark and goes to its page; errors
// re-render the form with the message next to the field at fault.
func (s *Server) importBenchmark(c echo.Context) error {
	res, err := s.runImport(c)
	if err != nil {
		names := []string{"format", "slug"}
		for i := 1; i <= web.ImportSubsetSlots; i++ {
			names = append(names, "subset_name_"+strconv.Itoa(i))
		}
		form := formOf(c, names...)
		return s.formError(c, err, web.ImportPage(s.page(c, "Import a benchmark"), form.WithError(err)))
	}
	return redirect(c, "/benchmarks/"+url.PathEscape(res.Benchmark.Slug)+"?notice=imported")
}

// runImport reads the import form and imports it through the benchmark
// service; a refusal to parse names the form field at fault.
func (s *Server) runImport(c echo.Context) (models.ImportResult, error) {
	up, err := s.readImport(c)
	if err != nil {
		return models.ImportResult{}, err
	}
	defer up.close()
	res, err := s.deps.Benchmarks.Import(c.Request().Context(), up.req)
	var parse *service.ParseError
	if errors.As(err, &parse) {
		return models.ImportResult{}, importFieldError(parse.Err, up.fieldOf)
	}
	return res, err
}

// importUpload is a read import form: the service's request and the form
// field of each subset.
type importUpload struct {
	req     service.ImportRequest
	fieldOf map[string]string // subset name -> its file's field
	files   []multipart.File
}

func (u *importUpload) close() {
	for _, f := range u.files {
		f.Close()
	}
}

// readImport reads the multipart import form shared by the admin page and the
// API — format, slug, dataset and up to web.ImportSubsetSlots pairs of
// subset_name_N / subset_file_N — and opens the files, which the service
// streams from the request's parts. Errors name the form field at fault.
func (s *Server) readImport(c echo.Context) (*importUpload, error) {
	if err := s.parseUploadForm(c.Request()); err != nil {
		return nil, err
	}
	up := &importUpload{fieldOf: map[string]string{}}
	ok := false
	defer func() {
		if !ok {
			up.close()
		}
	}()
	format := strings.TrimSpace(c.FormValue("format"))
	if !slices.Contains(models.ImportFormats(), format) {
		return nil, models.FieldError("format", "choose one of %s", strings.Join(models.ImportFormats(), ", "))
	}
	slug := strings.TrimSpace(c.FormValue("slug"))
	switch {
	case slug == "":
		return nil, models.FieldError("slug", "enter the benchmark's slug, e.g. %s", format)
	case !models.ValidSlug(slug):
		return nil, models.FieldError("slug", "use 1 to 64 lower-case letters, digits and hyphens")
	}
	dataset, err := up.open(c, "dataset")
	if err != nil {
		return nil, err
	}
	if dataset == nil {
		return nil, models.FieldError("dataset", "choose the benchmark file to import")
	}

	var subsets []importer.SubsetFile
	fieldOf := up.fieldOf
	for i := 1; i <= web.ImportSubsetSlots; i++ {
		nameField, fileField := "subset_name_"+strconv.Itoa(i), "subset_file_"+strconv.Itoa(i)
		name := strings.TrimSpace(c.FormValue(nameField))
		file, err := up.open(c, fileField)
		if err != nil {
			return nil, err
		}
		switch {
		case name == "" && file == nil:
			continue
		case name == "":
			return nil, models.FieldError(nameField, "name this subset (lower-case letters, digits and hyphens)")
		case file == nil:
			return nil, models.FieldError(fileField, "choose the file of subset %q", name)
		}
		if err := models.ValidateSubsetName(name); err != nil {
			return nil, models.FieldError(nameField, "%s", models.ErrorMessage(err))
		}
		if _, dup := fieldOf[name]; dup {
			return nil, models.FieldError(nameField, "subset %q is given twice", name)
		}
		fieldOf[name] = fileField
		subsets = append(subsets, importer.SubsetFile{Name: name, R: file})
	}
	up.req.Format, up.req.Slug, up.req.Dataset, up.req.Subsets = format, slug, dataset, subsets
	ok = true
	return up, nil
}

// open opens an uploaded file part; nil when the field holds no file. The
// dataset's file name is kept as the version's source name.
func (u *importUpload) open(c echo.Context, field string) (multipart.File, error) {
	fh, err := c.FormFile(field)
	if errors.Is(err, http.ErrMissingFile) {
		return nil, nil
	}
	if err != nil {
		return nil, &models.Error{Code: models.EINVALID, Field: field, Message: "the file could not be read", Err: err}
	}
	f, err := fh.Open()
	if err != nil {
		return nil, &models.Error{Code: models.EINVALID, Field: field, Message: "the file could not be read", Err: err}
	}
	u.files = append(u.files, f)
	if field == "dataset" {
		u.req.Source = filepath.Base(filepath.Clean("/" + fh.Filename))
	}
	return f, nil
}

// importFieldError attaches an importer error to the form field it is about: a
// subset's file when the message names that subset, else the dataset.
func importFieldError(err error, fieldOf map[string]string) error {
	var me *models.Error
	if !errors.As(err, &me) || me.Field != "" {
		return err
	}
	cp := *me
	cp.Field = "dataset"
	for name, field := range fieldOf {
		if strings.HasPrefix(me.Message, fmt.Sprintf("subset %q", name)) {
			cp.Field = field
		}
	}
	return &cp
}

func (s *Server) showSites(c echo.Context) error {
	slug := pathParam(c, "slug")
	sites, err := s.deps.Benchmarks.ListSites(c.Request().Context(), slug)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.SitesPage(s.page(c, "Sites of "+slug), slug, sites, "", web.NewForm()))
}

// updateSite saves one site's URL, reset URL and concurrency cap; errors
// re-render the page with the message next to the field of that site's form.
func (s *Server) updateSite(c echo.Context) error {
	ctx := c.Request().Context()
	slug, site := pathParam(c, "slug"), pathParam(c, "site")
	f := formOf(c, "url", "reset_url", "max_concurrency")
	_, err := s.saveSite(c, slug, site)
	if err != nil {
		if models.ErrorCode(err) != models.EINVALID {
			return err
		}
		sites, lerr := s.deps.Benchmarks.ListSites(ctx, slug)
		if lerr != nil {
			return lerr
		}
		return s.formError(c, err, web.SitesPage(s.page(c, "Sites of "+slug), slug, sites, site, f.WithError(err)))
	}
	return redirect(c, "/admin/benchmarks/"+url.PathEscape(slug)+"/sites?notice=saved")
}

func (s *Server) saveSite(c echo.Context, slug, site string) (*models.Site, error) {
	limit := 0
	if v := strings.TrimSpace(c.FormValue("max_concurrency")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, models.FieldError("max_concurrency", "%q is not a whole number", v)
		}
		limit = n
	}
	return s.deps.Benchmarks.UpdateSite(c.Request().Context(), slug, site, c.FormValue("url"), c.FormValue("reset_url"), limit)
}

// publishBenchmark sets whether non-admins can see a benchmark (published=true
// or false) and goes back to the dashboard.
func (s *Server) publishBenchmark(c echo.Context) error {
	published, err := strconv.ParseBool(c.FormValue("published"))
	if err != nil {
		return models.FieldError("published", "published must be true or false")
	}
	if err := s.deps.Benchmarks.SetPublished(c.Request().Context(), pathParam(c, "slug"), published); err != nil {
		return err
	}
	return redirect(c, "/admin?notice=saved")
}

// rescoreBenchmark queues a new evaluation of every finished attempt of a
// benchmark's runs.
func (s *Server) rescoreBenchmark(c echo.Context) error {
	b, err := s.deps.Benchmarks.Benchmark(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return err
	}
	return s.rescore(c, models.RescoreScope{BenchmarkID: b.ID})
}

// rescoreAll queues a new evaluation of every finished attempt.
func (s *Server) rescoreAll(c echo.Context) error {
	return s.rescore(c, models.RescoreScope{})
}

func (s *Server) rescore(c echo.Context, scope models.RescoreScope) error {
	if err := s.deps.Runs.RequireQueue(); err != nil {
		return err
	}
	n, err := s.deps.Runs.Rescore(c.Request().Context(), scope)
	if err != nil {
		return err
	}
	return redirect(c, "/admin?notice=rescored&n="+strconv.Itoa(n))
}

// judgeView loads a benchmark's judge settings page with form f.
func (s *Server) judgeView(c echo.Context, f web.Form) (web.JudgeView, error) {
	b, err := s.deps.Benchmarks.Benchmark(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return web.JudgeView{}, err
	}
	if _, ok := f.Values["judge_base_url"]; !ok {
		f.Values["judge_base_url"], f.Values["judge_model"] = b.JudgeBaseURL, b.JudgeModel
	}
	f.Values["judge_api_key"] = "" // write-only
	return web.JudgeView{Slug: b.Slug, Evaluator: b.Evaluator, Grading: s.deps.Evaluators.Grading(b.Evaluator), KeyStored: b.JudgeAPIKey != "", Server: s.opts.ServerJudge, Form: f}, nil
}

func (s *Server) showJudge(c echo.Context) error {
	v, err := s.judgeView(c, web.NewForm())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.JudgePage(s.page(c, "Judge of "+v.Slug), v))
}

// updateJudge saves a benchmark's own judge; a bad field re-renders the form
// with the message next to it.
func (s *Server) updateJudge(c echo.Context) error {
	slug := pathParam(c, "slug")
	u := models.JudgeUpdate{BaseURL: c.FormValue("judge_base_url"), Model: c.FormValue("judge_model")}
	if key := c.FormValue("judge_api_key"); key != "" {
		u.APIKey = &key
	} else if c.FormValue("clear_key") == "true" {
		u.APIKey = new(string)
	}
	if err := s.deps.Benchmarks.SetJudge(c.Request().Context(), slug, u); err != nil {
		if models.ErrorCode(err) != models.EINVALID {
			return err
		}
		v, verr := s.judgeView(c, formOf(c, "judge_base_url", "judge_model").WithError(err))
		if verr != nil {
			return verr
		}
		return s.formError(c, err, web.JudgePage(s.page(c, "Judge of "+slug), v))
	}
	return redirect(c, "/admin/benchmarks/"+url.PathEscape(slug)+"/judge?notice=saved")
}

// gradingView loads a WebArena-Verified benchmark's grading page with form f.
func (s *Server) gradingView(c echo.Context, f web.Form) (web.GradingView, error) {
	b, err := s.deps.Benchmarks.Benchmark(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return web.GradingView{}, err
	}
	grading := s.deps.Evaluators.Grading(b.Evaluator)
	if !grading.Readings {
		return web.GradingView{}, models.Errorf(models.ECONFLICT,
			"Benchmark %q is graded by %s: only WebArena-Verified benchmarks choose a reading. Its judge and sites are set from the Administration page.", b.Slug, b.Evaluator)
	}
	return web.GradingView{Slug: b.Slug, Evaluator: b.Evaluator, Grading: grading, Form: f, Saved: c.QueryParam("notice") == "saved"}, nil
}

// showGrading is a WebArena-Verified benchmark's choice of reading.
func (s *Server) showGrading(c echo.Context) error {
	v, err := s.gradingView(c, web.NewForm())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.GradingPage(s.page(c, "Grading of "+v.Slug), v))
}

// updateGrading saves the reading and comes back to the page, which then
// offers to re-score the benchmark's runs; a bad value re-renders the form
// with the message next to it.
func (s *Server) updateGrading(c echo.Context) error {
	slug := pathParam(c, "slug")
	if err := s.deps.Benchmarks.SetEvaluator(c.Request().Context(), slug, c.FormValue("evaluator")); err != nil {
		if models.ErrorCode(err) != models.EINVALID {
			return err
		}
		v, verr := s.gradingView(c, formOf(c, "evaluator").WithError(err))
		if verr != nil {
			return verr
		}
		return s.formError(c, err, web.GradingPage(s.page(c, "Grading of "+slug), v))
	}
	return redirect(c, "/admin/benchmarks/"+url.PathEscape(slug)+"/grading?notice=saved")
}
