package handlers

import (
	"errors"
	"io/fs"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// docName is a documentation file's name: one Markdown file, no folders.
var docName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.md$`)

// docsRoutes serves the documentation as plain text, for anyone.
func (s *Server) docsRoutes(e *echo.Echo) {
	e.GET("/docs/:name", s.showDoc)
}

func (s *Server) showDoc(c echo.Context) error {
	name := c.Param("name")
	if s.deps.Docs == nil || !docName.MatchString(name) {
		return models.Errorf(models.ENOTFOUND, "There is no document %q.", name)
	}
	b, err := fs.ReadFile(s.deps.Docs, name)
	if errors.Is(err, fs.ErrNotExist) {
		return models.Errorf(models.ENOTFOUND, "There is no document %q.", name)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	// Plain text: browsers show it rather than download it, and nothing in it runs.
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", b)
}
