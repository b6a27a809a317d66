package models

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Submission statuses, in the order a bundle goes through them.
const (
	SubmissionUploading  = "uploading"  // parts are arriving
	SubmissionUploaded   = "uploaded"   // assembled; validation is queued
	SubmissionValidating = "validating" // the validation job is reading the bundle
	SubmissionValidated  = "validated"  // the report is ready; waiting for the submitter to ingest
	SubmissionRefused    = "refused"    // the bundle broke a limit or is hostile; its bytes are deleted
	SubmissionIngesting  = "ingesting"  // the ingest job is storing artifacts and creating the run
	SubmissionIngested   = "ingested"   // the run exists; its attempts are being evaluated
	SubmissionFailed     = "failed"     // the ingest failed; nothing of the run was kept
	SubmissionDiscarded  = "discarded"  // the submitter discarded it; its bytes are deleted
)

// SubmissionFinished reports whether a submission's status is final.
func SubmissionFinished(status string) bool {
	switch status {
	case SubmissionRefused, SubmissionIngested, SubmissionFailed, SubmissionDiscarded:
		return true
	}
	return false
}

// Bundle formats the submission portal reads (docs/bundle-formats.md).
const (
	BundleWebArenaVerified = "webarena-verified" // {task_id}/agent_response.json + network.har
	BundleProctor          = "proctor"           // manifest.json + tasks/{task_id}/steps.jsonl
	BundleOnlineMind2Web   = "online-mind2web"   // {task_id}/result.json + trajectory/*.png
	BundleAgentLab         = "agentlab"          // AgentLab/BrowserGym experiment folders
)

// BundleFormats lists the formats in detection order.
func BundleFormats() []string {
	return []string{BundleProctor, BundleWebArenaVerified, BundleOnlineMind2Web, BundleAgentLab}
}

// BundleFormatName is a format's display name.
func BundleFormatName(format string) string {
	switch format {
	case BundleWebArenaVerified:
		return "WebArena-Verified submission"
	case BundleProctor:
		return "Proctor trajectory bundle"
	case BundleOnlineMind2Web:
		return "Online-Mind2Web results"
	case BundleAgentLab:
		return "AgentLab / BrowserGym experiments"
	}
	return format
}

// Submission is one uploaded bundle on its way to becoming a run with origin
// uploaded. Its bytes live under the artifact prefix "submissions/{id}/" and
// nowhere else until the ingest job's transaction creates the run.
type Submission struct {
	ID          int64  `json:"id"`
	TeamID      int64  `json:"team_id"`
	AgentID     int64  `json:"agent_id"`
	BenchmarkID int64  `json:"benchmark_id"`
	VersionID   int64  `json:"version_id"`
	SubsetName  string `json:"subset"`
	CreatedBy   *int64 `json:"created_by_id,omitempty"`
	Status      string `json:"status"`
	Filename    string `json:"filename"`
	Size        int64  `json:"size"`             // declared size in bytes
	SHA256      string `json:"sha256,omitempty"` // declared SHA-256 (hex) of the whole bundle; checked by validation
	PartSize    int64  `json:"part_size"`        // every part but the last has this size
	StorageKey  string `json:"-"`                // the assembled bundle: submissions/{id}/bundle
	MultipartID string `json:"-"`                // the S3 multipart upload id, or the local staging id
	Format      string `json:"format,omitempty"` // detected bundle format (Bundle* constants)
	Report      string `json:"-"`                // JSON SubmissionReport, once validated (SubmissionView.ParsedReport)
	Error       string `json:"error,omitempty"`  // why the bundle was refused or the ingest failed
	// ProgressDone and ProgressTotal are bytes read by the running job
	// (validation or ingest), for the live progress bar.
	ProgressDone  int64      `json:"progress_done"`
	ProgressTotal int64      `json:"progress_total"`
	RunID         *int64     `json:"run_id,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	ValidatedAt   *time.Time `json:"validated_at,omitempty"`
	IngestedAt    *time.Time `json:"ingested_at,omitempty"`

	Team      *Team      `gorm:"foreignKey:TeamID" json:"-"`
	Agent     *Agent     `gorm:"foreignKey:AgentID" json:"-"`
	Benchmark *Benchmark `gorm:"foreignKey:BenchmarkID" json:"-"`
}

// PartsTotal is how many parts the declared size takes.
func (s *Submission) PartsTotal() int {
	if s.PartSize <= 0 || s.Size <= 0 {
		return 0
	}
	return int((s.Size + s.PartSize - 1) / s.PartSize)
}

// PartLength is the size part n (from 1) must have.
func (s *Submission) PartLength(n int) int64 {
	if n < 1 || n > s.PartsTotal() {
		return 0
	}
	if n < s.PartsTotal() {
		return s.PartSize
	}
	return s.Size - int64(n-1)*s.PartSize
}

// PartOffset is where part n (from 1) starts in the bundle.
func (s *Submission) PartOffset(n int) int64 { return int64(n-1) * s.PartSize }

// SubmissionRequest starts a submission. Agent is "team/agent" or an agent slug
// of one of the caller's teams (Team disambiguates); Subset "" is the full set.
type SubmissionRequest struct {
	Team      string `json:"team,omitempty"`
	Agent     string `json:"agent"`
	Benchmark string `json:"benchmark"`
	Subset    string `json:"subset,omitempty"`
	Filename  string `json:"filename"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256,omitempty"`
}

