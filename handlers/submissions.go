package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/bundle"
	"proctor/models"
	"proctor/web"
)

// SubmissionService is the submission portal (service.Submissions): it
// checks who may see and do what, receives uploads and queues their jobs.
type SubmissionService interface {
	// ListSubmissions lists the submissions the caller may see.
	ListSubmissions(ctx context.Context, f models.SubmissionFilter) ([]models.SubmissionView, int, error)
	// SubmissionFormOptions lists what the upload form offers the caller.
	SubmissionFormOptions(ctx context.Context) (*models.SubmissionFormOptions, error)
	// SubmissionEvents is a submission's audit trail.
	SubmissionEvents(ctx context.Context, id int64) ([]models.SubmissionEvent, error)
	// SubmissionLimits are the limits every bundle is held to.
	SubmissionLimits() bundle.Limits
	// Available reports whether this process receives submissions (it has
	// a queue); the rest answers EUNAVAILABLE when it does not.
	Available() bool
	// CreateSubmission starts an upload, or resumes the caller's unfinished
	// upload of the same bundle (resumed = true).
	CreateSubmission(ctx context.Context, req models.SubmissionRequest) (sub *models.SubmissionView, resumed bool, err error)
	// Submission is one submission with its received parts and report.
	Submission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// PutSubmissionPart stores part n (from 1) of an upload; md5 (nil when the
	// client sent none) must match the received bytes.
	PutSubmissionPart(ctx context.Context, id int64, n int, r io.Reader, size int64, md5 []byte) (*models.SubmissionPart, error)
	// SubmissionPartURL presigns a direct upload of part n to S3 (ECONFLICT
	// with the local artifact store: parts go through the API there).
	SubmissionPartURL(ctx context.Context, id int64, n int) (url string, expires time.Time, err error)
	// CompleteSubmission assembles the parts and queues validation.
	CompleteSubmission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// UploadSubmission stores a whole bundle streamed in one request (the
	// upload form without JavaScript) and queues validation.
	UploadSubmission(ctx context.Context, req models.SubmissionRequest, r io.Reader) (*models.SubmissionView, error)
	// IngestSubmission queues the ingest of a validated submission.
	IngestSubmission(ctx context.Context, id int64) (*models.SubmissionView, error)
	// DiscardSubmission deletes an unfinished submission's bytes.
	DiscardSubmission(ctx context.Context, id int64) error
}

// submissionRoutes registers the submission portal's pages. Every page needs a
// signed-in caller (anonymous visits go to the login page); the submission
// service shows a submission only to its team's members and administrators,
// and answers ENOTFOUND to everyone else.
func (s *Server) submissionRoutes(e *echo.Echo) {
	e.Pre(readUploadFormCSRF)
	e.GET(web.SubmissionsPath, s.listSubmissions, requireUser)
	e.GET("/submissions/new", s.newSubmission, requireUser)
	e.POST(submissionUploadRoute, s.uploadSubmission, requireUser)
	e.GET("/submissions/:id", s.showSubmission, requireUser)
	e.GET("/submissions/:id/progress", s.showSubmissionProgress, requireUser)
	e.POST("/submissions/:id/ingest", s.ingestSubmission, requireUser)
	e.POST("/submissions/:id/discard", s.discardSubmission, requireUser)
}

// submissionUploadRoute takes the upload form's whole bundle in one
// multipart request (the form without JavaScript).
const submissionUploadRoute = web.SubmissionsPath

func submissionPath(id int64) string { return web.SubmissionPath(id) }

// Limits of the upload form's small fields and of what is read from a
// refused upload's remaining body before the connection is let go.
const (
	maxUploadField = 1 << 10
	maxUploadDrain = 32 << 20
)

// ctxUploadForm holds the upload form's multipart reader once
// readUploadFormCSRF has taken the CSRF field off its front.
const ctxUploadForm = "proctor.upload_form"

// uploadForm is the upload form's body, read part by part as it arrives.
type uploadForm struct {
	reader  *multipart.Reader
	pending *multipart.Part // the first part, when it was not the CSRF token
	err     error           // reading the first part failed
}

// next returns the form's next part; io.EOF after the last.
func (f *uploadForm) next() (*multipart.Part, error) {
	if f.err != nil {
		return nil, f.err
	}
	if p := f.pending; p != nil {
		f.pending = nil
		return p, nil
	}
	return f.reader.NextPart()
}

