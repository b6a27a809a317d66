package artifact

import (
	"context"
	"errors"
	"io"
	"time"
)

// Multipart uploads one large artifact in numbered parts that may arrive in
// any order, be re-sent, and survive a restart of the client: the submission
// portal's resumable uploads. Parts are invisible under their key until
// CompleteMultipart joins them.
type Multipart interface {
	// BeginMultipart starts an upload to key and returns its id.
	BeginMultipart(ctx context.Context, key string) (uploadID string, err error)
	// PutPart stores part n (1 to MaxParts) of size bytes from r, replacing a
	// part of the same number; a reader that ends sooner stores nothing.
	PutPart(ctx context.Context, key, uploadID string, n int, r io.Reader, size int64) (Part, error)
	// ListParts returns the parts received so far, by number. ErrNotFound
	// when the upload does not exist (completed, aborted or never begun).
	ListParts(ctx context.Context, key, uploadID string) ([]Part, error)
	// CompleteMultipart joins parts (each must be stored, numbered from 1
	// without gaps) into key and ends the upload.
	CompleteMultipart(ctx context.Context, key, uploadID string, parts []Part) error
	// AbortMultipart discards an upload and its parts; aborting an unknown
	// upload is not an error.
	AbortMultipart(ctx context.Context, key, uploadID string) error
	// PartURL presigns a direct PUT of part n of exactly size bytes, valid
	// for ttl: the store refuses a body of any other length, so the URL
	// cannot stretch an upload past the size it declared. ErrNoDirectUpload
	// when the store cannot take parts directly (the local store).
	PartURL(ctx context.Context, key, uploadID string, n int, size int64, ttl time.Duration) (string, error)
}

// StridedMultipart is a Multipart that can be told, when an upload begins,
// the size of every part but the last. The local store then writes each
// part where it belongs in the finished artifact as it arrives, and
// completing the upload copies nothing (the parts of an upload that did not
// say are joined by copying them).
type StridedMultipart interface {
	// BeginMultipartStrided starts an upload to key as BeginMultipart does;
	// CompleteMultipart refuses it unless every part but the last holds
	// exactly partSize bytes, and the last at most that.
	BeginMultipartStrided(ctx context.Context, key string, partSize int64) (uploadID string, err error)
}

// Part is one stored part of a multipart upload.
type Part struct {
	Number int
	Size   int64
	MD5    string // hex digest of the part's bytes (an S3 part's ETag)
}

// MaxParts is the most parts an upload may have (S3's limit).
const MaxParts = 10_000

// ErrNoDirectUpload means parts must be sent through Proctor's API.
var ErrNoDirectUpload = errors.New("this artifact store takes parts only through the API")
