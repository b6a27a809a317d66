package handlers

import (
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"proctor/models"
)

// pathParam returns a path parameter decoded. Echo routes on the raw path when
// the URL holds escapes such as %2F (then parameters arrive still escaped) and on
// the decoded path otherwise; this way task ids with any character round-trip.
func pathParam(c echo.Context, name string) string {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// int64Param reads a path parameter holding a row id; ENOTFOUND when it is not a
// positive integer, since no such thing can exist.
func int64Param(c echo.Context, name string) (int64, error) {
	v := c.Param(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, models.Errorf(models.ENOTFOUND, "Nothing is found at %q: it is not an id.", v)
	}
	return id, nil
}
