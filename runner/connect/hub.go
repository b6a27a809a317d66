package connect

import "sync"

// Hub holds the mailboxes of the connecting episodes this process runs, by
// attempt. A process that runs episodes has one; the HTTP side finds an
// episode's mailbox through it, or forwards the call to the process that
// holds it.
type Hub struct {
	mu    sync.Mutex
	boxes map[int64]*Mailbox
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{boxes: map[int64]*Mailbox{}} }

// Add registers m and returns the function that removes it.
func (h *Hub) Add(m *Mailbox) (remove func()) {
	h.mu.Lock()
	h.boxes[m.AttemptID] = m
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		if h.boxes[m.AttemptID] == m {
			delete(h.boxes, m.AttemptID)
		}
		h.mu.Unlock()
	}
}

// Get returns the mailbox of an attempt's try, or nil when this process
// does not run it.
func (h *Hub) Get(attemptID int64, try int) *Mailbox {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.boxes[attemptID]
	if m == nil || m.Try != try {
		return nil
	}
	return m
}
