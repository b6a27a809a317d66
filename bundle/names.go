package bundle

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cleanName checks an archive entry's name and returns it without "./"
// prefixes, empty or "." components and the folder's trailing slash. It
// refuses what could land outside a folder on any system that unpacked it:
// absolute paths, drive letters, "..", backslashes (a separator on Windows),
// and names that are not UTF-8 or hold control characters. clean is "" for
// the archive's own root ("./").
func cleanName(name string) (clean string, dir bool, reason string) {
	switch {
	case !utf8.ValidString(name):
		return "", false, "name is not valid UTF-8"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "", false, "name holds a control character"
	case strings.Contains(name, `\`):
		return "", false, `backslash in path: a folder separator on Windows`
	case strings.HasPrefix(name, "/"):
		return "", false, "absolute path"
	case len(name) >= 2 && name[1] == ':' && isLetter(name[0]):
		return "", false, "absolute path (drive letter)"
	}
	dir = strings.HasSuffix(name, "/")
	parts := strings.Split(name, "/")
	kept := parts[:0]
	for _, p := range parts {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", false, `path climbs out of the bundle with ".."`
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "/"), dir, ""
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// printableName is an entry name fit for a message: invalid UTF-8 and
// control characters become U+FFFD.
func printableName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, name)
}

// ignoredName reports whether an entry is archiver litter that is counted
// against the limits but never read as part of a bundle: macOS resource
// forks (__MACOSX/, ._name) and Finder's .DS_Store, and the pickles AgentLab
// saves beside its JSON files.
func ignoredName(clean string) bool {
	base := clean[strings.LastIndexByte(clean, '/')+1:]
	if base == ".DS_Store" || strings.HasPrefix(base, "._") ||
		strings.HasSuffix(base, ".pkl") || strings.HasSuffix(base, ".pkl.gz") {
		return true
	}
	return clean == "__MACOSX" || strings.HasPrefix(clean, "__MACOSX/") || strings.Contains(clean, "/__MACOSX/")
}

// humanBytes renders a byte count for messages: "512 MiB", "1.5 GiB", "900 bytes".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[exp]
	if n%div == 0 {
		return fmt.Sprintf("%d %s", n/div, suffix)
	}
	if shown := fmt.Sprintf("%.1f", float64(n)/float64(div)); !strings.HasSuffix(shown, ".0") {
		return shown + " " + suffix
	}
	return fmt.Sprintf("%d bytes", n) // "1.0 MiB" beside a limit of "1 MiB" would say nothing

}
