package handlers

import (
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// isDocName reports whether name is a documentation file's name: one
// Markdown file of lower-case letters, digits and dashes, no folders.
func isDocName(name string) bool {
	base, ok := strings.CutSuffix(name, ".md")
	if !ok || base == "" || base[0] == '-' {
		return false
	}
	for _, r := range base {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// docsRoutes serves the documentation as plain text, for anyone.
func (s *Server) docsRoutes(e *echo.Echo) {
	e.GET("/docs/:name", s.showDoc)
}

func (s *Server) showDoc(c echo.Context) error {
	name := c.Param("name")
	if s.deps.Docs == nil || !isDocName(name) {
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
