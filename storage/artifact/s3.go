package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// unknownSizePartSize bounds the memory of a Put of unknown size: minio-go
// buffers one part at a time, and its default for unknown sizes is ~576 MiB.
// 16 MiB parts allow objects up to ~156 GiB (10,000 parts).
const unknownSizePartSize = 16 << 20

// S3Config says where the S3 driver keeps artifacts.
type S3Config struct {
	Endpoint  string // host:port, no scheme
	AccessKey string // access key ID
	SecretKey string // secret access key
	Region    string // "" lets minio-go ask the server
	UseSSL    bool   // https instead of http
	Bucket    string // must exist before use; see EnsureBucket
	Prefix    string // optional key prefix inside the bucket, e.g. "proctor/"
}

// S3 is a Store in an S3-compatible bucket, using path-style requests.
type S3 struct {
	client *minio.Client
	bucket string
	region string
	prefix string // "" or ending in "/"
}

var _ Store = (*S3)(nil)

// NewS3 returns an S3 store for cfg; it makes no request (see Ping and EnsureBucket).
func NewS3(_ context.Context, cfg S3Config) (*S3, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("artifact: s3: empty endpoint")
	}
	if cfg.Bucket == "" {
		return nil, errors.New("artifact: s3: empty bucket")
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("artifact: s3: prefix: %w", err)
		}
		prefix += "/"
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       cfg.UseSSL,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("artifact: s3 %q: %w", cfg.Endpoint, err)
	}
	return &S3{client: client, bucket: cfg.Bucket, region: cfg.Region, prefix: prefix}, nil
}

// Put uploads r to key, in 16 MiB parts when size is unknown; see Store.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if size < -1 {
		return fmt.Errorf("artifact: put %q: negative size %d", key, size)
	}
	opts := minio.PutObjectOptions{ContentType: orDefaultContentType(contentType)}
	if size < 0 {
		opts.PartSize = unknownSizePartSize
	}
	if _, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, size, opts); err != nil {
		return fmt.Errorf("artifact: put %q: %w", key, mapS3Error(err))
	}
	return nil
}

// Get opens key for streaming; see Store.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Info{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, fmt.Errorf("artifact: get %q: %w", key, mapS3Error(err))
	}
	// GetObject is lazy; Stat makes the request so a missing key fails here.
	oi, err := obj.Stat()
	if err != nil {
		_ = obj.Close()
		return nil, Info{}, fmt.Errorf("artifact: get %q: %w", key, mapS3Error(err))
	}
	return obj, s.info(oi), nil
}

// Stat describes key with a HEAD request; see Store.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, fmt.Errorf("artifact: stat %q: %w", key, mapS3Error(err))
	}
	return s.info(oi), nil
}

// Delete removes key; see Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(mapS3Error(err), ErrNotFound) {
		return fmt.Errorf("artifact: delete %q: %w", key, mapS3Error(err))
	}
	return nil
}

// List lists the bucket recursively under prefix; see Store.
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops minio-go's listing goroutine if we return early
	var out []Info
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{
		Prefix:    s.prefix + prefix,
		Recursive: true,
	}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("artifact: list %q: %w", prefix, mapS3Error(oi.Err))
		}
		info := s.info(oi)
		if ValidateKey(info.Key) != nil {
			continue // directory markers and objects this package cannot name
		}
		info.ContentType = "" // not in listings; see Store.List
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// URL returns a presigned GET URL valid for ttl (at most 7 days); see Store.
func (s *S3) URL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", fmt.Errorf("artifact: url %q: %w", key, err)
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, s.prefix+key, ttl, nil)
	if err != nil {
		return "", fmt.Errorf("artifact: url %q: %w", key, mapS3Error(err))
	}
	return u.String(), nil
}

// Ping checks that the bucket exists and the credentials work; see Store.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("artifact: ping bucket %q: %w", s.bucket, mapS3Error(err))
	}
	if !ok {
		return fmt.Errorf("artifact: ping: bucket %q does not exist", s.bucket)
	}
	return nil
}

// EnsureBucket creates the bucket if it does not exist yet.
func (s *S3) EnsureBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("artifact: ensure bucket %q: %w", s.bucket, mapS3Error(err))
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s.region})
	if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		return fmt.Errorf("artifact: create bucket %q: %w", s.bucket, err)
	}
	return nil
}

func (s *S3) info(oi minio.ObjectInfo) Info {
	return Info{
		Key:         strings.TrimPrefix(oi.Key, s.prefix),
		Size:        oi.Size,
		ContentType: oi.ContentType,
		ModTime:     oi.LastModified,
	}
}

// mapS3Error turns a missing-object response into ErrNotFound, keeping the
// original text. A missing bucket is a configuration error, not ErrNotFound.
func mapS3Error(err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && (resp.Code == minio.NoSuchKey || resp.Code == "NotFound") {
		return fmt.Errorf("%w (%s)", ErrNotFound, resp.Code)
	}
	return err
}
