package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
	"proctor/web"
)

// statusOf maps an error code to its HTTP status, in one place.
func statusOf(code string) int {
	switch code {
	case models.EINVALID:
		return http.StatusBadRequest
	case models.ENOTFOUND:
		return http.StatusNotFound
	case models.ECONFLICT:
		return http.StatusConflict
	case models.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case models.EFORBIDDEN:
		return http.StatusForbidden
	case models.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case models.ERATELIMIT:
		return http.StatusTooManyRequests
	case models.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case models.EGONE:
		return http.StatusGone
	}
	return http.StatusInternalServerError
}

// fromHTTPError turns Echo's own errors (unknown route, method not allowed, body
// too large) into application errors with client-safe messages.
func fromHTTPError(he *echo.HTTPError) *models.Error {
	switch he.Code {
	case http.StatusNotFound:
		return models.Errorf(models.ENOTFOUND, "There is nothing at this address.")
	case http.StatusMethodNotAllowed:
		return models.Errorf(models.ENOTFOUND, "There is nothing at this address for this method.")
	case http.StatusRequestEntityTooLarge:
		return models.Errorf(models.ETOOLARGE, "The request body is too large.")
	case http.StatusUnauthorized:
		return models.Errorf(models.EUNAUTHORIZED, "You must be signed in.")
	case http.StatusForbidden:
		return models.Errorf(models.EFORBIDDEN, "You do not have permission to do this.")
	case http.StatusBadRequest:
		return models.Errorf(models.EINVALID, "The request is malformed.")
	}
	return &models.Error{Code: models.EINTERNAL, Message: "An internal error occurred.", Err: he}
}

// handleError is the one error handler: JSON for the API, a fragment for htmx,
// the error page otherwise. Internal errors are logged with the request id and
// shown only as a generic message.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if me := (*models.Error)(nil); !errors.As(he.Internal, &me) {
			err = fromHTTPError(he)
		} else {
			err = me
		}
	}
	code := models.ErrorCode(err)
	status := statusOf(code)
	msg := models.ErrorMessage(err)
	if code == models.EINTERNAL || code == models.EUNAVAILABLE {
		s.requestLogger(c).Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "error", err.Error())
	}
	if code == models.ENOTFOUND && !isAPI(c) {
		msg = "There is nothing at this address, or you do not have access to it."
	}
	setRetryAfter(c, err)
	var renderErr error
	switch {
	case c.Request().Method == http.MethodHead:
		renderErr = c.NoContent(status)
	case isAPI(c):
		body := api.ErrorBody{Code: code, Field: models.ErrorField(err), Message: msg}
		if problems := models.ErrorProblems(err); len(problems) > 1 {
			// Input checked whole: every field at fault, the first also above.
			body.Problems = make([]api.Problem, len(problems))
			for i, p := range problems {
				body.Problems[i] = api.Problem{Field: p.Field, Message: p.Message}
			}
		}
		renderErr = c.JSON(status, api.ErrorResponse{Error: body})
	case isHTMX(c):
		renderErr = s.render(c, status, web.ErrorFragment(msg))
	default:
		renderErr = s.render(c, status, web.ErrorPage(s.page(c, web.ErrorTitle(status)), status, msg))
	}
	if renderErr != nil {
		s.requestLogger(c).Error("render error page", "error", renderErr.Error())
	}
}
