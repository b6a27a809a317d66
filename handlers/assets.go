package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// assets serves embedded static files with content-hashed, cache-busting URLs.
type assets struct {
	fsys    fs.FS
	version map[string]string
}

func newAssets(fsys fs.FS) (*assets, error) {
	a := &assets{fsys: fsys, version: map[string]string{}}
	if fsys == nil {
		return a, nil
	}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a.version[path] = hex.EncodeToString(sum[:6])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index static files: %w", err)
	}
	return a, nil
}

// url returns the versioned URL of a static file.
func (a *assets) url(name string) string {
	return "/static/" + name + "?v=" + a.version[name]
}

// has reports whether a static file is present (vendored front-end packages are
// optional: pages work without them).
func (a *assets) has(name string) bool { _, ok := a.version[name]; return ok }

// serve answers /static/* with long-lived caching for versioned URLs.
func (a *assets) serve(c echo.Context) error {
	name := c.Param("*")
	if _, ok := a.version[name]; !ok {
		return echo.ErrNotFound
	}
	if c.QueryParam("v") == a.version[name] {
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		c.Response().Header().Set("Cache-Control", "no-cache")
	}
	http.ServeFileFS(c.Response(), c.Request(), a.fsys, name)
	return nil
}
