package handlers

import (
	"github.com/labstack/echo/v4"
)

// CompareStore is what the compare pages need from storage.
type CompareStore interface{}

// compareRoutes registers the compare pages and API routes.
func (s *Server) compareRoutes(e *echo.Echo) {}
