package handlers

import "github.com/labstack/echo/v4"

// annotationRoutes registers an annotator's queue and annotation pages.
func (s *Server) annotationRoutes(e *echo.Echo) {}
