package service

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	"proctor/models"
	"proctor/storage/artifact"
)

// Uploads go to the artifact store under the submission's own prefix, in
// parts (S3 multipart, or staged parts on the local disk) or streamed whole
// from the upload form; the queue's jobs then validate and ingest them.

// CreateSubmission starts an upload for the context's actor, or resumes the
// caller's unfinished upload of the same bundle (resumed = true, with the
// parts already received). An upload whose parts the store lost starts
// again. The rules and errors are newSubmission's; EUNAVAILABLE when the
// artifact store cannot start the upload.
func (s *Submissions) CreateSubmission(ctx context.Context, req models.SubmissionRequest) (*models.SubmissionView, bool, error) {
	if err := s.available(); err != nil {
		return nil, false, err
	}
	sub, resumed, err := s.newSubmission(ctx, req, false)
	if err != nil {
		return nil, false, err
	}
	if sub.MultipartID != "" {
		_, err := s.files.ListParts(ctx, sub.StorageKey, sub.MultipartID)
		switch {
		case errors.Is(err, artifact.ErrNotFound):
			sub.MultipartID = "" // expired or aborted in the store: begin again
		case err != nil:
			return nil, false, storeUnavailable("read the upload's parts", err)
		}
	}
	if sub.MultipartID == "" {
		// A failure here leaves the submission uploading without an upload;
		// creating it again resumes it and begins one.
		uploadID, err := s.beginUpload(ctx, sub)
		if err != nil {
			return nil, false, storeUnavailable("start the upload", err)
		}
		if err := s.store.SetSubmissionUpload(systemContext(ctx), sub.ID, uploadID); err != nil {
			return nil, false, err
		}
	}
	v, err := s.Submission(ctx, sub.ID)
	if err != nil {
		return nil, false, err
	}
	return v, resumed, nil
}

// Submission is one submission with the parts its unfinished upload holds
// (the store's list: S3's parts with their ETags, or the local staged parts)
// and whether parts may go straight to the store. ENOTFOUND unless the
// caller is a member of its team or an admin; EUNAUTHORIZED when signed out.
func (s *Submissions) Submission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	if err := s.available(); err != nil {
		return nil, err
	}
	v, err := s.view(ctx, id)
	if err != nil {
		return nil, err
	}
	if v.Status != models.SubmissionUploading || v.MultipartID == "" {
		return v, nil
	}
	parts, err := s.files.ListParts(ctx, v.StorageKey, v.MultipartID)
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		return v, nil
	case err != nil:
		return nil, storeUnavailable("list the upload's parts", err)
	}
	for _, p := range parts {
		v.Parts = append(v.Parts, models.SubmissionPart{Number: p.Number, Size: p.Size, MD5: p.MD5})
	}
	_, err = s.files.PartURL(ctx, v.StorageKey, v.MultipartID, 1, v.PartLength(1), partURLTTL)
	v.DirectUpload = err == nil
	return v, nil
}

// uploading loads a submission the caller may upload to: ENOTFOUND for
// others, ECONFLICT once its upload is complete or when it has none.
func (s *Submissions) uploading(ctx context.Context, id int64) (*models.SubmissionView, error) {
	if err := s.available(); err != nil {
		return nil, err
	}
	v, err := s.view(ctx, id)
	if err != nil {
		return nil, err
	}
	if v.Status != models.SubmissionUploading {
		return nil, models.Errorf(models.ECONFLICT, "Submission %d is %s: it takes no more parts.", id, v.Status)
	}
	if v.MultipartID == "" {
		return nil, models.Errorf(models.ECONFLICT, "Submission %d has no upload in progress: create it again to resume.", id)
	}
	return v, nil
}

// checkPartNumber is EINVALID on "part" for a number outside the upload.
func checkPartNumber(v *models.Submission, n int) error {
	if n < 1 || n > v.PartsTotal() {
		return models.FieldError("part", "part %d is outside this upload's parts 1 to %d", n, v.PartsTotal())
	}
	return nil
}

