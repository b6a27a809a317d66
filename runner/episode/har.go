package episode

import (
	"context"
	"fmt"
	"os"

	"proctor/har"
	"proctor/storage/artifact"
)

// maxHARTextBody is the largest response body kept in the stored HAR; bigger
// ones are dropped with a comment (evaluators read requests, post data and
// statuses, not large bodies).
const maxHARTextBody = 1 << 20

// storeHAR uploads the HAR Playwright wrote at path to key, with binary and
// oversized response bodies dropped (har.Slim): Playwright embeds every body,
// images and fonts included, which would make the file many times larger for
// nothing the evaluators read. The slimmed copy is written beside the file,
// entry by entry, so that neither is held in memory; a file that cannot be
// slimmed is uploaded as Playwright wrote it.
func storeHAR(ctx context.Context, store artifact.Store, key, path string) error {
	upload := path
	slim := path + ".slim"
	defer os.Remove(slim)
	if err := slimHAR(slim, path); err == nil {
		upload = slim
	}
	f, err := os.Open(upload)
	if err != nil {
		return fmt.Errorf("read HAR: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read HAR: %w", err)
	}
	if err := store.Put(ctx, key, f, st.Size(), "application/json"); err != nil {
		return fmt.Errorf("store HAR: %w", err)
	}
	return nil
}

// slimHAR writes the slimmed copy of the HAR at path to dst.
func slimHAR(dst, path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if err := har.Slim(out, in, maxHARTextBody); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
