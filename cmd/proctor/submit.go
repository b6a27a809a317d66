package main

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"proctor/api"
	"proctor/internal/apiclient"
	"proctor/models"
	"proctor/web"
)

// submit is `proctor submit`: it uploads a results bundle to a server in
// parts, resuming an interrupted upload of the same file, waits for the
// validation report, asks for the ingest and prints the run's URL. The file is
// streamed (hashed, then read part by part), never held in memory.
func (p *Program) submit(ctx context.Context, args []string) error {
	const usage = "submit --server URL --token T --benchmark B [--subset S] --agent [TEAM/]AGENT [--no-ingest] [--wait] [--timeout D] [--json] BUNDLE"
	fs, rf := p.remoteFlagSet("submit")
	benchmark := fs.String("benchmark", "", "the benchmark's slug")
	subset := fs.String("subset", "", "the subset the bundle covers (default: every task)")
	agent := fs.String("agent", "", "the agent that produced the bundle: its slug, or TEAM/AGENT")
	noIngest := fs.Bool("no-ingest", false, "stop after the validation report; ingest on the submission's page")
	wait := fs.Bool("wait", false, "wait for the run's evaluation to finish (exit 0 completed, 6 failed or canceled)")
	parallel := fs.Int("parallel", 4, "parts sent at once")
	var wo waitOptions
	wo.register(fs)
	asJSON := fs.Bool("json", false, "print the submission (and the run) as JSON on stdout")
	positional, err := p.parseInterspersed(fs, usage, args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) != 1:
		return usagef("expected exactly one BUNDLE argument, got %d (usage: proctor %s)", len(positional), usage)
	case strings.TrimSpace(*benchmark) == "":
		return usagef("--benchmark is required")
	case strings.TrimSpace(*agent) == "":
		return usagef("--agent is required: the agent's slug, or TEAM/AGENT")
	case *parallel < 1 || *parallel > 16:
		return usagef("--parallel must be between 1 and 16, got %d", *parallel)
	}
	if err := wo.check(); err != nil {
		return err
	}
	c, err := p.client(rf, true)
	if err != nil {
		return err
	}
	path := positional[0]
	f, err := os.Open(path)
	if err != nil {
		return usagef("cannot open the bundle: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("read the bundle %s: %w", path, err)
	case !info.Mode().IsRegular():
		return usagef("the bundle %s is not a regular file", path)
	case info.Size() == 0:
		return usagef("the bundle %s is empty", path)
	}

	up := &uploader{p: p, c: c, file: f, size: info.Size(), name: filepath.Base(path), tty: isTerminal(p.Stderr), parallel: *parallel}
	sum, err := up.hash(ctx)
	if err != nil {
		return err
	}
	req := api.SubmissionRequest{Agent: strings.TrimSpace(*agent), Benchmark: strings.TrimSpace(*benchmark),
		Subset: strings.TrimSpace(*subset), Filename: up.name, Size: up.size, SHA256: sum}
	sub, err := up.upload(ctx, req)
	if err != nil {
		return err
	}

	// Everything after the upload is waiting, bounded by --timeout together.
	waitCtx, cancel := wo.deadline(ctx)
	defer cancel()
	follow := submissionFollower{p: p, c: c, ctx: ctx, waitCtx: waitCtx, wo: wo, out: p.Stdout}
	if *asJSON {
		// stdout is for the one JSON document; the summary goes with the notices.
		follow.out = p.Stderr
	}
	result, err := follow.follow(sub, !*noIngest, *wait)
	if *asJSON && result.Submission != nil {
		if jerr := writeJSON(p.Stdout, result); jerr != nil && err == nil {
			return jerr
		}
	}
	return err
}

// submissionFollower waits for an uploaded submission's validation and ingest,
// and its run's evaluation, printing the report and the run's URL on out.
type submissionFollower struct {
	p            *Program
	c            *apiclient.Client
	ctx, waitCtx context.Context // the command's, and the same bounded by --timeout
	wo           waitOptions
	out          io.Writer
}