// readUploadFormCSRF lets the upload form be checked for CSRF without reading
// its body into memory: the CSRF check would otherwise parse the whole
// multipart form to find the token. The form puts its token first; this reads
// that one part and passes it on as the CSRF header, and leaves the rest of
// the body, the bundle included, to the handler as a stream. It runs before
// routing so it comes before the CSRF check; a header the client sent itself
// wins.
func readUploadFormCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodPost || req.URL.Path != submissionUploadRoute {
			return next(c)
		}
		if mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEMultipartForm {
			return next(c) // not multipart: the handler says what to send
		}
		mr, err := req.MultipartReader()
		if err != nil {
			return next(c) // not multipart: the handler says what to send
		}
		form := &uploadForm{reader: mr}
		c.Set(ctxUploadForm, form)
		part, err := mr.NextPart()
		switch {
		case err != nil:
			form.err = err
		case part.FormName() != csrfField:
			form.pending = part
		default:
			token, err := io.ReadAll(io.LimitReader(part, maxUploadField))
			if err != nil {
				form.err = err
			} else if req.Header.Get(csrfHeader) == "" {
				req.Header.Set(csrfHeader, strings.TrimSpace(string(token)))
			}
		}
		return next(c)
	}
}

func (s *Server) listSubmissions(c echo.Context) error {
	f, err := submissionFilterOf(c)
	if err != nil {
		return err
	}
	svc, err := s.submissions()
	if err != nil {
		return err
	}
	subs, total, err := svc.ListSubmissions(c.Request().Context(), f)
	if err != nil {
		return err
	}
	v := web.SubmissionListView{Items: subs, Page: f.Page, PerPage: f.PerPage, Total: total, Status: f.Status, Team: f.TeamSlug}
	return s.render(c, http.StatusOK, web.SubmissionsPage(s.page(c, "Submissions"), v))
}

// newSubmission is the upload form; ?agent=, ?benchmark= and ?subset= preselect.
func (s *Server) newSubmission(c echo.Context) error {
	f := web.NewForm()
	for _, name := range []string{"agent", "benchmark", "subset"} {
		f.Values[name] = strings.TrimSpace(c.QueryParam(name))
	}
	return s.renderSubmissionForm(c, http.StatusOK, f)
}

func (s *Server) renderSubmissionForm(c echo.Context, status int, f web.Form) error {
	svc, err := s.submissions()
	if err != nil {
		return err
	}
	opts, err := svc.SubmissionFormOptions(c.Request().Context())
	if err != nil {
		return err
	}
	lim := svc.SubmissionLimits()
	v := web.SubmissionFormView{
		Options: opts, Form: f, Available: svc.Available(),
		Limits: web.SubmissionLimits(lim.MaxBundleBytes, lim.MaxFiles, lim.MaxFileBytes, lim.MaxTotalBytes, lim.MaxRatio),
	}
	return s.render(c, status, web.SubmissionFormPage(s.page(c, "Submit results"), v))
}

// uploadSubmission takes the upload form without JavaScript: the fields, then
// the bundle, streamed part by part to the submission service, which stores
// the file as it arrives. Refusals re-render the form with their message.
func (s *Server) uploadSubmission(c echo.Context) error {
	svc, err := s.submissions()
	if err != nil {
		return err
	}
	f := web.NewForm()
	form, _ := c.Get(ctxUploadForm).(*uploadForm)
	if form == nil {
		return s.renderSubmissionForm(c, http.StatusBadRequest, f.WithError(models.Errorf(models.EINVALID, "Send the form as multipart/form-data, with the bundle file last.")))
	}
	req, file, err := readUploadFields(form, f)
	if err == nil {
		var sub *models.SubmissionView
		if sub, err = svc.UploadSubmission(c.Request().Context(), req, file); err == nil {
			return redirect(c, submissionPath(sub.ID)+"?notice=uploaded")
		}
	}
	// Read a little of what is left so that the browser, still sending, sees
	// the answer rather than a reset connection; a larger rest is cut off.
	_, _ = io.CopyN(io.Discard, c.Request().Body, maxUploadDrain)
	switch models.ErrorCode(err) {
	case models.EINTERNAL, models.EUNAVAILABLE, models.EUNAUTHORIZED:
		return err
	}
	return s.renderSubmissionForm(c, statusOf(models.ErrorCode(err)), formError(f, err))
}

// formError attaches err to the upload form: the service's request fields
// about the file (filename, size, sha256) belong to the file input.
func formError(f web.Form, err error) web.Form {
	var me *models.Error
	if errors.As(err, &me) {
		switch me.Field {
		case "filename", "size", "sha256", "file":
			cp := *me
			cp.Field = "bundle"
			err = &cp
		case "team":
			cp := *me
			cp.Field = "agent"
			err = &cp
		}
	}
	return f.WithError(err)
}

