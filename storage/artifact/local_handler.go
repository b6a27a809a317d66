package artifact

import (
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// localHandler serves the signed URLs made by Local.URL.
type localHandler struct {
	store  *Local
	signer URLSigner
}

// NewLocalHandler returns the handler for Local.URL links: GET and HEAD on
// /artifacts/<key>?expires=…&sig=…, mounted under /artifacts/ with the prefix
// left in the request path. It answers 403 for a bad or expired signature,
// 404 for a missing artifact and 405 for other methods.
func NewLocalHandler(store *Local, signer URLSigner) http.Handler {
	return localHandler{store: store, signer: signer}
}

func (h localHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, "/artifacts/")
	if !ok || ValidateKey(key) != nil {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	now := time.Now()
	if err := h.signer.Verify(key, q.Get("expires"), q.Get("sig"), now); err != nil {
		http.Error(w, "forbidden: "+publicReason(err), http.StatusForbidden)
		return
	}
	f, info, err := h.store.open(key)
	if errors.Is(err, ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		// Not ErrNotFound: an I/O error or a symlink escaping the root. The
		// caller's logs see the status; the client sees no path.
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer f.Close()

	hdr := w.Header()
	hdr.Set("Content-Type", info.ContentType)
	hdr.Set("X-Content-Type-Options", "nosniff")
	// Cache no longer than the link lives.
	hdr.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", maxAge(q.Get("expires"), now)))
	// Artifacts are untrusted page captures: never let an HTML or SVG one run
	// script with this site's origin.
	hdr.Set("Content-Security-Policy", "sandbox")
	http.ServeContent(w, r, path.Base(key), info.ModTime, f)
}

// maxAge is the number of whole seconds until expires (already verified).
func maxAge(expires string, now time.Time) int64 {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return 0
	}
	return max(0, exp-now.Unix())
}

// publicReason tells the client why a link was refused, without detail an
// attacker could use.
func publicReason(err error) string {
	if errors.Is(err, ErrURLExpired) {
		return "link expired"
	}
	return "bad link signature"
}
