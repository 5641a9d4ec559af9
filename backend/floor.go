package backend

import (
	"context"
	"time"
)

// TTLFloor is an optional ability of a [Backend] whose store's own
// configuration sets the shortest TTL it can keep safe, found by type
// assertion. The zookeeper driver has it: a follower answers its clients
// for up to syncLimit × tickTime after its leader last counted them, so a
// lease's Deadline must trail its answers by that long, and Campaign
// refuses a TTL that leaves no time to lead. Tools report it (elect status,
// elect compare), and a caller can check its TTL before it campaigns.
type TTLFloor interface {
	// MinTTL returns the shortest Candidate.TTL a Campaign accepts, and the
	// store configuration it follows from, in a few words for messages
	// (for example "syncLimit 5 × tickTime 2s, conf of zk1:2181"). It
	// may ask the store, and returns ctx's error if ctx ends first.
	MinTTL(ctx context.Context) (time.Duration, string, error)
}
