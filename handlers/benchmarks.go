package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// BenchmarkStore is what the benchmark pages need.
type BenchmarkStore interface {
	ListBenchmarks(ctx context.Context) ([]models.BenchmarkListItem, error)
}

func (s *Server) benchmarkRoutes(e *echo.Echo) {}
