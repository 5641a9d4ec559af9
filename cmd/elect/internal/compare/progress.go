package compare

import (
	"fmt"
	"time"
)

// Progress tells how far a [Run] has got; [Options.Progress] receives one
// after each trial.
type Progress struct {
	// Phase is the workload being measured ([Workloads]) or [PhaseFloor];
	// Backend the target whose trial just ended.
	Phase, Backend string
	// PhaseDone and PhaseTotal count the trials of this phase, of every
	// backend; Done and Total those of the whole run.
	PhaseDone, PhaseTotal int
	Done, Total           int
	// Elapsed is the time since Run started; Left an estimate of the time
	// still to go.
	Elapsed, Left time.Duration
	// Note, in phase [PhaseCleanup] only, says what the cleanup does now;
	// the counts are zero then.
	Note string
}

// PhaseCleanup is the [Progress] phase of the cleanup, which runs once the
// workloads have ended, also when the run was interrupted.
const PhaseCleanup = "cleanup"

// String formats p as one line: "renew 12/30 (run 140/400), 1m20s left",
// or "cleanup: " and the note.
func (p Progress) String() string {
	if p.Phase == PhaseCleanup {
		return fmt.Sprintf("%s: %s", p.Phase, p.Note)
	}
	return fmt.Sprintf("%s %d/%d (run %d/%d), elapsed %v, about %v left", p.Phase, p.PhaseDone, p.PhaseTotal,
		p.Done, p.Total, p.Elapsed.Round(time.Second), p.Left.Round(time.Second))
}

// tracker counts trials and estimates the time left: the trials of the
// current phase at its average so far, those of later phases at a guess.
type tracker struct {
	fn       func(Progress)
	start    time.Time
	phases   []phase
	backends int
	done     map[string]int
	spent    map[string]time.Duration
	total    int
	finished int
}

func newTracker(fn func(Progress), phases []phase, backends int) *tracker {
	t := &tracker{fn: fn, start: time.Now(), phases: phases, backends: backends,
		done: map[string]int{}, spent: map[string]time.Duration{}}
	for _, ph := range phases {
		t.total += ph.trials * backends
	}
	return t
}

func (t *tracker) trialDone(phase, backend string, d time.Duration) {
	t.done[phase]++
	t.spent[phase] += d
	t.finished++
	if t.fn == nil {
		return
	}
	p := Progress{Phase: phase, Backend: backend, Done: t.finished, Total: t.total, Elapsed: time.Since(t.start)}
	for _, ph := range t.phases {
		n := ph.trials * t.backends
		if ph.name == phase {
			p.PhaseDone, p.PhaseTotal = t.done[phase], n
		}
		per := ph.est
		if k := t.done[ph.name]; k > 0 {
			per = t.spent[ph.name] / time.Duration(k)
		}
		if ph.pace > 0 {
			per = max(per, ph.pace/time.Duration(t.backends))
		}
		p.Left += per * time.Duration(n-t.done[ph.name])
	}
	t.fn(p)
}
