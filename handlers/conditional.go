package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"proctor/models"
	"proctor/web"
)

// A board (a leaderboard page, its table for htmx, its JSON and CSV exports
// and the API's JSON) is rendered once per version of the board
// (models.BoardVersion, which every change the board shows moves, in the
// database, so every server process agrees on it) and kept in the server's
// boardCache. A request costs the version's one small query; an answer
// carries a strong ETag derived from the version and the request's variant,
// Cache-Control: no-cache, and is a 304 Not Modified with no body when the
// request's If-None-Match names it. The version is read before the board:
// a board rendered after reading version v shows v or newer, and once
// anything changes the version moves on, so a kept board is never older
// than its key.
//
// What is kept holds nothing of the visitor's own. The exports and the
// table have no layout; a page is the layout (the visitor's name and links,
// the CSRF token in its meta tag and the log-out form, the flash notice)
// around the board's content, so only the content (web.LeaderboardBody) is
// kept, and the layout is rendered for each request around it: a few
// kilobytes, against the board's hundreds. A page's tag covers the layout
// rendered for the visitor as well, so a visitor who signs in or out is
// never told that their copy with the other layout is current. The caller's
// scope (an administrator's reads include unpublished benchmarks) is part of
// the version's key, so a board rendered for an administrator is never
// served to anyone else; the request's base URL (the exports' links are
// absolute) and every parameter that changes the output are part of the
// variant.

// boardVariant is what, beside the board's version, makes one rendering of
// a board differ from another: the route, the benchmark, the subset, the
// query as the board reads it, htmx's table, echo's pretty JSON, and the
// base of the exports' absolute links. ok is false for a query the board
// refuses: its refusal is not kept.
func (s *Server) boardVariant(c echo.Context, subset string, fragment bool) (string, bool) {
	q, err := models.ParseLeaderboardQuery(c.QueryParams())
	if err != nil {
		return "", false
	}
	base := s.opts.BaseURL
	if base == "" {
		base = c.Scheme() + "://" + c.Request().Host
	}
	_, pretty := c.QueryParams()["pretty"]
	return strings.Join([]string{c.Path(), pathParam(c, "slug"), subset, q.Values().Encode(),
		strconv.FormatBool(fragment), strconv.FormatBool(pretty), base}, "\x00"), true
}

