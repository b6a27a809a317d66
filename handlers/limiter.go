package handlers

import (
	"sync"
	"time"
)

// attemptLimiter counts attempts per key in a fixed window (login throttling).
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

func newAttemptLimiter(limit int, window time.Duration, now func() time.Time) *attemptLimiter {
	return &attemptLimiter{limit: limit, window: window, now: now, counts: map[string]*attemptWindow{}}
}

// allow records an attempt for each key and reports whether all are within the limit.
func (l *attemptLimiter) allow(keys ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.counts) > 10000 {
		for k, w := range l.counts {
			if now.Sub(w.start) > l.window {
				delete(l.counts, k)
			}
		}
	}
	ok := true
	for _, k := range keys {
		w := l.counts[k]
		if w == nil || now.Sub(w.start) > l.window {
			w = &attemptWindow{start: now}
			l.counts[k] = w
		}
		w.n++
		if w.n > l.limit {
			ok = false
		}
	}
	return ok
}
