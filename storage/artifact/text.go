package artifact

import (
	"context"
	"io"
	"unicode/utf8"
)

// Getter opens stored artifacts; every Store is one.
type Getter interface {
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
}

// ReadText reads the start of a text artifact, at most limit bytes, cut at a
// character boundary; truncated says whether there was more. A missing
// artifact is ErrNotFound, as Get says.
func ReadText(ctx context.Context, files Getter, key string, limit int64) (text string, truncated bool, err error) {
	rc, _, err := files.Get(ctx, key)
	if err != nil {
		return "", false, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return "", false, err
	}
	if int64(len(b)) <= limit {
		return string(b), false, nil
	}
	b = b[:limit]
	for len(b) > 0 { // drop a character cut in two at the limit
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return string(b), true, nil
}