// Normalize trims the request and splits "team/agent".
func (r *SubmissionRequest) Normalize() {
	r.Team, r.Agent = strings.TrimSpace(r.Team), strings.TrimSpace(r.Agent)
	r.Benchmark, r.Subset = strings.TrimSpace(r.Benchmark), strings.TrimSpace(r.Subset)
	r.Filename, r.SHA256 = strings.TrimSpace(r.Filename), strings.ToLower(strings.TrimSpace(r.SHA256))
	if team, agent, ok := strings.Cut(r.Agent, "/"); ok && r.Team == "" {
		r.Team, r.Agent = team, agent
	}
	if r.Subset == "" {
		r.Subset = SubsetFull
	}
}

// SubmissionPart is one received part of an upload.
type SubmissionPart struct {
	Number int    `json:"number"`
	Size   int64  `json:"size"`
	MD5    string `json:"md5"` // hex; S3 part ETags are the same digest
}

// SubmissionReport is the validation report of a bundle: what was found, what
// is missing and what is wrong, before anything is scored. Ingest is refused
// while Blocking is not empty.
type SubmissionReport struct {
	Format      string          `json:"format"`
	FormatName  string          `json:"format_name"`
	SHA256      string          `json:"sha256"`
	Manifest    *BundleManifest `json:"manifest,omitempty"`
	Files       int             `json:"files"`
	Bytes       int64           `json:"bytes"` // uncompressed
	Steps       int             `json:"steps"`
	Screenshots int             `json:"screenshots"`
	HARs        int             `json:"hars"`

	// The lists hold at most 1000 entries each, in order, with ids and
	// paths cut to 256 bytes (ending in "…"): a bundle may name hundreds of
	// thousands. Counts holds their full lengths.
	TasksFound        []string               `json:"tasks_found"`         // in the bundle and in the subset
	TasksNotAttempted []string               `json:"tasks_not_attempted"` // marked as not attempted (.missing)
	TasksMissing      []string               `json:"tasks_missing"`       // in the subset, absent from the bundle
	TasksUnknown      []string               `json:"tasks_unknown"`       // in the bundle, not in the benchmark
	TasksOutside      []string               `json:"tasks_outside"`       // in the benchmark but outside the subset
	TasksDuplicated   []string               `json:"tasks_duplicated"`    // present more than once
	InvalidFiles      []FileProblem          `json:"invalid_files"`
	Counts            SubmissionReportCounts `json:"counts"`
	Coverage          BundleCoverage         `json:"coverage"`
	Blocking          []string               `json:"blocking"` // why ingest is refused
	Warnings          []string               `json:"warnings"`
}

// SubmissionReportCounts are the full lengths of a report's lists.
type SubmissionReportCounts struct {
	TasksFound        int `json:"tasks_found"`
	TasksNotAttempted int `json:"tasks_not_attempted"`
	TasksMissing      int `json:"tasks_missing"`
	TasksUnknown      int `json:"tasks_unknown"`
	TasksOutside      int `json:"tasks_outside"`
	TasksDuplicated   int `json:"tasks_duplicated"`
	InvalidFiles      int `json:"invalid_files"`
}

// Totals are the full lengths of the report's lists: Counts, or the lists'
// own lengths in a report stored before lists were capped (zero counts).
// A page shows "and N more" for Totals().X - len(X).
func (r *SubmissionReport) Totals() SubmissionReportCounts {
	c := r.Counts
	c.TasksFound = max(c.TasksFound, len(r.TasksFound))
	c.TasksNotAttempted = max(c.TasksNotAttempted, len(r.TasksNotAttempted))
	c.TasksMissing = max(c.TasksMissing, len(r.TasksMissing))
	c.TasksUnknown = max(c.TasksUnknown, len(r.TasksUnknown))
	c.TasksOutside = max(c.TasksOutside, len(r.TasksOutside))
	c.TasksDuplicated = max(c.TasksDuplicated, len(r.TasksDuplicated))
	c.InvalidFiles = max(c.InvalidFiles, len(r.InvalidFiles))
	return c
}

// FileProblem is one invalid file of a bundle and why.
type FileProblem struct {
	Path    string `json:"path"`
	TaskID  string `json:"task_id,omitempty"`
	Problem string `json:"problem"`
}

// BundleCoverage says how much of the benchmark and subset a bundle covers.
type BundleCoverage struct {
	Benchmark      string  `json:"benchmark"`
	BenchmarkTasks int     `json:"benchmark_tasks"`
	Subset         string  `json:"subset"`
	SubsetTasks    int     `json:"subset_tasks"`
	Covered        int     `json:"covered"` // subset tasks present in the bundle (attempted or not)
	Fraction       float64 `json:"fraction"`
}

