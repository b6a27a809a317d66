package apiclient

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"proctor/api"
)

// CreateSubmission starts an upload, or resumes the caller's unfinished
// upload of the same bundle (resumed is true). EINVALID (with the field),
// ENOTFOUND for an unknown agent, benchmark or subset, EFORBIDDEN for
// non-members, ECONFLICT when the bundle was already ingested, ETOOLARGE over
// the size limit, ERATELIMIT over the team's daily quota.
func (c *Client) CreateSubmission(ctx context.Context, req api.SubmissionRequest) (sub *api.Submission, resumed bool, err error) {
	var out api.SubmissionCreated
	// Creating is safe to repeat: the server resumes an unfinished upload of
	// the same bundle instead of starting another, so a lost answer is retried.
	r, err := jsonRequest(http.MethodPost, c.apiURL("/submissions", nil), req)
	if err != nil {
		return nil, false, err
	}
	r.idempotent = true
	res, err := c.do(ctx, r)
	if err == nil {
		err = decodeJSON(res, &out)
	}
	if err != nil {
		return nil, false, fmt.Errorf("create submission: %w", err)
	}
	if out.Submission.ID == 0 {
		return nil, false, fmt.Errorf("create submission: the answer holds no submission")
	}
	return &out.Submission, out.Resumed, nil
}

// Submission returns a submission with its received parts and report.
// ENOTFOUND when it does not exist or is not visible to the caller.
func (c *Client) Submission(ctx context.Context, id int64) (*api.Submission, error) {
	var out api.Submission
	if err := c.Get(ctx, submissionPath(id), nil, &out); err != nil {
		return nil, fmt.Errorf("submission %d: %w", id, err)
	}
	return &out, nil
}

// PutPart sends part n (from 1) of a submission through the API, with its
// Content-MD5 so the server checks it arrived intact. part is read again on
// every try; progress (may be nil) is told the bytes sent so far of this try.
// Retried on connection errors: re-sending a part replaces it.
func (c *Client) PutPart(ctx context.Context, id int64, n int, part *io.SectionReader, md5sum []byte, progress func(sent int64)) (*api.SubmissionPart, error) {
	r := partRequest(http.MethodPut, c.apiURL(submissionPath(id)+"/parts/"+strconv.Itoa(n), nil), part, md5sum, progress)
	r.bearer = true
	res, err := c.do(ctx, r)
	var out api.SubmissionPart
	if err == nil {
		err = decodeJSON(res, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("part %d: %w", n, err)
	}
	if want := hex.EncodeToString(md5sum); out.MD5 != "" && !strings.EqualFold(out.MD5, want) {
		return nil, fmt.Errorf("part %d: the server stored MD5 %s, but the part's is %s", n, out.MD5, want)
	}
	return &out, nil
}

// PartURL presigns a direct upload of part n to the server's storage.
// ECONFLICT when the server stores parts itself (send them with PutPart).
func (c *Client) PartURL(ctx context.Context, id int64, n int) (*api.PresignedPart, error) {
	var out api.PresignedPart
	if err := c.Get(ctx, submissionPath(id)+"/parts/"+strconv.Itoa(n)+"/url", nil, &out); err != nil {
		return nil, fmt.Errorf("part %d URL: %w", n, err)
	}
	if out.URL == "" {
		return nil, fmt.Errorf("part %d URL: the answer holds no URL", n)
	}
	return &out, nil
}

// PutPresigned sends part n to a presigned storage URL, without the API
// token (it must never reach storage). The part's ETag must be its MD5.
func (c *Client) PutPresigned(ctx context.Context, n int, u *api.PresignedPart, part *io.SectionReader, md5sum []byte, progress func(sent int64)) error {
	method := u.Method
	if method == "" {
		method = http.MethodPut
	}
	res, err := c.do(ctx, partRequest(method, u.URL, part, md5sum, progress))
	if err != nil {
		return fmt.Errorf("part %d: %w", n, err)
	}
	drain(res)
	etag := strings.Trim(res.Header.Get("ETag"), `"`)
	if want := hex.EncodeToString(md5sum); etag != "" && !strings.EqualFold(etag, want) {
		return fmt.Errorf("part %d: storage answered ETag %s, but the part's MD5 is %s", n, etag, want)
	}
	return nil
}

// CompleteSubmission assembles the uploaded parts and queues validation.
// ECONFLICT naming the missing or short parts.
func (c *Client) CompleteSubmission(ctx context.Context, id int64) (*api.Submission, error) {
	var out api.Submission
	if err := c.postJSON(ctx, submissionPath(id)+"/complete", nil, &out); err != nil {
		return nil, fmt.Errorf("complete submission %d: %w", id, err)
	}
	return &out, nil
}

// IngestSubmission queues the ingest of a validated submission: it becomes a
// run. ECONFLICT when the report blocks it or the status does not allow it.
func (c *Client) IngestSubmission(ctx context.Context, id int64) (*api.Submission, error) {
	var out api.Submission
	if err := c.postJSON(ctx, submissionPath(id)+"/ingest", nil, &out); err != nil {
		return nil, fmt.Errorf("ingest submission %d: %w", id, err)
	}
	return &out, nil
}

// DiscardSubmission deletes an unfinished submission's bytes. ECONFLICT once
// it was ingested.
func (c *Client) DiscardSubmission(ctx context.Context, id int64) error {
	res, err := c.do(ctx, request{method: http.MethodDelete, url: c.apiURL(submissionPath(id), nil), idempotent: true, bearer: true})
	if err != nil {
		return fmt.Errorf("discard submission %d: %w", id, err)
	}
	drain(res)
	return nil
}

func submissionPath(id int64) string { return "/submissions/" + strconv.FormatInt(id, 10) }

// partRequest is the upload of one part: the section is read from its start
// on every try, and its progress restarts with it.
func partRequest(method, url string, part *io.SectionReader, md5sum []byte, progress func(int64)) request {
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if len(md5sum) > 0 {
		h.Set("Content-MD5", base64.StdEncoding.EncodeToString(md5sum))
	}
	return request{
		method: method, url: url, header: h, length: part.Size(), idempotent: true,
		body: func() (io.Reader, error) {
			r := io.Reader(io.NewSectionReader(part, 0, part.Size()))
			if progress != nil {
				progress(0)
				r = &countingReader{r: r, report: progress}
			}
			return r, nil
		},
	}
}

// countingReader reports the bytes read so far.
type countingReader struct {
	r      io.Reader
	n      int64
	report func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if n > 0 {
		c.report(c.n)
	}
	return n, err
}
