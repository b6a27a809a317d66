package episode

import (
	"sync"
	"time"

	"github.com/mxschmitt/playwright-go"
)

// navigations counts, per tab, the top-level navigations the router let
// through or refused (requested) and those the tab committed or turned into a
// download (landed), so that an action that started one can wait for its
// page. Playwright's click waits for a navigation it started only up to the
// action's timeout, and the old document still counts as loaded until the new
// one commits: without this, a slow page is observed while it is being left
// and the agent's next action acts on the page it left. Written by
// Playwright's goroutines.
type navigations struct {
	mu                sync.Mutex
	requested, landed map[playwright.Page]int
}

// navCount is one tab's numbers, read before an action.
type navCount struct{ requested, landed int }

func (n *navigations) add(m *map[playwright.Page]int, p playwright.Page) {
	if p == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if *m == nil {
		*m = map[playwright.Page]int{}
	}
	(*m)[p]++
}

// request notes a top-level navigation request of a tab.
func (n *navigations) request(p playwright.Page) { n.add(&n.requested, p) }

// land notes a tab's top-level navigation committed (or become a download).
func (n *navigations) land(p playwright.Page) { n.add(&n.landed, p) }

// of returns a tab's numbers.
func (n *navigations) of(p playwright.Page) navCount {
	n.mu.Lock()
	defer n.mu.Unlock()
	return navCount{requested: n.requested[p], landed: n.landed[p]}
}

// watch counts a tab's committed top-level navigations.
func (n *navigations) watch(p playwright.Page) {
	p.OnFrameNavigated(func(f playwright.Frame) {
		if f.ParentFrame() == nil {
			n.land(p)
		}
	})
}

// started reports whether the tab requested a top-level navigation since
// before was counted.
func (n *navigations) started(p playwright.Page, before navCount) bool {
	return n.of(p).requested > before.requested
}

// settleAfter waits, up to timeout, until every top-level navigation the tab
// requested since before was counted has landed, and reports whether they
// did; a tab that started none returns true at once.
func (n *navigations) settleAfter(p playwright.Page, before navCount, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		now := n.of(p)
		if now.requested-before.requested <= now.landed-before.landed {
			return true
		}
		if p.IsClosed() || time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
