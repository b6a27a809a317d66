package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/labstack/echo/v4"
)

// conditionalGET answers a GET's 200 with a strong ETag, a hash of the body,
// and with 304 Not Modified and no body when the request's If-None-Match
// names it: a leaderboard or export unchanged since the client's copy is not
// sent again. The tag is the content's own, so it changes with the board
// (a publication, withdrawal, hiding, verification or re-score) and agrees
// across every server process. Other answers pass through unchanged.
func conditionalGET(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodGet {
			return next(c)
		}
		res := c.Response()
		out := res.Writer
		buf := &bufferedWriter{header: out.Header()}
		res.Writer = buf
		err := func() error {
			defer func() { res.Writer = out }()
			return next(c)
		}()
		if !buf.wroteHeader {
			return err // nothing written: the error handler answers
		}
		if err != nil || buf.status != http.StatusOK {
			out.WriteHeader(buf.status)
			_, _ = out.Write(buf.body.Bytes())
			return err
		}
		sum := sha256.Sum256(buf.body.Bytes())
		tag := `"` + hex.EncodeToString(sum[:16]) + `"`
		h := out.Header()
		h.Set("ETag", tag)
		if h.Get("Cache-Control") == "" {
			h.Set("Cache-Control", "no-cache")
		}
		if etagMatches(c.Request().Header.Get("If-None-Match"), tag) {
			h.Del("Content-Length")
			out.WriteHeader(http.StatusNotModified)
			return nil
		}
		out.WriteHeader(http.StatusOK)
		_, werr := out.Write(buf.body.Bytes())
		return werr
	}
}

// bufferedWriter holds a response's status and body until the handler is
// done; its header is the real response's.
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

// Flush does nothing: the body is sent once the handler is done.
func (w *bufferedWriter) Flush() {}
