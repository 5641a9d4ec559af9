package term

import (
	"fmt"
	"reflect"

	"github.com/leaderkit/elector/backend"
)

// shardSize is the most leases one goroutine watches for loss: a
// reflect.Select over their Lost channels, rebuilt when the set changes.
const shardSize = 256

// lostShard watches the Lost channels of up to shardSize terms with one
// goroutine, while it has any, so that a lease the driver knows is gone ends
// its term at once without a goroutine per term.
type lostShard struct {
	e       *Engine
	terms   []*Term       // guarded by e.mu
	running bool          // guarded by e.mu
	changed chan struct{} // capacity 1: terms changed
}

// watchLocked starts watching t's Lost channel.
func (e *Engine) watchLocked(t *Term) {
	var s *lostShard
	for _, c := range e.shards {
		if len(c.terms) < shardSize {
			s = c
			break
		}
	}
	if s == nil {
		s = &lostShard{e: e, changed: make(chan struct{}, 1)}
		e.shards = append(e.shards, s)
	}
	t.st.shard, t.st.slot = s, len(s.terms)
	s.terms = append(s.terms, t)
	if !s.running {
		s.running = true
		e.live++
		go s.run()
		return
	}
	s.poke()
}

// unwatchLocked stops watching t's Lost channel.
func (e *Engine) unwatchLocked(t *Term) {
	s := t.st.shard
	if s == nil {
		return
	}
	last := len(s.terms) - 1
	moved := s.terms[last]
	s.terms[t.st.slot], moved.st.slot = moved, t.st.slot
	s.terms[last] = nil
	s.terms = s.terms[:last]
	t.st.shard = nil
	s.poke()
}

func (s *lostShard) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// run waits for a watched lease to be lost, or the set to change, until the
// shard has no term left.
func (s *lostShard) run() {
	var cases []reflect.SelectCase
	var terms []*Term
	for {
		s.e.mu.Lock()
		if len(s.terms) == 0 {
			s.running = false
			s.e.exitedLocked()
			s.e.mu.Unlock()
			return
		}
		terms = append(terms[:0], s.terms...)
		s.e.mu.Unlock()
		cases = append(cases[:0], reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.changed)})
		for _, t := range terms {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.lost)})
		}
		i, _, _ := reflect.Select(cases)
		if i > 0 {
			terms[i-1].lose()
		}
		clear(cases)
		clear(terms)
	}
}

// lose ends t on the loss of its lease, unless it has ended already.
func (t *Term) lose() {
	e := t.e
	e.mu.Lock()
	if t.st.reason != nil || t.st.finished {
		e.mu.Unlock()
		return
	}
	reason := fmt.Errorf("%w: the backend reports it gone: %w", ErrLeaseLost, backend.ErrLost)
	e.endLocked(t, reason)
	t.st.keep = false
	e.scheduleLocked(t)
	e.mu.Unlock()
	t.ended1(reason, true)
	e.poke()
}