// follow returns what it saw last, with exit code 5 for a refused or blocked
// bundle, 6 for a run that failed, 7 at the timeout.
func (f submissionFollower) follow(sub *api.Submission, ingest, wait bool) (submitResult, error) {
	result := submitResult{Submission: sub}
	sub, err := f.p.waitSubmission(f.ctx, f.waitCtx, f.c, sub, f.wo, "validating", models.SubmissionUploaded, models.SubmissionValidating)
	result.Submission = sub
	if err != nil {
		return result, err
	}
	printReport(f.out, sub)
	switch {
	case sub.Status == models.SubmissionRefused:
		return result, withExitCode(exitRefused, fmt.Errorf("the server refused the bundle: %s", cmpOr(sub.Error, "no reason given")))
	case sub.Status == models.SubmissionValidated && sub.ParsedReport != nil && len(sub.ParsedReport.Blocking) > 0:
		return result, withExitCode(exitRefused, fmt.Errorf("the bundle cannot be ingested: %s", strings.Join(sub.ParsedReport.Blocking, "; ")))
	case sub.Status == models.SubmissionValidated && !ingest:
		fmt.Fprintf(f.out, "validated; ingest it on %s\n", f.c.URL(web.SubmissionPath(sub.ID)))
		return result, nil
	case sub.Status == models.SubmissionValidated:
		if sub, err = f.c.IngestSubmission(f.ctx, sub.ID); err != nil {
			return result, err
		}
	}
	sub, err = f.p.waitSubmission(f.ctx, f.waitCtx, f.c, sub, f.wo, "ingesting", models.SubmissionValidated, models.SubmissionIngesting)
	result.Submission = sub
	if err != nil {
		return result, err
	}
	if sub.Status != models.SubmissionIngested || sub.RunID == nil {
		return result, fmt.Errorf("submission %d %s: %s", sub.ID, sub.Status, cmpOr(sub.Error, "no reason given"))
	}
	fmt.Fprintf(f.out, "run %d: %s\n", *sub.RunID, f.c.URL(fmt.Sprintf("/runs/%d", *sub.RunID)))
	if !wait {
		return result, nil
	}
	run, err := f.p.waitRun(f.ctx, f.waitCtx, f.c, *sub.RunID, f.wo)
	result.Run = run
	if run != nil && (err == nil || errors.As(err, new(*codedError))) {
		fmt.Fprintf(f.out, "run %d %s: %s\n", run.ID, run.Status, runProgressLine(run))
	}
	return result, err
}

// submitResult is what `proctor submit --json` prints.
type submitResult struct {
	Submission *api.Submission `json:"submission"`
	Run        *api.RunState   `json:"run,omitempty"`
}

// uploader sends one bundle file in parts.
type uploader struct {
	p        *Program
	c        *apiclient.Client
	file     *os.File
	size     int64
	name     string
	tty      bool
	parallel int
	// viaAPI says once that storage was unreachable and parts go through the API.
	viaAPI sync.Once
}

// hash is the SHA-256 of the file, read once from start to end.
func (u *uploader) hash(ctx context.Context) (string, error) {
	h := sha256.New()
	bar := newProgressBar(u.p.Stderr, u.tty, "hashing", u.size, 0)
	bar.terminalOnly = true // a log needs no lines for a local read
	r := io.NewSectionReader(u.file, 0, u.size)
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("hashing %s: %w", u.name, err)
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		bar.Add(int64(n))
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read the bundle %s: %w", u.name, err)
		}
	}
	bar.Finish()
	return hex.EncodeToString(h.Sum(nil)), nil
}

