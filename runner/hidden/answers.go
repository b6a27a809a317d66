package hidden

import (
	"context"
	"net/http"
	"time"
)

// answerTries is how often Answers asks before it gives up, answerPause the
// pause between two tries: a candidate still starting gets a few seconds.
const (
	answerTries = 3
	answerPause = 2 * time.Second
)

// Answers reports whether the candidate answers at its base URL (with a
// fresh visitor) within limit: any HTTP answer counts, whatever its status,
// for the tests judge statuses themselves. It asks up to answerTries times;
// a try that gets no answer at all ends the wait when limit passes. When the
// candidate does not answer, why words the last try's failure
// ("unreachable: connection refused", "no answer within 30s"); it may name
// the base URL's host, never a hook's.
func Answers(ctx context.Context, client *http.Client, c Candidate, limit time.Duration) (ok bool, why string) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for try := 1; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.forVisitor().base, http.NoBody)
		if err != nil {
			return false, "the base URL is not a URL"
		}
		ex, err := send(client, req)
		if err == nil || ex.status != 0 {
			return true, "" // a body cut short still is an answer
		}
		why = failureReason(ctx, err, limit)
		if _, refused := guardRefusal(err); try == answerTries || refused {
			return false, why // the guard's answer would not change
		}
		select {
		case <-ctx.Done():
			return false, why // the limit passed between two tries
		case <-time.After(answerPause):
		}
	}
}
