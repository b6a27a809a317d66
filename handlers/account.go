package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// TokenStore is what API-token authentication and the token pages need.
type TokenStore interface {
	TokenUser(ctx context.Context, token string) (*models.User, error)
}

func (s *Server) accountRoutes(e *echo.Echo) {}