// upload creates (or resumes) the submission, sends the parts the server
// lacks or holds corrupted, and completes it. Once the submission exists, a
// lost connection or an interruption ends with exit code 9: running the
// same command again resumes the upload.
func (u *uploader) upload(ctx context.Context, req api.SubmissionRequest) (*api.Submission, error) {
	sub, resumed, err := u.c.CreateSubmission(ctx, req)
	if err != nil {
		if apiclient.IsConnectionError(err) {
			return nil, fmt.Errorf("cannot reach %s: %w", u.c.BaseURL(), err)
		}
		if models.ErrorCode(err) == models.ETOOLARGE {
			return nil, withExitCode(exitRefused, err)
		}
		return nil, err
	}
	interrupted := func(done, total int, err error) error {
		return withExitCode(exitInterrupted, fmt.Errorf("upload of submission %d interrupted after %d of %d parts (%w): run the same command again to resume", sub.ID, done, total, err))
	}
	if resumed {
		// The creation's view may predate parts still arriving from an
		// earlier command: ask for what the store holds now.
		if sub, err = u.c.Submission(ctx, sub.ID); err != nil {
			if isInterruption(err) {
				return nil, interrupted(0, 0, err)
			}
			return nil, err
		}
	}
	if sub.Status != models.SubmissionUploading {
		return sub, nil // already uploaded: only the waiting is left
	}
	if sub.Size != u.size || sub.PartSize <= 0 {
		return nil, fmt.Errorf("submission %d declares %d bytes in parts of %d, but %s has %d bytes", sub.ID, sub.Size, sub.PartSize, u.name, u.size)
	}
	total := sub.PartsTotal()
	if resumed {
		fmt.Fprintf(u.p.Stderr, "resuming submission %d: the server holds %d of %d parts\n", sub.ID, len(sub.Parts), total)
	}
	missing, held, err := u.compareParts(sub)
	if err != nil {
		return nil, err
	}
	switch {
	case resumed:
		fmt.Fprintf(u.p.Stderr, "sending %s (%s)\n", plural(len(missing), "part"), formatBytes(u.size-held))
	default:
		fmt.Fprintf(u.p.Stderr, "submission %d created: sending %s in %s\n", sub.ID, formatBytes(u.size), plural(total, "part"))
	}
	bar := newProgressBar(u.p.Stderr, u.tty, "uploading", u.size, held)
	sent, err := u.sendParts(ctx, sub, missing, bar)
	if err != nil {
		if isInterruption(err) {
			return nil, interrupted(total-len(missing)+sent, total, err)
		}
		return nil, err
	}
	bar.Finish()
	done, err := u.c.CompleteSubmission(ctx, sub.ID)
	if err != nil {
		if isInterruption(err) {
			return nil, interrupted(total, total, err)
		}
		return nil, err
	}
	fmt.Fprintf(u.p.Stderr, "uploaded %s (%s) as submission %d\n", u.name, formatBytes(u.size), sub.ID)
	return done, nil
}

// isInterruption is a lost connection or a canceled command (Ctrl-C).
func isInterruption(err error) bool {
	return apiclient.IsConnectionError(err) || errors.Is(err, context.Canceled)
}

// compareParts lists the parts to send: those the server lacks, and those it
// holds with another size or MD5 than the local file's (a file changed since,
// or a corrupted part), saying so for each. held is the bytes kept.
func (u *uploader) compareParts(sub *api.Submission) (missing []int, held int64, err error) {
	good := map[int]bool{}
	for _, part := range sub.Parts {
		n := part.Number
		if n < 1 || n > sub.PartsTotal() {
			continue
		}
		if want := sub.PartLength(n); part.Size != want {
			fmt.Fprintf(u.p.Stderr, "part %d on the server has %d bytes instead of %d: sending it again\n", n, part.Size, want)
			continue
		}
		sum, err := md5Of(io.NewSectionReader(u.file, sub.PartOffset(n), sub.PartLength(n)))
		if err != nil {
			return nil, 0, fmt.Errorf("read part %d of %s: %w", n, u.name, err)
		}
		if !strings.EqualFold(part.MD5, hex.EncodeToString(sum)) {
			fmt.Fprintf(u.p.Stderr, "part %d on the server does not match your file: sending it again\n", n)
			continue
		}
		good[n] = true
		held += part.Size
	}
	for n := 1; n <= sub.PartsTotal(); n++ {
		if !good[n] {
			missing = append(missing, n)
		}
	}
	return missing, held, nil
}

// sendParts uploads parts with u.parallel at once and returns how many
// arrived. The first failure stops the others.
func (u *uploader) sendParts(ctx context.Context, sub *api.Submission, parts []int, bar *progressBar) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		direct   atomic.Bool
		sent     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	direct.Store(sub.DirectUpload)
	next := make(chan int)
	for range min(u.parallel, len(parts)) {
		wg.Go(func() {
			for n := range next {
				if err := u.sendPart(ctx, sub, n, &direct, bar); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					continue
				}
				sent.Add(1)
			}
		})
	}
