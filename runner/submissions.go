package runner

import "proctor/bundle"

// The submission portal's jobs (validation, ingest, expiry of abandoned
// uploads) are the runner's; the service (service.Submissions) receives the
// uploads and enqueues the jobs through the queue.

// SubmissionLimits are the limits every bundle is held to (the upload form
// shows them).
func (r *Runner) SubmissionLimits() bundle.Limits { return r.opts.Submissions.Limits }
