package chaos

import (
	"encoding/json"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Event kinds. Candidates report [KindStart], [KindElected],
// [KindStepdown] and [KindLeave]; the [Fence] reports [KindWrite]; the
// [Nemesis] reports the rest.
const (
	KindStart    = "start"    // a candidate process started
	KindElected  = "elected"  // OnElected began: the term's first instant
	KindStepdown = "stepdown" // the term's ctx was seen done (or it resigned): its last instant
	KindWrite    = "write"    // the fence accepted (OK) or refused a write
	KindKill     = "kill"     // the nemesis sent SIGKILL to Proc
	KindPause    = "pause"    // the nemesis sent SIGSTOP to Proc
	KindResume   = "resume"   // the nemesis sent SIGCONT to Proc
	KindExit     = "exit"     // Proc exited on its own (Note: why)
	KindLeave    = "leave"    // Proc began to leave gracefully: it is no candidate from then on
	KindFault    = "fault"    // a fault began (Note: its kind; Proc: target, if a candidate)
	KindHeal     = "heal"     // the fault begun last ended (Note: its kind)
	// KindRefused: a candidate's Campaign was refused for good (Note: the
	// error), as a replica left on the old store after a migration must be.
	KindRefused = "refused"
	// KindRevoked: a partition's ownership ended and its lease was released
	// (Note: why — "moved", "leaving", or "lost: ..."); it follows the
	// term's stepdown and names the reason the stepdown could not know yet.
	KindRevoked = "revoked"
)

// Event is one entry of a campaign's history. Mono is CLOCK_MONOTONIC in
// nanoseconds, which every process on the machine shares, so events of
// different processes order correctly.
type Event struct {
	Mono  int64  `json:"mono"`
	Proc  string `json:"proc,omitempty"`
	Kind  string `json:"kind"`
	Token uint64 `json:"token,omitempty"`
	OK    bool   `json:"ok,omitempty"`
	Note  string `json:"note,omitempty"`
	// Key names the election an elected, stepdown or write event belongs
	// to when a campaign runs several ("p7" for partition 7, "m3" for the
	// third migration; see [CheckKeys]); "" for the single election and
	// for events that concern every election (faults, kills, exits).
	Key string `json:"key,omitempty"`
}

// Mono returns CLOCK_MONOTONIC in nanoseconds.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // cannot fail on Linux with a valid clock id
	}
	return ts.Nano()
}

// History collects events from many goroutines. The zero value is ready.
type History struct {
	mu     sync.Mutex
	events []Event
}

// Add appends ev.
func (h *History) Add(ev Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

// AddLine parses one JSON line written by a candidate and appends it; it
// reports whether the line was an event (a process killed mid-write leaves
// a torn line, which is dropped).
func (h *History) AddLine(line []byte) (Event, bool) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Kind == "" || ev.Mono == 0 {
		return Event{}, false
	}
	h.Add(ev)
	return ev, true
}

// Events returns a copy of the events sorted by Mono (stable, so events of
// one source keep their order).
func (h *History) Events() []Event {
	h.mu.Lock()
	out := append([]Event(nil), h.events...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Mono < out[j].Mono })
	return out
}
