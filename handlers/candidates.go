package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// CandidateService queues hidden-tests runs of submitted candidate websites.
type CandidateService interface {
	SubmitCandidates(ctx context.Context, req models.CandidateRunRequest) (*models.Run, error)
}

// CandidateStore is what the candidate submission pages read.
type CandidateStore interface{}

// candidateRoutes registers the candidate submission pages.
func (s *Server) candidateRoutes(e *echo.Echo) {}

// apiCandidateRoutes registers the candidate submission API.
func (s *Server) apiCandidateRoutes(g *echo.Group) {}
