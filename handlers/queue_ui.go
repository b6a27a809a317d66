package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// QueueUIPrefix is where River UI, the admin view of the job queue, is mounted;
// Deps.QueueUI must be built for this prefix.
const QueueUIPrefix = "/admin/queue"

// queueUIRoutes mounts River UI for administrators only (anonymous page visits
// go to the login page, other users get 403). The site-wide CSRF check still
// applies, so River UI's own job and queue actions (retry, cancel, delete,
// pause), which are JSON requests without Proctor's token, are refused: the view
// is read-only, and runs are cancelled and retried from Proctor's run pages,
// which keep attempts and runs in step with their jobs.
func (s *Server) queueUIRoutes(e *echo.Echo) {
	// The site drops trailing slashes, so the index arrives as /admin/queue.
	e.GET(QueueUIPrefix, s.serveQueueUI, requireAdmin)
	// The methods River UI's pages and API use.
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch}
	e.Match(methods, QueueUIPrefix+"/*", s.serveQueueUI, requireAdmin)
}

// serveQueueUI hands the request to River UI, with a content security policy
// that lets its scripts inject the styles of their toasts and transitions.
func (s *Server) serveQueueUI(c echo.Context) error {
	if s.deps.QueueUI == nil {
		return models.Errorf(models.EUNAVAILABLE, "The queue view is not available on this server.")
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", queueUICSP(h.Get("Content-Security-Policy")))
	req := c.Request()
	if req.URL.Path == QueueUIPrefix {
		// River UI redirects its bare prefix to prefix + "/", which the site
		// would redirect back: hand it the form it expects.
		r := req.Clone(req.Context())
		r.URL.Path, r.URL.RawPath = QueueUIPrefix+"/", ""
		req = r
	}
	s.deps.QueueUI.ServeHTTP(c.Response(), req)
	return nil
}

// queueUICSP derives River UI's policy from the site's: inline styles are
// allowed (its toast and theme libraries insert <style> elements); scripts and
// everything else stay as strict as on every other page.
func queueUICSP(site string) string {
	directives := strings.Split(site, ";")
	for i, d := range directives {
		if fields := strings.Fields(d); len(fields) > 0 && fields[0] == "style-src" {
			directives[i] = " " + strings.Join(append(fields, "'unsafe-inline'"), " ")
		}
	}
	return strings.TrimSpace(strings.Join(directives, ";"))
}
