package episode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"proctor/storage/artifact"
)

// maxHARTextBody is the largest response body kept in the stored HAR; bigger
// ones are dropped with a comment (evaluators read requests, post data and
// statuses, not large bodies).
const maxHARTextBody = 1 << 20

// storeHAR uploads the HAR Playwright wrote at path to key, with binary and
// oversized response bodies dropped: Playwright embeds every body, images and
// fonts included, which would make the file many times larger for nothing the
// evaluators read.
func storeHAR(ctx context.Context, store artifact.Store, key, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read HAR: %w", err)
	}
	if slim, err := slimHAR(raw); err == nil {
		raw = slim
	}
	if err := store.Put(ctx, key, bytes.NewReader(raw), int64(len(raw)), "application/json"); err != nil {
		return fmt.Errorf("store HAR: %w", err)
	}
	return nil
}

// slimHAR removes binary and oversized response bodies from a HAR document.
// Everything else (requests with their post data, statuses, headers, timings)
// is kept as Playwright wrote it.
func slimHAR(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	log, _ := doc["log"].(map[string]any)
	entries, _ := log["entries"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		resp, _ := entry["response"].(map[string]any)
		content, _ := resp["content"].(map[string]any)
		text, ok := content["text"].(string)
		if !ok {
			continue
		}
		mimeType, _ := content["mimeType"].(string)
		encoding, _ := content["encoding"].(string)
		switch {
		case !textualMIME(mimeType) && !(mimeType == "" && encoding == ""):
			delete(content, "text")
			delete(content, "encoding")
			content["comment"] = "binary body omitted by Proctor"
		case len(text) > maxHARTextBody:
			delete(content, "text")
			delete(content, "encoding")
			content["comment"] = fmt.Sprintf("body of %d bytes omitted by Proctor (limit %d)", len(text), maxHARTextBody)
		}
	}
	return json.Marshal(doc)
}

// textualMIME reports whether a body of this type is text worth keeping.
func textualMIME(m string) bool {
	m = strings.ToLower(strings.TrimSpace(strings.SplitN(m, ";", 2)[0]))
	switch {
	case strings.HasPrefix(m, "text/"), strings.HasSuffix(m, "+json"), strings.HasSuffix(m, "+xml"):
		return true
	}
	switch m {
	case "application/json", "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/xml", "application/x-www-form-urlencoded", "application/graphql", "application/ld+json":
		return true
	}
	return false
}
