package partition

import "sync"

// inbox carries the term engine's reports on the loop's partitions to the
// loop: the engine's hooks must not block, and the loop may be busy.
type inbox struct {
	mu     sync.Mutex
	events []inboxEvent
	kick   chan struct{} // capacity 1: events are waiting
}

// inboxEvent is a term the engine ended (ended is the reason), or a
// callback returned (ended is nil).
type inboxEvent struct {
	pt    *part
	ended error
}

// post queues an event and wakes the loop.
func (in *inbox) post(pt *part, ended error) {
	in.mu.Lock()
	in.events = append(in.events, inboxEvent{pt, ended})
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

// take returns the events queued, in order.
func (in *inbox) take() []inboxEvent {
	in.mu.Lock()
	defer in.mu.Unlock()
	evs := in.events
	in.events = nil
	return evs
}