feed:
	for _, n := range parts {
		select {
		case next <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return int(sent.Load()), firstErr
}

// sendPart uploads part n: straight to storage through a presigned URL when
// the server offers it, else through the API, with its MD5 either way.
func (u *uploader) sendPart(ctx context.Context, sub *api.Submission, n int, direct *atomic.Bool, bar *progressBar) error {
	section := io.NewSectionReader(u.file, sub.PartOffset(n), sub.PartLength(n))
	sum, err := md5Of(section)
	if err != nil {
		return fmt.Errorf("read part %d of %s: %w", n, u.name, err)
	}
	report := bar.partReporter()
	if err := u.putPart(ctx, sub, n, section, sum, direct, report); err != nil {
		report(0) // the bar shows what arrived, not what was lost on the way
		return err
	}
	return nil
}

func (u *uploader) putPart(ctx context.Context, sub *api.Submission, n int, section *io.SectionReader, sum []byte, direct *atomic.Bool, report func(int64)) error {
	if direct.Load() {
		target, err := u.c.PartURL(ctx, sub.ID, n)
		switch {
		case err == nil:
			err = u.c.PutPresigned(ctx, n, target, section, sum, report)
			if err == nil || !apiclient.IsConnectionError(err) || ctx.Err() != nil {
				return err
			}
			// Storage the server reaches may be out of this machine's reach
			// (a private endpoint): the API stores parts in it too.
			u.viaAPI.Do(func() {
				fmt.Fprintf(u.p.Stderr, "\ncannot reach the server's storage (%v): sending parts through the API\n", err)
			})
		case models.ErrorCode(err) != models.ECONFLICT:
			return err
		}
		direct.Store(false) // the server keeps parts itself after all
	}
	_, err := u.c.PutPart(ctx, sub.ID, n, section, sum, report)
	return err
}

// plural is "1 part" or "3 parts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func md5Of(r io.Reader) ([]byte, error) {
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// waitSubmission polls a submission while its status is one of waiting,
// showing the server's progress (bytes read by the validation or ingest job)
// under label. A timeout ends with exit code 7.
func (p *Program) waitSubmission(ctx, waitCtx context.Context, c *apiclient.Client, sub *api.Submission, wo waitOptions, label string, waiting ...string) (*api.Submission, error) {
	var bar *progressBar
	for slices.Contains(waiting, sub.Status) {
		if sub.ProgressTotal > 0 {
			if bar == nil {
				bar = newProgressBar(p.Stderr, isTerminal(p.Stderr), label, sub.ProgressTotal, 0)
			}
			bar.Set(sub.ProgressDone)
		}
		stopped := func() error {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while submission %d is %s: follow it on %s", sub.ID, sub.Status, c.URL(web.SubmissionPath(sub.ID)))
			}
			return withExitCode(exitTimedOut, fmt.Errorf("submission %d is still %s after %s: follow it on %s", sub.ID, sub.Status, wo.timeout, c.URL(web.SubmissionPath(sub.ID))))
		}
		select {
		case <-waitCtx.Done():
			return sub, stopped()
		case <-time.After(min(wo.interval, time.Second)):
		}
		next, err := c.Submission(waitCtx, sub.ID)
		if err != nil {
			if waitCtx.Err() != nil {
				return sub, stopped()
			}
			return sub, err
		}
		sub = next
	}
	if bar != nil {
		if sub.Status != models.SubmissionRefused && sub.Status != models.SubmissionFailed {
			bar.Set(bar.total) // the job read everything; the last poll may have seen less
		}
		bar.Finish()
	}
	return sub, nil
}

