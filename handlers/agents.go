package handlers

import "github.com/labstack/echo/v4"

// AgentStore is what these pages need from storage.
type AgentStore interface{}

func (s *Server) agentRoutes(e *echo.Echo) {}
