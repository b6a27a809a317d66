package api

import (
	"time"

	"proctor/models"
)

// Submission is a submission as the API shows it (GET
// /api/v1/submissions/{id}): its status, the parts received (always a list),
// the parsed validation report and, once ingested, the run. Storage keys,
// upload ids and the raw report never reach JSON (see the model's tags).
type Submission = models.SubmissionView

// SubmissionRequest is the body of POST /api/v1/submissions.
type SubmissionRequest = models.SubmissionRequest

// SubmissionPart is one received part: the answer of PUT
// /api/v1/submissions/{id}/parts/{n}.
type SubmissionPart = models.SubmissionPart

// SubmissionCreated is the answer of POST /api/v1/submissions: the new
// submission, or the caller's unfinished upload of the same bundle
// (resumed). Its fields stand in the order the answer has always had them.
type SubmissionCreated struct {
	Resumed    bool       `json:"resumed"`
	Submission Submission `json:"submission"`
}

// PresignedPart is a presigned direct upload of one part to storage
// (GET /api/v1/submissions/{id}/parts/{n}/url). Its fields stand in the
// order the answer has always had them.
type PresignedPart struct {
	ExpiresAt time.Time `json:"expires_at"`
	Method    string    `json:"method"` // always PUT
	URL       string    `json:"url"`
}
