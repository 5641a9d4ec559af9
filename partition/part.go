package partition

import (
	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/term"
)

// part is a partition this member owns, or owned and is handing over. Its
// lease runs on the term engine (internal/term), which renews it, ends it at
// its step-down point or on its loss, and runs OnAssigned.
type part struct {
	as       Assignment
	term     elector.Term
	t        *term.Term
	reason   error // why ownership ended; nil while it lasts
	returned bool  // OnAssigned has returned (or was not called: t.Late)
	// releasing: the release (then OnRevoked) is under way.
	releasing bool
}
