// Package static embeds Proctor's CSS, JavaScript and the front-end packages
// that `make deps` copies into vendor/ (absent files simply are not linked).
package static

import (
	"embed"
	"io/fs"
)

//go:embed all:css all:js all:vendor
var files embed.FS

// Files returns the embedded static tree.
func Files() fs.FS { return files }
