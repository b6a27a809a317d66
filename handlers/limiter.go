package handlers

import (
	"sync"
	"time"
)

// attemptLimiter counts attempts per key in a fixed window (sign-up
// throttling, and the per-address allowance of sign-in).
type attemptLimiter struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	now    func() time.Time
	counts map[string]*attemptWindow
}

type attemptWindow struct {
	start time.Time
	n     int
}

// maxTrackedKeys is how many keys a limiter holds before it forgets the
// stale ones.
const maxTrackedKeys = 10000

func newAttemptLimiter(limit int, window time.Duration, now func() time.Time) *attemptLimiter {
	return &attemptLimiter{limit: limit, window: window, now: now, counts: map[string]*attemptWindow{}}
}

// allow records an attempt for key and returns how long to wait before the
// next one counts: 0 when this one is within the limit.
func (l *attemptLimiter) allow(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.counts) > maxTrackedKeys {
		for k, w := range l.counts {
			if now.Sub(w.start) > l.window {
				delete(l.counts, k)
			}
		}
	}
	w := l.counts[key]
	if w == nil || now.Sub(w.start) >= l.window {
		w = &attemptWindow{start: now}
		l.counts[key] = w
	}
	w.n++
	if w.n > l.limit {
		return max(time.Second, w.start.Add(l.window).Sub(now))
	}
	return 0
}
