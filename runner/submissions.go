package runner

import "proctor/bundle"

// The submission portal's jobs (validation, ingest, expiry of abandoned
// uploads) are the runner's; the service (service.Submissions) receives the
// uploads and enqueues the jobs through the queue.

// SubmissionLimits are the limits the validation and ingest jobs hold every
// bundle to, defaults filled in; the submission service is given the same.
func (r *Runner) SubmissionLimits() bundle.Limits { return r.opts.Submissions.Limits }
