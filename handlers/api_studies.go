package handlers

import "github.com/labstack/echo/v4"

// apiStudyRoutes registers the agreement studies' API.
func (s *Server) apiStudyRoutes(g *echo.Group) {}