// PutSubmissionPart stores part n (from 1) of an upload, replacing an
// earlier copy: size must be exactly the part's length (PartLength), and
// md5 (the raw 16-byte Content-MD5, nil when the client sent none) must
// match the bytes, or nothing is stored. Members of the team and admins
// only (ENOTFOUND for others). EINVALID on "part", "size" or "content_md5",
// ETOOLARGE for a part longer than its length, ECONFLICT once the upload is
// complete.
func (s *Submissions) PutSubmissionPart(ctx context.Context, id int64, n int, body io.Reader, size int64, md5 []byte) (*models.SubmissionPart, error) {
	v, err := s.uploading(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := checkPartNumber(&v.Submission, n); err != nil {
		return nil, err
	}
	want := v.PartLength(n)
	switch {
	case size > want:
		return nil, &models.Error{Code: models.ETOOLARGE, Field: "size",
			Message: fmt.Sprintf("part %d must be %d bytes, not %d", n, want, size)}
	case size != want:
		return nil, models.FieldError("size", "part %d must be %d bytes, not %d", n, want, size)
	case md5 != nil && len(md5) != 16:
		return nil, models.FieldError("content_md5", "Content-MD5 must be the base64 of a 16-byte MD5 digest")
	}
	src := newDigestReader(body, size, md5)
	part, err := s.files.PutPart(ctx, v.StorageKey, v.MultipartID, n, src, size)
	switch {
	case errors.Is(err, errPartDigest):
		return nil, models.FieldError("content_md5", "part %d's bytes have MD5 %s, not the Content-MD5 sent: it was corrupted on the way; send it again", n, src.sum())
	case src.short || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, models.FieldError("size", "part %d ended before its %d bytes: send it again", n, size)
	case errors.Is(err, artifact.ErrNotFound):
		return nil, models.Errorf(models.ECONFLICT, "Submission %d has no upload in progress: create it again to resume.", id)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, storeUnavailable(fmt.Sprintf("store part %d", n), err)
	}
	out := &models.SubmissionPart{Number: part.Number, Size: part.Size, MD5: part.MD5}
	if err := s.store.RecordSubmissionPart(ctx, id, *out); err != nil {
		return nil, err
	}
	return out, nil
}

// SubmissionPartURL presigns a direct upload (PUT) of part n to S3, valid
// for an hour and for a body of exactly the part's length (PartLength): S3
// refuses any other size. ECONFLICT with the local artifact store, whose
// parts go through the API; access and state errors as PutSubmissionPart.
func (s *Submissions) SubmissionPartURL(ctx context.Context, id int64, n int) (string, time.Time, error) {
	v, err := s.uploading(ctx, id)
	if err != nil {
		return "", time.Time{}, err
	}
	if err := checkPartNumber(&v.Submission, n); err != nil {
		return "", time.Time{}, err
	}
	expires := time.Now().Add(partURLTTL).UTC()
	u, err := s.files.PartURL(ctx, v.StorageKey, v.MultipartID, n, v.PartLength(n), partURLTTL)
	switch {
	case errors.Is(err, artifact.ErrNoDirectUpload):
		return "", time.Time{}, models.Errorf(models.ECONFLICT,
			"This server keeps uploads on its own disk: PUT part %d to /api/v1/submissions/%d/parts/%d instead.", n, id, n)
	case err != nil:
		return "", time.Time{}, storeUnavailable("sign the part's upload", err)
	}
	return u, expires, nil
}

// beginUpload starts the bundle's multipart upload; a store that can place
// parts as they arrive (the local one) is told their size, so completing
// the upload copies nothing.
func (s *Submissions) beginUpload(ctx context.Context, sub *models.Submission) (string, error) {
	if strided, ok := s.files.(artifact.StridedMultipart); ok {
		return strided.BeginMultipartStrided(ctx, sub.StorageKey, sub.PartSize)
	}
	return s.files.BeginMultipart(ctx, sub.StorageKey)
}

// CompleteSubmission assembles the parts into the bundle and queues its
// validation. Every part must be present with its length: ECONFLICT naming
// the missing and short parts otherwise. Completing a submission that is
// already complete returns it as it is (a client retrying after a lost
// answer). Members of the team and admins only (ENOTFOUND for others).
func (s *Submissions) CompleteSubmission(ctx context.Context, id int64) (*models.SubmissionView, error) {
	if err := s.available(); err != nil {
		return nil, err
	}
	v, err := s.view(ctx, id)
	if err != nil {
		return nil, err
	}
	switch v.Status {
	case models.SubmissionUploading:
	case models.SubmissionRefused, models.SubmissionDiscarded, models.SubmissionFailed:
		return nil, models.Errorf(models.ECONFLICT, "Submission %d is %s: there is nothing to complete.", id, v.Status)
	default:
		return v, nil
	}
	if v.MultipartID == "" {
		return nil, models.Errorf(models.ECONFLICT, "Submission %d has no upload in progress: create it again to resume.", id)
	}
	parts, err := s.files.ListParts(ctx, v.StorageKey, v.MultipartID)
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		// Joined by an earlier call whose answer was lost, or lost by the store.
		info, serr := s.files.Stat(ctx, v.StorageKey)
		if serr != nil || info.Size != v.Size {
			return nil, models.Errorf(models.ECONFLICT, "The parts of submission %d are no longer in storage: create it again and send every part.", id)
		}
	case err != nil:
		return nil, storeUnavailable("list the upload's parts", err)
	default:
		joined, err := checkParts(&v.Submission, parts)
		if err != nil {
			return nil, err
		}
		if err := s.files.CompleteMultipart(ctx, v.StorageKey, v.MultipartID, joined); err != nil {
			return nil, storeUnavailable("join the parts", err)
		}
	}
	if err := s.store.CompleteSubmissionUpload(ctx, id, v.Size, s.jobs.ValidateSubmission); err != nil {
		return nil, err
	}
	return s.view(ctx, id)
}

