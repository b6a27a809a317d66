package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/web"
)

func (s *Server) showHome(c echo.Context) error {
	list, err := s.deps.Benchmarks.ListBenchmarks(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, web.HomePage(s.page(c, "Web-agent benchmarks"), list))
}
