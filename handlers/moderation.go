package handlers

import (
	"github.com/labstack/echo/v4"
)

// ModerationStore is what the moderation pages need from storage.
type ModerationStore interface{}

// moderationRoutes registers the moderation pages and API routes.
func (s *Server) moderationRoutes(e *echo.Echo) {}
