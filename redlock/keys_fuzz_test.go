package redlock

import (
	"testing"

	"github.com/leaderkit/elector/backend"
)

// FuzzKeys: under one prefix, the lock key, fencing counter and release
// channel of a valid election never equal the lock key of another valid
// election, nor its counter or channel.
func FuzzKeys(f *testing.F) {
	f.Add("elector:", "jobs", "jobs/token")
	f.Add("", "a", "a//token")
	f.Add("{e}:", "a/released", "a")
	f.Fuzz(func(t *testing.T, prefix, a, b string) {
		if a == b || backend.ValidateElection(a) != nil || backend.ValidateElection(b) != nil {
			return
		}
		be := &Backend{cfg: config{prefix: prefix}}
		keys := func(e string) []string {
			k := be.lockKey(e)
			return []string{k, k + counterSuffix, k + channelSuffix}
		}
		for _, ka := range keys(a) {
			for _, kb := range keys(b) {
				if ka == kb {
					t.Fatalf("elections %q and %q under prefix %q share the key %q", a, b, prefix, ka)
				}
			}
		}
	})
}