// checkParts returns parts 1 to PartsTotal as the store holds them, or
// ECONFLICT naming each part missing or of the wrong length.
func checkParts(s *models.Submission, held []artifact.Part) ([]artifact.Part, error) {
	byNumber := make(map[int]artifact.Part, len(held))
	for _, p := range held {
		byNumber[p.Number] = p
	}
	var missing []string
	var wrong []string
	joined := make([]artifact.Part, 0, s.PartsTotal())
	for n := 1; n <= s.PartsTotal(); n++ {
		p, ok := byNumber[n]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprint(n))
		case p.Size != s.PartLength(n):
			wrong = append(wrong, fmt.Sprintf("part %d has %d bytes instead of %d", n, p.Size, s.PartLength(n)))
		}
		joined = append(joined, p)
	}
	if len(missing) == 0 && len(wrong) == 0 {
		return joined, nil
	}
	var problems []string
	switch {
	case len(missing) == 1:
		problems = append(problems, "part "+missing[0]+" is missing")
	case len(missing) > 1:
		problems = append(problems, fmt.Sprintf("%d parts are missing (%s)", len(missing), listShort(missing, 20)))
	}
	problems = append(problems, wrong...)
	return nil, models.Errorf(models.ECONFLICT, "The upload of submission %d is not complete: %s. Send them, then complete it again.",
		s.ID, strings.Join(problems, "; "))
}

// listShort joins items, eliding all but the first n.
func listShort(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// errStreamTooLarge ends a streamed upload that passed the size limit.
var errStreamTooLarge = errors.New("the bundle is over the size limit")

// cappedReader fails once more than left bytes have been read.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errStreamTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, errStreamTooLarge
	}
	return n, err
}

