// Package docs embeds Proctor's documentation, which the server also serves
// under /docs/ so that pages can link to it.
package docs

import (
	"embed"
	"io/fs"
)

//go:embed *.md
var files embed.FS

// Files returns the embedded documentation.
func Files() fs.FS { return files }
