package hidden

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// restartPollInterval is how often a restart asks the health URL whether the
// candidate is back.
const restartPollInterval = 250 * time.Millisecond

// healthWait is how waiting for a restarted candidate ended.
type healthWait struct {
	ok     bool
	status int    // the answer that ended the wait, when ok
	tries  int    // health requests sent
	last   string // what the last unanswered or non-2xx try found
}

// callRestartHook POSTs to the candidate's restart hook. It returns the
// hook's status, or why the hook could not be called (limit words a timeout).
func callRestartHook(ctx context.Context, client *http.Client, hook string, limit time.Duration) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, http.NoBody)
	if err != nil {
		return 0, "the restart hook is not a URL"
	}
	ex, err := send(client, req)
	if err != nil {
		return 0, "the restart hook: " + failureReason(ctx, err, limit)
	}
	return ex.status, ""
}

// waitHealthy asks target every restartPollInterval until it answers 2xx or
// ctx ends, and says how it went. Both a restart test and a journey's
// restart step wait this way.
func waitHealthy(ctx context.Context, client *http.Client, target string, limit time.Duration) healthWait {
	var w healthWait
	for {
		w.tries++
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, http.NoBody)
		if err != nil {
			w.last = fmt.Sprintf("building the request: %v", err)
			return w
		}
		ex, err := send(client, req)
		switch {
		case err != nil:
			w.last = failureReason(ctx, err, limit)
		case ex.status/100 == 2:
			w.ok, w.status = true, ex.status
			return w
		default:
			w.last = fmt.Sprintf("it answered %d", ex.status)
		}
		select {
		case <-ctx.Done():
			return w
		case <-time.After(restartPollInterval):
		}
	}
}
