package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"proctor/api"
	"proctor/models"
)

// apiRoutes registers /api/v1. Every API route answers JSON, errors included:
// {"error":{"code","message"}}.
func (s *Server) apiRoutes(g *echo.Group) {
	g.GET("", s.apiIndex)
	s.apiAccountRoutes(g)
	s.apiTeamRoutes(g)
	s.apiAgentRoutes(g)
	s.apiBenchmarkRoutes(g)
	s.apiRunRoutes(g)
	s.apiEpisodeRoutes(g)
	s.apiSubmissionRoutes(g)
	s.apiStudyRoutes(g)
	s.apiCandidateRoutes(g)
	s.apiHiddenResultRoutes(g)
}

func (s *Server) apiIndex(c echo.Context) error {
	return c.JSON(http.StatusOK, api.IndexInfo{Name: "proctor", Version: apiVersion, Docs: apiDocsPath, OpenAPI: openAPIPath})
}

// maxJSONBody caps API request bodies that are decoded as JSON.
const maxJSONBody = 1 << 20

// bindJSON decodes a JSON request body strictly: unknown fields, trailing data
// and oversized bodies are EINVALID or ETOOLARGE with a message saying where.
func bindJSON(c echo.Context, v any) error {
	body := http.MaxBytesReader(c.Response(), c.Request().Body, maxJSONBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		var syntax *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooLarge):
			return models.Errorf(models.ETOOLARGE, "The JSON body is larger than %d bytes.", maxJSONBody)
		case errors.Is(err, io.EOF):
			return models.Errorf(models.EINVALID, "The request body must be a JSON object.")
		case errors.As(err, &syntax):
			return models.Errorf(models.EINVALID, "The JSON body is malformed at byte %d.", syntax.Offset)
		case errors.As(err, &typeErr):
			field := bodyField(reflect.TypeOf(v), typeErr.Field)
			return &models.Error{Code: models.EINVALID, Field: field, Message: fmt.Sprintf("field %q must be %s", field, typeErr.Type)}
		}
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &models.Error{Code: models.EINVALID, Field: strings.Trim(field, `"`), Message: "unknown field " + field}
		}
		return models.Errorf(models.EINVALID, "The JSON body is invalid: %s.", err.Error())
	}
	if dec.More() {
		return models.Errorf(models.EINVALID, "The request body must hold exactly one JSON object.")
	}
	return nil
}

// bodyField is a decoding error's field path as the body has it:
// encoding/json also names the embedded structs a field is promoted from
// (RunBudgets.max_steps for max_steps), which the JSON does not show.
func bodyField(t reflect.Type, path string) string {
	embedded := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && name == "" {
				embedded[f.Name] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	var kept []string
	for _, seg := range strings.Split(path, ".") {
		if !embedded[seg] {
			kept = append(kept, seg)
		}
	}
	return strings.Join(kept, ".")
}

// Page bounds for listings; maxPage keeps offsets far from overflow.
const (
	defaultPerPage = 50
	maxPerPage     = 200
	maxPage        = 1_000_000
)

// pageParams reads ?page= (from 1) and ?per_page= with bounds; EINVALID otherwise.
func pageParams(c echo.Context) (page, perPage int, err error) {
	page, perPage = 1, defaultPerPage
	if v := c.QueryParam("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 || page > maxPage {
			return 0, 0, &models.Error{Code: models.EINVALID, Field: "page", Message: fmt.Sprintf("page must be an integer from 1 to %d", maxPage)}
		}
	}
	if v := c.QueryParam("per_page"); v != "" {
		if perPage, err = strconv.Atoi(v); err != nil || perPage < 1 || perPage > maxPerPage {
			return 0, 0, &models.Error{Code: models.EINVALID, Field: "per_page", Message: fmt.Sprintf("per_page must be between 1 and %d", maxPerPage)}
		}
	}
	return page, perPage, nil
}
