package integration_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// termLog records the terms of several in-process electors of one driver,
// for the fault tests' checks.
type termLog struct {
	ttl    time.Duration
	margin time.Duration // the electors' SafetyMargin; 0: the default
	logger func(*testing.T) *slog.Logger

	mu      sync.Mutex
	terms   []loggedTerm
	elected chan loggedTerm // every election, as it happens
	ended   chan loggedTerm // every step-down, as it happens
}

type loggedTerm struct {
	who        string
	token      uint64
	start, end time.Time // OnElected called; its ctx ended (zero while leading)
}

// newTermLog returns a termLog whose electors campaign with ttl and log
// through logger(t).
func newTermLog(ttl time.Duration, logger func(*testing.T) *slog.Logger) *termLog {
	return &termLog{ttl: ttl, logger: logger, elected: make(chan loggedTerm, 64), ended: make(chan loggedTerm, 64)}
}

// elector returns an Elector for election on b that records its terms.
func (tl *termLog) elector(t *testing.T, b backend.Backend, election, who string) *elector.Elector {
	t.Helper()
	e, err := elector.New(b, election, &elector.Options{
		Identity:     who,
		TTL:          tl.ttl,
		SafetyMargin: tl.margin,
		Logger:       tl.logger(t),
		OnElected: func(ctx context.Context, term elector.Term) {
			lt := loggedTerm{who: who, token: term.Token, start: time.Now()}
			tl.elected <- lt
			<-ctx.Done()
			lt.end = time.Now()
			tl.mu.Lock()
			tl.terms = append(tl.terms, lt)
			tl.mu.Unlock()
			tl.ended <- lt
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkNoOverlap fails t if two recorded terms overlap or tokens do not
// increase in the order of election.
func (tl *termLog) checkNoOverlap(t *testing.T) {
	t.Helper()
	tl.mu.Lock()
	terms := slices.Clone(tl.terms)
	tl.mu.Unlock()
	slices.SortFunc(terms, func(a, b loggedTerm) int { return a.start.Compare(b.start) })
	for i := 1; i < len(terms); i++ {
		p, c := terms[i-1], terms[i]
		if c.start.Before(p.end) {
			t.Errorf("terms overlap: %s (token %d) elected %v before %s (token %d) stepped down", c.who, c.token, p.end.Sub(c.start), p.who, p.token)
		}
		if c.token <= p.token {
			t.Errorf("tokens: %s got %d after %s's %d, want greater", c.who, c.token, p.who, p.token)
		}
	}
}

// runElector runs e until the test ends.
func runElector(t *testing.T, e *elector.Elector) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
}

// waitTerm waits up to d for the next election or step-down on ch.
func waitTerm(t *testing.T, ch <-chan loggedTerm, d time.Duration, what string) loggedTerm {
	t.Helper()
	select {
	case lt := <-ch:
		return lt
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
		return loggedTerm{}
	}
}