// boardTag is the strong entity tag of a board's variant at a version, and
// of the layout around it for a page.
func boardTag(variant, version string, frame ...[]byte) string {
	h := sha256.New()
	_, _ = io.WriteString(h, variant+"\x00"+version)
	for _, part := range frame {
		_, _ = h.Write([]byte{0})
		_, _ = h.Write(part)
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// notModified sets the tag and the caching rule and answers 304 when the
// request's If-None-Match names the tag.
func notModified(c echo.Context, tag string, html bool) bool {
	h := c.Response().Header()
	h.Set("ETag", tag)
	h.Set("Cache-Control", "no-cache")
	if html {
		h.Set("Vary", "HX-Request")
	}
	return etagMatches(c.Request().Header.Get("If-None-Match"), tag)
}

// untag takes back the tag when the request is answered without the kept
// boards (a refusal is not tagged).
func untag(c echo.Context) {
	h := c.Response().Header()
	h.Del("ETag")
	h.Del("Cache-Control")
	h.Del("Vary")
}

// serveBoard answers a board's export, its table for htmx or the API's
// JSON from the kept boards, rendering it with answer (which writes the
// answer to the response) when none is kept at the board's version. A
// refusal (an unknown benchmark or subset, a bad query, a benchmark the
// caller may not see) is answer's own, untagged and not kept.
func (s *Server) serveBoard(c echo.Context, subset string, html bool, answer func() error) error {
	variant, ok := s.boardVariant(c, subset, html)
	if !ok {
		return answer()
	}
	ver, err := s.deps.Benchmarks.BoardVersion(c.Request().Context(), pathParam(c, "slug"))
	if err != nil {
		return answer()
	}
	version := ver.Key()
	tag := boardTag(variant, version)
	if notModified(c, tag, html) {
		return c.NoContent(http.StatusNotModified)
	}
	a, err := s.boards.get(c.Request().Context(), variant, ver, func() (*boardAnswer, error) { return captureAnswer(c, answer) })
	if err != nil {
		untag(c)
		return answer()
	}
	h := c.Response().Header()
	for k, v := range a.header {
		h[k] = slices.Clone(v)
	}
	return writeBoard(c, a.body)
}

// serveBoardPage answers a board's page: the kept content (rendered once
// per version of the board) in the layout rendered for this visitor.
func (s *Server) serveBoardPage(c echo.Context, subset string) error {
	uncached := func() error { return s.answerLeaderboard(c, subset, boardHTML) }
	variant, ok := s.boardVariant(c, subset, false)
	if !ok {
		return uncached()
	}
	ctx := c.Request().Context()
	ver, err := s.deps.Benchmarks.BoardVersion(ctx, pathParam(c, "slug"))
	if err != nil {
		return uncached()
	}
	before, after, err := s.pageFrame(ctx, s.page(c, boardTitle(ver.BenchmarkName, subset)))
	if err != nil {
		return err
	}
	version := ver.Key()
	tag := boardTag(variant, version, before, after)
	if notModified(c, tag, true) {
		return c.NoContent(http.StatusNotModified)
	}
	a, err := s.boards.get(ctx, variant, ver, func() (*boardAnswer, error) {
		lb, err := s.leaderboard(c, subset)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := web.LeaderboardBody(web.LeaderboardView{Board: lb}).Render(ctx, &buf); err != nil {
			return nil, err
		}
		return &boardAnswer{body: bytes.Clone(buf.Bytes())}, nil // no spare capacity kept
	})
	if err != nil {
		untag(c)
		return uncached()
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	return writeBoard(c, before, a.body, after)
}

// frameMark stands for a page's content while its layout is rendered alone.
const frameMark = "\x00proctor-board-content\x00"

// pageFrame renders the layout of page p around no content: what comes
// before the content and what comes after it.
func (s *Server) pageFrame(ctx context.Context, p web.Page) (before, after []byte, err error) {
	var buf bytes.Buffer
	mark := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, frameMark)
		return err
	})
	if err := web.Framed(p, mark).Render(ctx, &buf); err != nil {
		return nil, nil, err
	}
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(frameMark))
	if !ok {
		return nil, nil, errors.New("board page: the layout left out its content")
	}
	return before, after, nil
}

// writeBoard answers 200 with the parts of a body.
func writeBoard(c echo.Context, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentLength, strconv.Itoa(n))
	res.WriteHeader(http.StatusOK)
	for _, p := range parts {
		if _, err := res.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// captureAnswer runs answer with the response held aside and returns what
// it wrote: its headers and body when it answered 200, an error otherwise
// (nothing is kept). The response is left as it was, to be written.
func captureAnswer(c echo.Context, answer func() error) (*boardAnswer, error) {
	res := c.Response()
	out, committed, status, size := res.Writer, res.Committed, res.Status, res.Size
	buf := &bufferedWriter{header: http.Header{}}
	res.Writer = buf
	err := answer()
	res.Writer, res.Committed, res.Status, res.Size = out, committed, status, size
	if err != nil {
		return nil, err
	}
	if !buf.wroteHeader || buf.status != http.StatusOK {
		return nil, errors.New("board not kept: the rendering answered other than 200")
	}
	header := maps.Clone(buf.header)
	header.Del(echo.HeaderContentLength)
	return &boardAnswer{header: header, body: bytes.Clone(buf.body.Bytes())}, nil
}

// bufferedWriter holds a response's status, headers and body.
type bufferedWriter struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.header }

func (w *bufferedWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
}

func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush does nothing: the body is held until the handler is done.
func (w *bufferedWriter) Flush() {}
