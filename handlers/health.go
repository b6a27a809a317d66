package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"proctor/storage/artifact"
)

// healthz answers while the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers ok only when the database and the artifact store are
// reachable, and a local store has the free space it was configured to need
// ("low_space" otherwise).
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "artifacts": "ok"}
	status := http.StatusOK
	if err := s.store.Ping(ctx); err != nil {
		checks["database"], status = "unavailable", http.StatusServiceUnavailable
		s.requestLogger(c).Warn("readyz: database", "error", err.Error())
	}
	if s.deps.Artifacts != nil {
		if err := s.deps.Artifacts.Ping(ctx); err != nil {
			checks["artifacts"], status = "unavailable", http.StatusServiceUnavailable
			if errors.Is(err, artifact.ErrLowSpace) {
				checks["artifacts"] = "low_space"
			}
			s.requestLogger(c).Warn("readyz: artifacts", "error", err.Error())
		}
	}
	overall := "ok"
	if status != http.StatusOK {
		overall = "unavailable"
	}
	return c.JSON(status, map[string]any{"status": overall, "checks": checks})
}
