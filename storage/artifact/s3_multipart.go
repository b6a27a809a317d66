package artifact

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

var _ Multipart = (*S3)(nil)

// BeginMultipart starts an S3 multipart upload; see Multipart.
func (s *S3) BeginMultipart(ctx context.Context, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	id, err := s.core().NewMultipartUpload(ctx, s.bucket, s.prefix+key, minio.PutObjectOptions{ContentType: orDefaultContentType("")})
	if err != nil {
		return "", fmt.Errorf("artifact: begin upload of %q: %w", key, mapS3Error(err))
	}
	return id, nil
}

// PutPart uploads part n; the returned digest is computed here and checked
// against the part's ETag, so a part S3 stored differently is an error.
func (s *S3) PutPart(ctx context.Context, key, uploadID string, n int, r io.Reader, size int64) (Part, error) {
	if err := ValidateKey(key); err != nil {
		return Part{}, err
	}
	if err := checkPart(n, size); err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, err)
	}
	sum := md5.New()
	counted := &countingReader{r: io.TeeReader(io.LimitReader(r, size), sum)}
	op, err := s.core().PutObjectPart(ctx, s.bucket, s.prefix+key, uploadID, n, counted, size, minio.PutObjectPartOptions{})
	if err != nil {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: %w", n, key, mapUploadError(err))
	}
	if counted.n < size {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: read %d of %d bytes: %w", n, key, counted.n, size, io.ErrUnexpectedEOF)
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	if etag := strings.Trim(op.ETag, `"`); !strings.EqualFold(etag, digest) {
		return Part{}, fmt.Errorf("artifact: put part %d of %q: the store's ETag %s is not the part's MD5 %s", n, key, etag, digest)
	}
	return Part{Number: n, Size: size, MD5: digest}, nil
}

// ListParts lists the parts S3 holds, following its pagination; see Multipart.
func (s *S3) ListParts(ctx context.Context, key, uploadID string) ([]Part, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	var parts []Part
	marker := 0
	for {
		res, err := s.core().ListObjectParts(ctx, s.bucket, s.prefix+key, uploadID, marker, 1000)
		if err != nil {
			return nil, fmt.Errorf("artifact: list parts of %q: %w", key, mapUploadError(err))
		}
		for _, p := range res.ObjectParts {
			parts = append(parts, Part{Number: p.PartNumber, Size: p.Size, MD5: strings.ToLower(strings.Trim(p.ETag, `"`))})
		}
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			return parts, nil
		}
		marker = res.NextPartNumberMarker
	}
}

// CompleteMultipart joins the parts into key; see Multipart.
func (s *S3) CompleteMultipart(ctx context.Context, key, uploadID string, parts []Part) error {
	stored, err := s.ListParts(ctx, key, uploadID)
	if err != nil {
		return err
	}
	if err := checkComplete(parts, stored); err != nil {
		return fmt.Errorf("artifact: complete upload of %q: %w", key, err)
	}
	complete := make([]minio.CompletePart, len(stored))
	held := make(map[int]Part, len(stored))
	for _, p := range stored {
		held[p.Number] = p
	}
	complete = complete[:0]
	for _, p := range parts {
		complete = append(complete, minio.CompletePart{PartNumber: p.Number, ETag: held[p.Number].MD5})
	}
	_, err = s.core().CompleteMultipartUpload(ctx, s.bucket, s.prefix+key, uploadID, complete, minio.PutObjectOptions{})
	if err != nil {
		return fmt.Errorf("artifact: complete upload of %q: %w", key, mapUploadError(err))
	}
	return nil
}

// AbortMultipart discards the upload; see Multipart.
func (s *S3) AbortMultipart(ctx context.Context, key, uploadID string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	err := s.core().AbortMultipartUpload(ctx, s.bucket, s.prefix+key, uploadID)
	if err != nil {
		if code := minio.ToErrorResponse(err).Code; code == "NoSuchUpload" {
			return nil
		}
		return fmt.Errorf("artifact: abort upload of %q: %w", key, err)
	}
	return nil
}

// PartURL presigns a PUT of part n valid for ttl, with its Content-Length
// among the signed headers: S3 checks the signature against the length the
// request declares, so a body of any other size is refused (403) rather
// than stored for the upload to fail only when it completes. See Multipart.
func (s *S3) PartURL(ctx context.Context, key, uploadID string, n int, size int64, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := checkPart(n, size); err != nil {
		return "", fmt.Errorf("artifact: part url %d of %q: %w", n, key, err)
	}
	if err := checkTTL(ttl); err != nil {
		return "", fmt.Errorf("artifact: part url %d of %q: %w", n, key, err)
	}
	q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {uploadID}}
	length := http.Header{"Content-Length": {strconv.FormatInt(size, 10)}}
	u, err := s.client.PresignHeader(ctx, http.MethodPut, s.bucket, s.prefix+key, ttl, q, length)
	if err != nil {
		return "", fmt.Errorf("artifact: part url %d of %q: %w", n, key, err)
	}
	return u.String(), nil
}

func (s *S3) core() *minio.Core { return &minio.Core{Client: s.client} }

// mapUploadError turns an unknown upload into ErrNotFound.
func mapUploadError(err error) error {
	if code := minio.ToErrorResponse(err).Code; code == "NoSuchUpload" {
		return fmt.Errorf("%w (%s)", ErrNotFound, code)
	}
	return mapS3Error(err)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
