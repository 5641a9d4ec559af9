package elector

import "time"

// EventKind says what an [Event] reports.
type EventKind int

// The kinds of [Event]. A term reports EventCampaign (won), EventElected,
// EventRenew for each renewal, EventEnded, EventRelease, then EventRevoked.
const (
	// EventCampaign: one attempt to win the election ended, won (Err nil) or
	// not. Took is how long it waited, including time queued behind a leader.
	EventCampaign EventKind = iota + 1
	// EventElected: a term started. Term is set.
	EventElected
	// EventRenew: one renewal attempt ended. Term, Took and Err are set.
	EventRenew
	// EventRevoked: a term ended. Term is set and Err is the reason, as given
	// to OnRevoked.
	EventRevoked
	// EventRelease: the lease was given back after a term. Term, Took and
	// Err are set.
	EventRelease
	// EventEnded: a term ended: its ctx was cancelled at this instant and
	// [Elector.IsLeader] turned false. Term is set and Err is the reason.
	// EventRevoked follows once OnElected has returned and the lease is
	// released.
	EventEnded
)

// String returns the kind's name, such as "campaign".
func (k EventKind) String() string {
	switch k {
	case EventCampaign:
		return "campaign"
	case EventElected:
		return "elected"
	case EventRenew:
		return "renew"
	case EventRevoked:
		return "revoked"
	case EventRelease:
		return "release"
	case EventEnded:
		return "ended"
	}
	return "unknown"
}

// Event is one thing an [Elector] did, reported to [Options.Observer] for
// metrics. New kinds may be added; observers ignore kinds they do not know.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Election is the election's name.
	Election string
	// Term is the term concerned; zero for EventCampaign.
	Term Term
	// Took is how long the backend call took (campaign, renew, release).
	Took time.Duration
	// Err is the call's error, or the reason a term ended (EventRevoked).
	Err error
}