// printReport writes a submission's validation report: format, tasks found,
// missing, unknown and duplicated, invalid files with reasons, blocking
// reasons and warnings.
func printReport(w io.Writer, sub *api.Submission) {
	r := sub.ParsedReport
	if r == nil {
		fmt.Fprintf(w, "submission %d %s\n", sub.ID, sub.Status)
		return
	}
	fmt.Fprintf(w, "submission %d %s: %s\n", sub.ID, sub.Status, cmpOr(r.FormatName, models.BundleFormatName(r.Format)))
	cov, totals := r.Coverage, r.Totals()
	fmt.Fprintf(w, "  tasks found:      %d of %d in %s, subset %s (%.0f%% covered)\n", totals.TasksFound, cov.SubsetTasks, cov.Benchmark, cov.Subset, cov.Fraction*100)
	for _, line := range []struct {
		label string
		ids   []string
		total int
	}{
		{"not attempted:", r.TasksNotAttempted, totals.TasksNotAttempted},
		{"missing:", r.TasksMissing, totals.TasksMissing},
		{"unknown:", r.TasksUnknown, totals.TasksUnknown},
		{"outside subset:", r.TasksOutside, totals.TasksOutside},
		{"duplicated:", r.TasksDuplicated, totals.TasksDuplicated},
	} {
		fmt.Fprintf(w, "  %-17s %s\n", line.label, idList(line.ids, line.total))
	}
	fmt.Fprintf(w, "  files:            %d (%s uncompressed), %d steps, %d screenshots, %d HARs\n", r.Files, formatBytes(r.Bytes), r.Steps, r.Screenshots, r.HARs)
	fmt.Fprintf(w, "  invalid files:    %d\n", totals.InvalidFiles)
	const shown = 20
	for i, f := range r.InvalidFiles {
		if i == shown {
			fmt.Fprintf(w, "    … and %d more (see the submission's page)\n", totals.InvalidFiles-shown)
			break
		}
		fmt.Fprintf(w, "    %s: %s\n", f.Path, f.Problem)
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
	for _, s := range r.Blocking {
		fmt.Fprintf(w, "  blocking: %s\n", s)
	}
}

// idList is a count and the first task ids.
func idList(ids []string, total int) string {
	total = max(total, len(ids)) // the report lists at most its cap of ids
	if total == 0 {
		return "0"
	}
	const shown = 10
	if total <= shown && len(ids) == total {
		return fmt.Sprintf("%d (%s)", total, strings.Join(ids, ", "))
	}
	ids = ids[:min(len(ids), shown)]
	return fmt.Sprintf("%d (%s, … %d more)", total, strings.Join(ids, ", "), total-len(ids))
}

// progressBar shows bytes done on stderr: one line redrawn with \r on a
// terminal, otherwise (a CI log) one line each time another tenth is done.
type progressBar struct {
	w     io.Writer
	tty   bool
	label string
	total int64
	// terminalOnly keeps the bar off logs (stderr not a terminal).
	terminalOnly bool

	mu       sync.Mutex
	done     int64
	base     int64 // done before this command started: not counted in the speed
	start    time.Time
	drawn    time.Time
	width    int // of the longest line drawn on a terminal
	tenths   int64
	finished bool
}

func newProgressBar(w io.Writer, tty bool, label string, total, already int64) *progressBar {
	return &progressBar{w: w, tty: tty, label: label, total: max(total, 1), done: already, base: already,
		start: time.Now(), tenths: already * 10 / max(total, 1)}
}

// Add counts n more bytes done.
func (b *progressBar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	b.draw(false)
}

// Set sets the bytes done (the server's count).
func (b *progressBar) Set(done int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = done
	b.draw(false)
}

// partReporter turns one part's running count (restarting at 0 on a retry)
// into additions to the bar.
func (b *progressBar) partReporter() func(sent int64) {
	var last int64
	return func(sent int64) {
		b.Add(sent - last)
		last = sent
	}
}

// Finish draws the final state and ends the line.
func (b *progressBar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	b.draw(true)
}

// draw writes the bar when it changed enough; callers hold mu.
func (b *progressBar) draw(final bool) {
	if b.finished && !final {
		return
	}
	now := time.Now()
	if b.tty {
		if !final && now.Sub(b.drawn) < 100*time.Millisecond {
			return
		}
		b.drawn = now
		line := b.line(now, true)
		// Pad over the end of a longer line drawn before (a slower speed
		// takes fewer characters).
		b.width = max(b.width, len(line))
		line += strings.Repeat(" ", b.width-len(line))
		if final {
			line += "\n"
		}
		fmt.Fprint(b.w, "\r"+line)
		return
	}
	if b.terminalOnly {
		return
	}
	// The last tenth's line already says 100%: the end adds none.
	tenths := min(b.done, b.total) * 10 / b.total
	if tenths > b.tenths || (final && tenths < 10) {
		b.tenths = tenths
		fmt.Fprintln(b.w, b.line(now, false))
	}
}

// line renders label, bar (on a terminal), percent, bytes and speed.
func (b *progressBar) line(now time.Time, withBar bool) string {
	done := min(b.done, b.total)
	percent := done * 100 / b.total
	speed := ""
	if secs := now.Sub(b.start).Seconds(); secs > 0.05 && b.done > b.base {
		speed = fmt.Sprintf("  %.1f MB/s", float64(b.done-b.base)/1e6/secs)
	}
	bar := ""
	if withBar {
		const width = 30
		filled := int(done * width / b.total)
		bar = " [" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
	}
	return fmt.Sprintf("%-10s%s %3d%%  %s / %s%s", b.label, bar, percent, formatBytes(done), formatBytes(b.total), speed)
}

// formatBytes is a size in decimal units, as transfer speeds are given.
func formatBytes(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}
