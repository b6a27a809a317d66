// Package artifact stores run artifacts (screenshots, HARs, bundles) by key,
// behind one Store interface with a local-disk driver and an S3 driver.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Store keeps run artifacts (screenshots, HARs, bundles) by key.
//
// Every method validates its key with ValidateKey first and returns an error
// wrapping ErrInvalidKey, having touched nothing, when it is refused.
type Store interface {
	// Put streams r into key with the given content type ("" means
	// application/octet-stream), replacing any previous artifact. size is
	// the length, or -1 if unknown; with a known size Put reads exactly size
	// bytes, and a reader that ends sooner is an error that stores nothing.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// Get opens key for reading; the caller closes it. ErrNotFound if missing.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Stat describes key. ErrNotFound if missing.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the artifacts whose key starts with prefix, sorted by key.
	// ContentType is left empty in the results (it costs a request per key on
	// S3); use Stat for it.
	List(ctx context.Context, prefix string) ([]Info, error)
	// URL returns a GET URL for key that stops working after ttl. It does not
	// check that key exists.
	URL(ctx context.Context, key string, ttl time.Duration) (string, error)
	// Ping reports whether the store is usable, for /readyz.
	Ping(ctx context.Context) error
	// Multipart uploads large artifacts (submission bundles) in resumable parts.
	Multipart
}

// Deferred is implemented by stores that can write many artifacts and wait
// for the disk once for all of them (the local store: a file system commits
// many files' fsyncs together far faster than one after the other). S3
// needs none: its Put is durable when it returns.
type Deferred interface {
	// PutUnsynced is Put, whose artifact may be lost in a crash until
	// SyncKeys returns for its key.
	PutUnsynced(ctx context.Context, key string, r io.Reader, size int64, contentType string) error
	// SyncKeys makes the artifacts PutUnsynced wrote under keys durable.
	SyncKeys(ctx context.Context, keys []string) error
}

// Info describes a stored artifact.
type Info struct {
	Key         string    // as given to Put, without any driver prefix
	Size        int64     // in bytes
	ContentType string    // as given to Put; empty in List results
	ModTime     time.Time // when the artifact was last written
}

// ErrNotFound means the key holds no artifact; test with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrLowSpace means a local store's file system is below its free-space
// threshold (Ping); test with errors.Is.
var ErrLowSpace = errors.New("artifact store low on space")

// ErrInvalidKey means ValidateKey refused the key; test with errors.Is.
var ErrInvalidKey = errors.New("invalid key")

const (
	// MaxKeyLen is the longest key ValidateKey accepts, in bytes.
	MaxKeyLen = 1024

	// reservedPrefix starts the names the local driver uses for its own files
	// (metadata tree, temporary files). Keys may not use it in any segment, on
	// every driver, so that a key valid on one driver is valid on all.
	reservedPrefix = ".proctor-"

	defaultContentType = "application/octet-stream"
)

// ValidateKey checks that key is a relative, slash-separated path of printable
// UTF-8 with no empty, "." or ".." segment, no backslash, no NUL, no segment
// starting with ".proctor-" (reserved), and at most MaxKeyLen bytes. It
// returns an error wrapping ErrInvalidKey and naming the key otherwise.
func ValidateKey(key string) error {
	if reason := keyProblem(key); reason != "" {
		return fmt.Errorf("artifact: %w %q: %s", ErrInvalidKey, shorten(key), reason)
	}
	return nil
}

func keyProblem(key string) string {
	switch {
	case key == "":
		return "empty"
	case len(key) > MaxKeyLen:
		return fmt.Sprintf("longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		return "not valid UTF-8"
	case strings.HasPrefix(key, "/"):
		return "leading slash"
	case strings.ContainsRune(key, '\\'):
		return "backslash"
	}
	for _, r := range key {
		if !unicode.IsPrint(r) {
			return fmt.Sprintf("unprintable character %U", r)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return "empty segment"
		case seg == "." || seg == "..":
			return fmt.Sprintf("%q segment", seg)
		case strings.HasPrefix(seg, reservedPrefix):
			return fmt.Sprintf("segment starts with reserved %q", reservedPrefix)
		}
	}
	return ""
}

// validatePrefix accepts "" (everything) or a prefix that is a valid key once
// one trailing slash is removed, e.g. "runs/12/" or "runs/12/step-".
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if reason := keyProblem(strings.TrimSuffix(prefix, "/")); reason != "" {
		return fmt.Errorf("artifact: %w prefix %q: %s", ErrInvalidKey, shorten(prefix), reason)
	}
	return nil
}

// shorten keeps error messages readable when a caller passes a huge key.
func shorten(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

// impliedContentType is the content type Proctor stores keys with key's
// extension under, or the default for other keys. The local store keeps no
// metadata file for an artifact whose content type is the one its key
// implies.
func impliedContentType(key string) string {
	switch path.Ext(key) {
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".png":
		return "image/png"
	case ".json", ".har":
		return "application/json"
	case ".txt":
		return "text/plain; charset=utf-8"
	}
	return defaultContentType
}

func orDefaultContentType(ct string) string {
	if ct == "" {
		return defaultContentType
	}
	return ct
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("ttl %s is not positive", ttl)
	}
	return nil
}

// DeletePrefix removes every artifact of store whose key starts with prefix.
func DeletePrefix(ctx context.Context, store Store, prefix string) error {
	infos, err := store.List(ctx, prefix)
	if err != nil {
		return err
	}
	var errs []error
	for _, info := range infos {
		if err := store.Delete(ctx, info.Key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
