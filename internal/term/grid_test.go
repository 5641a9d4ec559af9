package term

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestOnGridAligns: renewals that are always due (a ZooKeeper Deadline
// trails its newest proof) land on one process-wide grid whatever their
// own phase, so that the elections of one session renew at the same
// instants and share a request (TestScale: 16-32 packets per interval at
// 200 elections before, 11-15 after).
func TestOnGridAligns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 250 * time.Millisecond
		var at []time.Duration // grid phase of each renewal instant
		for _, offset := range []time.Duration{0, 7 * time.Millisecond, 130 * time.Millisecond, 249 * time.Millisecond} {
			time.Sleep(offset)
			d := onGrid(time.Now(), period)
			if d < period/2 || d >= 3*period/2 {
				t.Errorf("after %v: next renewal in %v; want within [%v, %v)", offset, d, period/2, 3*period/2)
			}
			phase := ((time.Since(renewGrid)+d)%period + period) % period
			at = append(at, phase)
		}
		for i, p := range at {
			if p != 0 {
				t.Errorf("renewal %d lands %v past a grid instant; want on the grid", i, p)
			}
		}
	})
}