// PercentText is the coverage as every page and warning writes it, to one
// decimal ("0.2%", never a rounded "0%" beside it).
func (c BundleCoverage) PercentText() string {
	return strconv.FormatFloat(c.Fraction*100, 'f', 1, 64) + "%"
}

// BundleManifest is what a bundle says about the run (the Proctor format's
// manifest.json; other formats fill what they know).
type BundleManifest struct {
	Format         string        `json:"format"` // "proctor-trajectory/1"
	Agent          string        `json:"agent,omitempty"`
	Model          string        `json:"model,omitempty"`
	AgentFramework string        `json:"agent_framework,omitempty"`
	Benchmark      string        `json:"benchmark,omitempty"`
	Subset         string        `json:"subset,omitempty"`
	Date           string        `json:"date,omitempty"` // RFC 3339 or YYYY-MM-DD
	Budgets        BundleBudgets `json:"budgets,omitzero"`
	Notes          string        `json:"notes,omitempty"`
}

// BundleBudgets are the budgets the agent ran under elsewhere.
type BundleBudgets struct {
	MaxSteps          int      `json:"max_steps,omitempty"`
	MaxEpisodeSeconds int      `json:"max_episode_seconds,omitempty"`
	MaxCost           *float64 `json:"max_cost,omitempty"`
}

// SubmissionView is a submission with the names a page shows.
type SubmissionView struct {
	Submission
	TeamSlug      string            `json:"team"`
	AgentSlug     string            `json:"agent"`
	AgentName     string            `json:"agent_name"`
	BenchmarkSlug string            `json:"benchmark"`
	CreatedByName string            `json:"created_by"`
	Parts         []SubmissionPart  `json:"parts"`
	ParsedReport  *SubmissionReport `json:"report,omitempty"`
	// DirectUpload is true when parts may go straight to S3 through presigned URLs.
	DirectUpload bool `json:"direct_upload"`
}

// SubmissionFilter selects submissions: a team's (members), or all (admins).
type SubmissionFilter struct {
	TeamSlug string
	Status   string
	Page     int
	PerPage  int
}

// SubmissionFormOptions are the choices of the upload form: the caller's
// teams' agents and the benchmarks with their subsets.
type SubmissionFormOptions struct {
	Agents     []AgentChoice     `json:"agents"`
	Benchmarks []BenchmarkChoice `json:"benchmarks"`
}

// AgentChoice is an agent the caller may submit for.
type AgentChoice struct {
	TeamSlug  string `json:"team"`
	AgentSlug string `json:"agent"`
	Name      string `json:"name"`
}

// BenchmarkChoice is a benchmark and its subsets.
type BenchmarkChoice struct {
	Slug    string   `json:"slug"`
	Name    string   `json:"name"`
	Subsets []string `json:"subsets"`
}

// SubmissionEvent is one entry of a submission's audit trail: who did what
// and when. IP is filled for administrators only.
type SubmissionEvent struct {
	Action    string    `json:"action"` // submission.create, .complete, .validated, .refused, .ingest, …
	Details   string    `json:"details"`
	UserName  string    `json:"user,omitempty"`
	IP        string    `json:"ip,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// FormatSizeOverLimit writes a refused size and the limit it is over so that
// they never read the same: when rounding would show both as "8 GiB", both
// are written in bytes, the limit with its rounded form beside it.
func FormatSizeOverLimit(size, limit int64) (sizeText, limitText string) {
	sizeText, limitText = FormatBytes(size), FormatBytes(limit)
	if sizeText != limitText {
		return sizeText, limitText
	}
	return fmt.Sprintf("%d bytes", size), fmt.Sprintf("%d bytes (%s)", limit, limitText)
}

// FormatBytes writes a size for people in binary units: "900 bytes",
// "16 MiB", "1.5 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	value, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		value, suffix = value/unit, s
		if value < unit {
			break
		}
	}
	return strings.TrimSuffix(strconv.FormatFloat(value, 'f', 1, 64), ".0") + " " + suffix
}

// SubmissionStateError is ECONFLICT explaining what a submission's status
// still allows: the refusal of a change its status does not allow.
func SubmissionStateError(s *Submission) error {
	var why string
	switch s.Status {
	case SubmissionUploading:
		why = "its upload is not complete"
	case SubmissionUploaded, SubmissionValidating:
		why = "it is being validated"
	case SubmissionValidated:
		why = "it is validated and waits to be ingested or discarded"
	case SubmissionIngesting:
		why = "it is being ingested"
	case SubmissionIngested:
		why = "it was ingested"
		if s.RunID != nil {
			why += fmt.Sprintf(" as run %d", *s.RunID)
		}
	case SubmissionRefused:
		why = "it was refused: " + s.Error
	case SubmissionFailed:
		why = "its ingest failed: " + s.Error
	case SubmissionDiscarded:
		why = "it was discarded"
	default:
		why = "it is " + s.Status
	}
	return Errorf(ECONFLICT, "Submission %d cannot do this: %s.", s.ID, why)
}
