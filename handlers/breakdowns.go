package handlers

import (
	"github.com/labstack/echo/v4"
)

// BreakdownStore is what the breakdowns pages need from storage.
type BreakdownStore interface{}

// breakdownsRoutes registers the breakdowns pages and API routes.
func (s *Server) breakdownsRoutes(e *echo.Echo) {}
