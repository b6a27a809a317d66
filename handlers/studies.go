package handlers

import "github.com/labstack/echo/v4"

// studyRoutes registers the pages that create, manage and report on
// agreement studies.
func (s *Server) studyRoutes(e *echo.Echo) {}
