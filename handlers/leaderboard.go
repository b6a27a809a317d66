package handlers

import (
	"github.com/labstack/echo/v4"
)

// LeaderboardStore is what the leaderboard pages need from storage.
type LeaderboardStore interface{}

// leaderboardRoutes registers the leaderboard pages and API routes.
func (s *Server) leaderboardRoutes(e *echo.Echo) {}
