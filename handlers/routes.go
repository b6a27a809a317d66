package handlers

import (
	"github.com/labstack/echo/v4"
)

// routes registers every route. Each feature file adds its own group so that the
// permission of a route is visible where the route is declared.
func (s *Server) routes() {
	e := s.echo
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/static/*", s.assets.serve)
	if s.deps.ArtifactHandler != nil {
		e.Any("/artifacts/*", echo.WrapHandler(s.deps.ArtifactHandler))
	}

	e.GET("/", s.showHome)
	e.GET("/signup", s.showSignup)
	e.POST("/signup", s.signup)
	e.GET("/login", s.showLogin)
	e.POST("/login", s.login)
	e.POST("/logout", s.logout, requireUser)

	s.accountRoutes(e)
	s.teamRoutes(e)
	s.agentRoutes(e)
	s.benchmarkRoutes(e)
	s.runRoutes(e)
	s.timelineRoutes(e)
	s.leaderboardRoutes(e)
	s.breakdownsRoutes(e)
	s.compareRoutes(e)
	s.moderationRoutes(e)
	s.queueUIRoutes(e)
	s.submissionRoutes(e)
	s.studyRoutes(e)
	s.annotationRoutes(e)
	s.candidateRoutes(e)
	s.hiddenResultRoutes(e)
	s.openAPIRoutes(e)
	s.docsRoutes(e)

	api := e.Group("/api/v1")
	s.apiRoutes(api)
}
