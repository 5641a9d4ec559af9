package elector

import (
	"fmt"
	"time"
)

// Term is one period of leadership: from the moment this elector won the
// election until its lease ended. [Options.OnElected] receives it when the
// term starts and [Options.OnRevoked] when it has ended.
type Term struct {
	// Election is the election's name.
	Election string
	// Identity is this elector's identity ([Options.Identity]).
	Identity string
	// Token is the term's fencing token. Tokens strictly increase across
	// the terms of an election, whichever elector holds them: pass it with
	// every write to a protected resource, and have the resource refuse a
	// token lower than the highest it has seen. See the package
	// documentation's Fencing section.
	Token uint64
	// Start is when this elector learned it had won, on the local clock
	// (with its monotonic reading).
	Start time.Time
}

// String returns a short description such as `"jobs" token 42 (alice)`.
func (t Term) String() string {
	return fmt.Sprintf("%q token %d (%s)", t.Election, t.Token, t.Identity)
}
