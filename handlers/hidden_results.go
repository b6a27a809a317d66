package handlers

import (
	"github.com/labstack/echo/v4"
)

// HiddenResultStore is what the hidden-test result pages read.
type HiddenResultStore interface{}

// hiddenResultRoutes registers the hidden-test result pages.
func (s *Server) hiddenResultRoutes(e *echo.Echo) {}

// apiHiddenResultRoutes registers the hidden-test results API.
func (s *Server) apiHiddenResultRoutes(g *echo.Group) {}
