package handlers

import "github.com/labstack/echo/v4"

// TeamStore is what these pages need from storage.
type TeamStore interface{}

func (s *Server) teamRoutes(e *echo.Echo) {}