// UploadSubmission stores a whole bundle streamed in one request (the upload
// form without JavaScript) straight into the store, then queues its
// validation. req.Size may be 0 when the form does not know it. A bundle
// over the size limit is refused (ETOOLARGE) and an interrupted one discarded,
// with nothing kept; one discarded while it streamed in is deleted once it
// has arrived (ECONFLICT). Errors of creation as CreateSubmission.
func (s *Submissions) UploadSubmission(ctx context.Context, req models.SubmissionRequest, body io.Reader) (*models.SubmissionView, error) {
	if err := s.available(); err != nil {
		return nil, err
	}
	sub, _, err := s.newSubmission(ctx, req, true)
	if err != nil {
		return nil, err
	}
	log := s.opts.Logger
	limit := s.opts.Limits.MaxBundleBytes
	if err := s.files.Put(ctx, sub.StorageKey, &cappedReader{r: body, left: limit}, -1, "application/octet-stream"); err != nil {
		sys := systemContext(context.WithoutCancel(ctx))
		if derr := DeleteSubmissionBytes(sys, s.files, sub); derr != nil {
			log.Warn("delete an interrupted upload", "submission_id", sub.ID, "error", derr.Error())
		}
		if errors.Is(err, errStreamTooLarge) {
			msg := fmt.Sprintf("The bundle is larger than %d bytes, the largest this server accepts.", limit)
			if rerr := s.store.RefuseSubmission(sys, sub.ID, msg); rerr != nil {
				log.Warn("refuse an oversized upload", "submission_id", sub.ID, "error", rerr.Error())
			}
			return nil, &models.Error{Code: models.ETOOLARGE, Field: "file", Message: msg}
		}
		if _, derr := s.store.DiscardSubmission(context.WithoutCancel(ctx), sub.ID); derr != nil {
			log.Warn("discard an interrupted upload", "submission_id", sub.ID, "error", derr.Error())
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, models.Errorf(models.EINVALID, "The upload was interrupted before the whole bundle arrived; send it again.")
	}
	// The whole bundle arrived: its validation is queued even if the client
	// leaves now.
	ctx = context.WithoutCancel(ctx)
	info, err := s.files.Stat(ctx, sub.StorageKey)
	if err != nil {
		s.dropStreamed(ctx, sub)
		return nil, storeUnavailable("read the stored bundle", err)
	}
	size := int64(0)
	if sub.Size <= 0 {
		size = info.Size
	}
	if err := s.store.CompleteSubmissionUpload(ctx, sub.ID, size, s.jobs.ValidateSubmission); err != nil {
		s.dropStreamed(ctx, sub)
		return nil, err
	}
	return s.view(ctx, sub.ID)
}

// dropStreamed deletes a streamed bundle that arrived but could not be
// completed, and discards its submission if it is still uploading. Most
// often it was discarded while the bundle streamed in: the discard found
// nothing to delete then, and nothing else would delete the bundle now.
func (s *Submissions) dropStreamed(ctx context.Context, sub *models.Submission) {
	if err := DeleteSubmissionBytes(systemContext(ctx), s.files, sub); err != nil {
		s.opts.Logger.Warn("delete an uncompleted upload", "submission_id", sub.ID, "error", err.Error())
	}
	if _, err := s.store.DiscardSubmission(ctx, sub.ID); err != nil && models.ErrorCode(err) != models.ECONFLICT {
		s.opts.Logger.Warn("discard an uncompleted upload", "submission_id", sub.ID, "error", err.Error())
	}
}

// errPartDigest means a part's bytes do not match the MD5 its client sent.
var errPartDigest = errors.New("the part's MD5 does not match its Content-MD5")

// digestReader passes exactly size bytes of a part through, withholding the
// last bytes read until their MD5 is known: a part whose digest is not the
// one the client sent never reaches its end, so the store keeps nothing of it.
type digestReader struct {
	r    io.Reader
	left int64
	h    hash.Hash
	want []byte // nil: no digest to check
	err  error
	// short is set when the body ended before size bytes.
	short bool
}

func newDigestReader(r io.Reader, size int64, want []byte) *digestReader {
	return &digestReader{r: r, left: size, h: md5.New(), want: want}
}

func (d *digestReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.r.Read(p)
	d.h.Write(p[:n])
	d.left -= int64(n)
	if err == io.EOF && d.left > 0 {
		d.short = true
		err = io.ErrUnexpectedEOF
	}
	if d.left == 0 && d.want != nil && !bytes.Equal(d.h.Sum(nil), d.want) {
		d.err = errPartDigest
		return 0, d.err
	}
	return n, err
}

// sum is the MD5 of what was read, in hex.
func (d *digestReader) sum() string { return hex.EncodeToString(d.h.Sum(nil)) }
