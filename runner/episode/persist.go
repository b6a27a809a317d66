package episode

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"proctor/internal/jpegscale"
	"proctor/models"
	"proctor/storage/artifact"
)

// persister stores an episode's steps beside its loop, so that storing a
// step's artifacts and row overlaps the agent's thinking instead of adding to
// the step's time. It works through its jobs in the order they were given: a
// step's artifacts (the thumbnail made from the screenshot, then the
// screenshot, thumbnail and accessibility text stored), then, once the step
// is acted on, its row. So a row is committed only after its artifacts are
// stored, and rows are committed in step order. After the first failure it
// does nothing more: no row is committed past a step that failed to store.
//
// The loop waits for step i-1's row before it hands over step i's artifacts
// (see waitSaved); the row has usually been written by then, as it is written
// while step i is observed. So only the last step can have artifacts and no
// row, every step before it is committed, and a crash loses at most that one.
type persister struct {
	store     artifact.Store
	sink      StepSink
	attemptID int64
	jobs      chan persistJob
	done      chan struct{} // closed when the goroutine has exited

	mu    sync.Mutex
	cond  *sync.Cond
	saved int   // rows committed
	err   error // the first failure; nothing is stored after it
}

// persistJob is one step's artifacts (row false) or its row (row true).
type persistJob struct {
	step *models.Step
	row  bool
	shot []byte // the screenshot, for the artifacts
	ax   string // the accessibility text, for the artifacts
}

// persistQueue is how many jobs may wait: the loop is never more than a
// step ahead (its artifacts and the previous step's row), since it waits for
// the previous row before asking the agent.
const persistQueue = 4

// newPersister starts the persister's goroutine; it stops when ctx is done
// or once drain has been called and every job is done.
func newPersister(ctx context.Context, store artifact.Store, sink StepSink, attemptID int64) *persister {
	p := &persister{store: store, sink: sink, attemptID: attemptID, jobs: make(chan persistJob, persistQueue), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	go p.run(ctx)
	return p
}

func (p *persister) run(ctx context.Context) {
	defer close(p.done)
	// artifactsMS is how long the last step's artifacts took; its row, the
	// next job of that step, records it.
	var artifactsMS int64
	for job := range p.jobs {
		if p.failed() != nil {
			continue // drop: nothing is stored past a failure
		}
		var err error
		if job.row {
			job.step.PersistMS = artifactsMS
			err = p.sink.SaveStep(ctx, job.step)
			if err != nil {
				err = fmt.Errorf("save step %d of attempt %d: %w", job.step.Index, p.attemptID, err)
			}
		} else {
			start := time.Now()
			err = p.storeArtifacts(ctx, job)
			artifactsMS = time.Since(start).Milliseconds()
		}
		if err != nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		p.mu.Lock()
		switch {
		case err != nil:
			p.err = err
		case job.row:
			p.saved++
		}
		p.mu.Unlock()
		p.cond.Broadcast()
	}
}

// storeArtifacts makes the step's thumbnail and stores its screenshot,
// thumbnail and accessibility text.
func (p *persister) storeArtifacts(ctx context.Context, job persistJob) error {
	s := job.step
	thumb, err := jpegscale.Scale(job.shot, thumbnailWidth, screenshotQuality)
	if err != nil {
		return fmt.Errorf("step %d: %w", s.Index, err)
	}
	for _, a := range []struct {
		key, contentType string
		data             []byte
	}{
		{s.ScreenshotKey, "image/jpeg", job.shot},
		{s.ThumbnailKey, "image/jpeg", thumb},
		{s.AXTreeKey, "text/plain; charset=utf-8", []byte(job.ax)},
	} {
		if err := p.store.Put(ctx, a.key, bytes.NewReader(a.data), int64(len(a.data)), a.contentType); err != nil {
			return fmt.Errorf("store %s: %w", a.key, err)
		}
	}
	return nil
}

// artifacts queues the storing of an observed step's artifacts. The step's
// keys must be set; the persister reads nothing else of it until its row.
func (p *persister) artifacts(ctx context.Context, step *models.Step, shot []byte, ax string) error {
	keys := &models.Step{Index: step.Index, ScreenshotKey: step.ScreenshotKey, ThumbnailKey: step.ThumbnailKey, AXTreeKey: step.AXTreeKey}
	return p.queue(ctx, persistJob{step: keys, shot: shot, ax: ax})
}

// row queues the committing of a finished step's row; the caller no longer
// touches step.
func (p *persister) row(ctx context.Context, step *models.Step) error {
	return p.queue(ctx, persistJob{step: step, row: true})
}

func (p *persister) queue(ctx context.Context, job persistJob) error {
	if err := p.failed(); err != nil {
		return err
	}
	select {
	case p.jobs <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failed returns the persister's failure, if it has one.
func (p *persister) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// waitSaved returns once n rows are committed, or the persister's failure,
// or ctx's error once ctx is done.
func (p *persister) waitSaved(ctx context.Context, n int) error {
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.saved < n && p.err == nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.cond.Wait()
	}
	return p.err
}

// drain waits for every queued job and returns the rows committed and the
// persister's failure, if any. Call it once, when the loop is over.
func (p *persister) drain() (int, error) {
	close(p.jobs)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.saved, p.err
}