// readUploadFields reads the form's fields up to the bundle file (the last
// field: browsers send fields in the form's order) and returns the request
// they make and the file, unread. The values are kept in f for a re-render.
func readUploadFields(form *uploadForm, f web.Form) (models.SubmissionRequest, io.Reader, error) {
	var req models.SubmissionRequest
	for {
		part, err := form.next()
		if errors.Is(err, io.EOF) {
			return req, nil, models.FieldError("bundle", "Choose the bundle file to upload (.zip, .tar.gz or .tgz).")
		}
		if err != nil {
			return req, nil, &models.Error{Code: models.EINVALID, Message: "The upload could not be read: it was interrupted or is not a valid form.", Err: err}
		}
		name := part.FormName()
		if name == "bundle" {
			filename := part.FileName()
			if filename == "" {
				return req, nil, models.FieldError("bundle", "Choose the bundle file to upload (.zip, .tar.gz or .tgz).")
			}
			// Browsers send a base name; old ones sent a Windows path.
			req.Filename = path.Base(strings.ReplaceAll(filename, `\`, "/"))
			req.Normalize()
			return req, part, nil
		}
		b, err := io.ReadAll(io.LimitReader(part, maxUploadField+1))
		if err != nil {
			return req, nil, &models.Error{Code: models.EINVALID, Message: "The upload could not be read: it was interrupted.", Err: err}
		}
		if len(b) > maxUploadField {
			return req, nil, models.FieldError(name, "%s is longer than %d bytes.", name, maxUploadField)
		}
		value := strings.TrimSpace(string(b))
		switch name {
		case "agent":
			req.Agent = value
		case "benchmark":
			req.Benchmark = value
		case "subset":
			req.Subset = value
		case "team":
			req.Team = value
		default:
			continue
		}
		f.Values[name] = value
	}
}

// submissionNotice is the one-time notice of a submission action's redirect,
// while it still holds: the page reloads itself with the same address when
// a job finishes, and then the status says what happened.
func submissionNotice(c echo.Context, status string) string {
	switch notice := c.QueryParam("notice"); {
	case notice == "uploaded" && (status == models.SubmissionUploaded || status == models.SubmissionValidating):
		return "Bundle uploaded. It is being validated; the report appears on this page."
	case notice == "ingesting" && status == models.SubmissionIngesting:
		return "Ingest queued. The run appears here once its attempts are stored."
	case notice == "discarded" && status == models.SubmissionDiscarded:
		return "Submission discarded. Its bundle is deleted."
	}
	return ""
}

func (s *Server) showSubmission(c echo.Context) error {
	return s.renderSubmission(c, http.StatusOK, "")
}

// renderSubmission renders a submission's page with an optional message at
// the top (a refused action's reason).
func (s *Server) renderSubmission(c echo.Context, status int, message string) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	sub, err := svc.Submission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	p := s.page(c, fmt.Sprintf("Submission %d", id))
	if n := submissionNotice(c, sub.Status); n != "" && message == "" {
		p.Flash = n
	}
	events, err := svc.SubmissionEvents(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return s.render(c, status, web.SubmissionPage(p, web.SubmissionView{Sub: sub, Events: events, Error: message}))
}

// showSubmissionProgress answers the submission page's polling with the
// status section; a plain request gets a page holding it.
func (s *Server) showSubmissionProgress(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	sub, err := svc.Submission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Add("Vary", "HX-Request")
	if wantsFragment(c) {
		if !web.SubmissionInProgress(sub.Status) {
			// The job is done: reload the page whole, so the report and the
			// actions the new status allows appear.
			c.Response().Header().Set("HX-Refresh", "true")
		}
		return s.render(c, http.StatusOK, web.SubmissionStatusSection(sub))
	}
	return s.render(c, http.StatusOK, web.SubmissionProgressPage(s.page(c, fmt.Sprintf("Progress of submission %d", id)), sub))
}

func (s *Server) ingestSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	if _, err := svc.IngestSubmission(c.Request().Context(), id); err != nil {
		return s.submissionActionError(c, err)
	}
	return redirect(c, submissionPath(id)+"?notice=ingesting")
}

func (s *Server) discardSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	if err := svc.DiscardSubmission(c.Request().Context(), id); err != nil {
		return s.submissionActionError(c, err)
	}
	return redirect(c, submissionPath(id)+"?notice=discarded")
}

// submissionActionError shows a refused action (the wrong status, blocking
// problems, no permission) on the submission's page with its status code;
// other errors go to the error handler.
func (s *Server) submissionActionError(c echo.Context, err error) error {
	switch code := models.ErrorCode(err); code {
	case models.ECONFLICT, models.EINVALID, models.EFORBIDDEN:
		return s.renderSubmission(c, statusOf(code), models.ErrorMessage(err))
	}
	return err
}
