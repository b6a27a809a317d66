package handlers

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// apiSubmissionRoutes registers /api/v1/submissions. Every route needs a
// signed-in caller; the submission service lets only the submitting team's
// members (and administrators) see and change a submission, and answers
// ENOTFOUND to everyone else.
func (s *Server) apiSubmissionRoutes(g *echo.Group) {
	g.GET("/submissions", s.apiListSubmissions, requireUser)
	g.POST("/submissions", s.apiCreateSubmission, requireUser)
	g.GET("/submissions/:id", s.apiShowSubmission, requireUser)
	g.DELETE("/submissions/:id", s.apiDiscardSubmission, requireUser)
	g.PUT(apiSubmissionPartRoute, s.apiPutSubmissionPart, requireUser)
	g.GET("/submissions/:id/parts/:n/url", s.apiSubmissionPartURL, requireUser)
	g.POST("/submissions/:id/complete", s.apiCompleteSubmission, requireUser)
	g.POST("/submissions/:id/ingest", s.apiIngestSubmission, requireUser)
}

// apiSubmissionPartRoute takes a part's raw bytes: it skips the global body
// limit, and the handler caps the body at the part's declared length.
const apiSubmissionPartRoute = "/submissions/:id/parts/:n"

func apiSubmissionPath(id int64) string { return "/api/v1/submissions/" + strconv.FormatInt(id, 10) }

// submissions returns the submission service, or EUNAVAILABLE in a server
// built without one.
func (s *Server) submissions() (SubmissionService, error) {
	if s.deps.Submissions == nil {
		return nil, models.Errorf(models.EUNAVAILABLE, "Submissions cannot be received on this server right now. Try again later or ask an administrator.")
	}
	return s.deps.Submissions, nil
}

// submissionAndID is the submission service and the submission id of the
// route's path, for the handlers of one submission.
func (s *Server) submissionAndID(c echo.Context) (SubmissionService, int64, error) {
	svc, err := s.submissions()
	if err != nil {
		return nil, 0, err
	}
	id, err := int64Param(c, "id")
	return svc, id, err
}

// publicSubmission is a submission as the API shows it: parts always a list.
// (Storage keys, upload ids and the raw report never reach JSON: see the
// model's tags.)
func publicSubmission(v *models.SubmissionView) *api.Submission {
	if v.Parts != nil {
		return v
	}
	out := *v
	out.Parts = []models.SubmissionPart{}
	return &out
}

// maxSubmissionsPerPage is the store's cap on a page of submissions.
const maxSubmissionsPerPage = 100

func (s *Server) apiListSubmissions(c echo.Context) error {
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
	items := make([]*api.Submission, 0, len(subs))
	for i := range subs {
		items = append(items, publicSubmission(&subs[i]))
	}
	return c.JSON(http.StatusOK, api.NewPage(items, f.Page, f.PerPage, total))
}

// submissionFilterOf reads ?team=, ?status=, ?page= and ?per_page= (the
// store checks the status and the team).
func submissionFilterOf(c echo.Context) (models.SubmissionFilter, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return models.SubmissionFilter{}, err
	}
	return models.SubmissionFilter{
		TeamSlug: strings.TrimSpace(c.QueryParam("team")), Status: strings.TrimSpace(c.QueryParam("status")),
		Page: page, PerPage: min(perPage, maxSubmissionsPerPage),
	}, nil
}

func (s *Server) apiCreateSubmission(c echo.Context) error {
	svc, err := s.submissions()
	if err != nil {
		return err
	}
	var req api.SubmissionRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	req.Normalize()
	sub, resumed, err := svc.CreateSubmission(c.Request().Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if resumed {
		status = http.StatusOK
	}
	c.Response().Header().Set(echo.HeaderLocation, apiSubmissionPath(sub.ID))
	return c.JSON(status, api.SubmissionCreated{Resumed: resumed, Submission: *publicSubmission(sub)})
}

func (s *Server) apiShowSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	sub, err := svc.Submission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, publicSubmission(sub))
}

// apiPutSubmissionPart streams one part's raw body to the service. The
// declared Content-Length is the part's size (the service checks it against
// the part's number) and the body is cut off beyond it, so nothing past a part
// is ever read, and nothing is buffered here.
func (s *Server) apiPutSubmissionPart(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	n, err := partNumberParam(c)
	if err != nil {
		return err
	}
	req := c.Request()
	if req.ContentLength < 0 {
		return &models.Error{Code: models.EINVALID, Field: "size",
			Message: "Send each part with a Content-Length header equal to the part's size (chunked bodies are not accepted)."}
	}
	sum, err := contentMD5(req.Header.Get("Content-MD5"))
	if err != nil {
		return err
	}
	body := http.MaxBytesReader(c.Response(), req.Body, req.ContentLength)
	part, err := svc.PutSubmissionPart(req.Context(), id, n, body, req.ContentLength, sum)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, part)
}

// partNumberParam reads :n, a part number from 1; anything else is EINVALID.
func partNumberParam(c echo.Context) (int, error) {
	v := c.Param("n")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, models.FieldError("n", "The part number must be an integer from 1, not %q.", v)
	}
	return n, nil
}

// contentMD5 decodes an RFC 1864 Content-MD5 header (base64 of the 16-byte
// digest); nil when absent.
func contentMD5(header string) ([]byte, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, nil
	}
	sum, err := base64.StdEncoding.DecodeString(header)
	if err != nil || len(sum) != 16 {
		return nil, models.FieldError("content_md5", "Content-MD5 must be the base64 encoding of the part's 16-byte MD5 digest (RFC 1864).")
	}
	return sum, nil
}

func (s *Server) apiSubmissionPartURL(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	n, err := partNumberParam(c)
	if err != nil {
		return err
	}
	url, expires, err := svc.SubmissionPartURL(c.Request().Context(), id, n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.PresignedPart{ExpiresAt: expires, Method: http.MethodPut, URL: url})
}

func (s *Server) apiCompleteSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	sub, err := svc.CompleteSubmission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, publicSubmission(sub))
}

func (s *Server) apiIngestSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	sub, err := svc.IngestSubmission(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, publicSubmission(sub))
}

func (s *Server) apiDiscardSubmission(c echo.Context) error {
	svc, id, err := s.submissionAndID(c)
	if err != nil {
		return err
	}
	if err := svc.DiscardSubmission(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
