package term

import (
	"reflect"
	"sync"
)

// shardSize is the most leases one goroutine watches for loss: a
// reflect.Select over their Lost channels, rebuilt when the set changes.
const shardSize = 256

// lossWatch watches the Lost channels of its engine's terms, in shards of
// up to shardSize terms with one goroutine each while it has any, so that a
// lease the driver knows is gone ends its term at once without a goroutine
// per term. Everything is guarded by mu, the engine's.
type lossWatch struct {
	mu     *sync.Mutex
	shards []*lostShard
	at     map[*Term]watchSlot // where each watched term is
	lost   func(*Term)         // called without mu when a watched term's lease is lost
	start  func(run func())    // starts a shard's goroutine, counting it in; mu held
	exited func()              // counts a shard's goroutine out; mu held
}

// watchSlot is where a term is watched: its shard, and its index in the
// shard's terms.
type watchSlot struct {
	shard *lostShard
	slot  int
}

// lostShard is one shard of a lossWatch.
type lostShard struct {
	w       *lossWatch
	terms   []*Term
	running bool
	changed chan struct{} // capacity 1: terms changed
}

// watchLocked starts watching t's Lost channel.
func (w *lossWatch) watchLocked(t *Term) {
	var s *lostShard
	for _, c := range w.shards {
		if len(c.terms) < shardSize {
			s = c
			break
		}
	}
	if s == nil {
		s = &lostShard{w: w, changed: make(chan struct{}, 1)}
		w.shards = append(w.shards, s)
	}
	if w.at == nil {
		w.at = make(map[*Term]watchSlot)
	}
	w.at[t] = watchSlot{shard: s, slot: len(s.terms)}
	s.terms = append(s.terms, t)
	if !s.running {
		s.running = true
		w.start(s.run)
		return
	}
	s.poke()
}

// unwatchLocked stops watching t's Lost channel.
func (w *lossWatch) unwatchLocked(t *Term) {
	at, ok := w.at[t]
	if !ok {
		return
	}
	delete(w.at, t)
	s := at.shard
	last := len(s.terms) - 1
	if moved := s.terms[last]; moved != t {
		s.terms[at.slot] = moved
		w.at[moved] = at
	}
	s.terms[last] = nil
	s.terms = s.terms[:last]
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
		s.w.mu.Lock()
		if len(s.terms) == 0 {
			s.running = false
			s.w.exited()
			s.w.mu.Unlock()
			return
		}
		terms = append(terms[:0], s.terms...)
		s.w.mu.Unlock()
		cases = append(cases[:0], reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.changed)})
		for _, t := range terms {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.lost)})
		}
		i, _, _ := reflect.Select(cases)
		if i > 0 {
			s.w.lost(terms[i-1])
		}
		clear(cases)
		clear(terms)
	}
}
