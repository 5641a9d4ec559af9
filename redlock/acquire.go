package redlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// acquireResult is the outcome of one acquire round.
type acquireResult struct {
	lease *lease
	err   error // too few nodes answered, or a late quorum
	loss  loss  // why a round without lease or err lost
	// wait is, for lostHeld, when enough of the holder's keys can have
	// expired to free a quorum; for lostQuarantined, when the first node in
	// its restart delay counts again.
	wait   time.Duration
	took   time.Duration // how long the round took
	tally  tally         // the replies in when the round was decided
	holder string        // lostHeld: the value of the holder's key on one of its nodes
	slow   bool          // err: too few nodes answered in time (see gate)
}

// loss is why an acquire round that ended without a lease or an error was
// lost; it chooses the wait before the next round, and the debug log names
// it.
type loss int8

const (
	notLost         loss = iota // the round won, failed, or its ctx ended
	lostHeld                    // one holder has a quorum
	lostSplit                   // no single holder has a quorum: rivals split the nodes
	lostQuarantined             // too few answered, but nodes in their restart delay would have made up a quorum
	lostSkipped                 // too few answered; the nodes left out of the round are about to be free
)

// String returns the outcome a debug log line names: "held", "split",
// "quarantined" or "skipped".
func (l loss) String() string {
	switch l {
	case lostHeld:
		return "held"
	case lostSplit:
		return "split"
	case lostQuarantined:
		return "quarantined"
	case lostSkipped:
		return "skipped"
	}
	return "none"
}

// acquired is one node's reply to acquireScript.
type acquired struct {
	won    bool
	token  uint64        // won: the node's counter, just INCRed
	pttl   time.Duration // held: the key's PTTL; never for a key without expiry
	holder string        // held: the first word of the key's value
	value  string        // held: the key's value ("" for a key that is not a string)
}

func (a acquired) status() status {
	if a.won {
		return yes
	}
	return no
}

// parseAcquired reads acquireScript's reply: {1, token} or {0, pttl, value}.
func parseAcquired(v []any, err error) (acquired, error) {
	if err != nil {
		return acquired{}, err
	}
	if len(v) < 2 {
		return acquired{}, fmt.Errorf("acquire script replied %v", v)
	}
	flag, _ := v[0].(int64)
	n, _ := v[1].(int64)
	if flag == 1 {
		return acquired{won: true, token: uint64(n)}, nil
	}
	a := acquired{pttl: never}
	if n >= 0 {
		a.pttl = time.Duration(n) * time.Millisecond
	}
	if len(v) > 2 {
		a.value, _ = v[2].(string)
		a.holder, _, _ = strings.Cut(a.value, " ")
	}
	return a, nil
}

// acquire runs one round of the algorithm: acquireScript on every node, a
// quorum within validity, the fencing write-back when the nodes' counters
// disagree, and compare-and-delete everywhere after a failure.
func (b *Backend) acquire(ctx context.Context, key, id string, c backend.Candidate) acquireResult {
	q := b.quorum
	counter := key + counterSuffix
	ttlArg := strconv.FormatInt(c.TTL.Milliseconds(), 10)
	if b.restarts != nil {
		b.restarts.noteTTL(c.TTL)
	}
	floor := strconv.FormatUint(b.floor(key), 10)
	after := b.releasing(key)
	start := time.Now()
	r := startRoundSkip(ctx, b, after, b.lagging(after), counted(b, func(ctx context.Context, cl redis.UniversalClient, _ int) (acquired, error) {
		return parseAcquired(acquireScript.Run(ctx, cl, []string{key, counter}, id, c.Identity, ttlArg, floor).Slice())
	}))
	// Wait for every node unless the round is decided: a quorum is ours,
	// or others hold one (failed nodes alone do not decide it, so that
	// lost sees the holder's PTTLs).
	got, t := r.collect(ctx, func(t tally) bool { return t.yes >= q || t.no >= q })
	var res acquireResult
	if t.yes >= q {
		res = b.win(ctx, r, got, start, id, c)
	} else {
		b.cleanup(key, id, r)
		res = lose(ctx, r, got, t, q)
	}
	res.took, res.tally = time.Since(start), t
	return res
}

// lose reads a round that no quorum granted: lost (see [loss]), failed
// because too few nodes answered, or ended by ctx. got and t are the
// replies in and their tally.
func lose(ctx context.Context, r *round[acquired], got []*reply[acquired], t tally, q int) acquireResult {
	switch {
	case ctx.Err() != nil:
		return acquireResult{}
	case t.yes+t.no < q:
		if wait, ok := quarantineWait(got, q, t); ok {
			return acquireResult{loss: lostQuarantined, wait: wait} // as behind a holder
		}
		if r.skip != nil { // the nodes left out are about to be free: retry soon with them
			return acquireResult{loss: lostSkipped}
		}
		return acquireResult{slow: true, err: fmt.Errorf("quorum unreachable: %d of %d nodes answered, need %d: %s", t.yes+t.no, t.nodes, q, t.nodeErr())}
	}
	return lost(got, q)
}

// win makes a lease of a round that a quorum granted, unless the quorum
// came too late or the fencing write-back fails. got are the replies in.
func (b *Backend) win(ctx context.Context, r *round[acquired], got []*reply[acquired], start time.Time, id string, c backend.Candidate) acquireResult {
	key := b.lockKey(c.Election)
	deadline := b.cfg.deadline(start, c.TTL)
	if elapsed := time.Since(start); !time.Now().Before(deadline) {
		b.cleanup(key, id, r)
		return acquireResult{slow: true, err: fmt.Errorf("late quorum: granted in %v, past the validity of a %v TTL", elapsed, c.TTL)}
	}
	var tokens []uint64
	for _, g := range got {
		if g != nil && g.status() == yes {
			tokens = append(tokens, g.val.token)
		}
	}
	token := slices.Max(tokens)
	if agree := countEqual(tokens, token); agree < b.quorum {
		if err := b.writeBack(ctx, key, id, token, c.Identity); err != nil {
			b.cleanup(key, id, r)
			return acquireResult{err: err}
		}
		if !time.Now().Before(deadline) {
			b.cleanup(key, id, r)
			return acquireResult{slow: true, err: fmt.Errorf("late quorum: the fencing write-back ended past the validity of a %v TTL", c.TTL)}
		}
	}
	l := &lease{b: b, election: c.Election, key: key, id: id, value: encodeValue(id, token, c.Identity), token: token,
		ttl: c.TTL, deadline: deadline, lost: make(chan struct{}), last: r.chain(), skipped: r.skip,
		renewed: start, used: start} // just confirmed: no rider renewal yet
	if !b.track(l) {
		b.cleanup(key, id, r)
		return acquireResult{err: backend.ErrClosed}
	}
	b.noteToken(key, token)
	b.raiseCounters(key, id, token, l.value, r)
	return acquireResult{lease: l}
}

// countEqual counts the tokens equal to t.
func countEqual(tokens []uint64, t uint64) int {
	n := 0
	for _, x := range tokens {
		if x == t {
			n++
		}
	}
	return n
}

// lost reads a round that others won: when one holder (one value's first
// word) has a quorum, the wait until enough of its keys can have expired to
// free a quorum, and the holder's value; otherwise a split. Nodes that are
// ours or held by another rival count as free at once (their keys are being
// deleted), nodes that failed or did not reply as never free.
func lost(got []*reply[acquired], q int) acquireResult {
	holders := make(map[string]int)
	for _, g := range got {
		if g != nil && g.status() == no {
			holders[g.val.holder]++
		}
	}
	holder, most := "", 0
	for h, k := range holders {
		if k > most {
			holder, most = h, k
		}
	}
	if most < q {
		return acquireResult{loss: lostSplit}
	}
	// The holder's value as most of its nodes have it: a node that missed
	// the fencing write-back keeps its own counter's token in the value.
	values := make(map[string]int)
	var value string
	free := make([]time.Duration, 0, len(got))
	for _, g := range got {
		switch {
		case g == nil || g.status() == failed:
			free = append(free, never)
		case g.status() == no && g.val.holder == holder:
			free = append(free, g.val.pttl)
			values[g.val.value]++
			if k := values[g.val.value]; k > values[value] || k == values[value] && g.val.value < value {
				value = g.val.value
			}
		default:
			free = append(free, 0)
		}
	}
	slices.Sort(free)
	return acquireResult{loss: lostHeld, wait: free[q-1], holder: value}
}

// writeBack writes token back to the nodes (writeBackScript) and needs a
// quorum of them still holding our lease.
func (b *Backend) writeBack(ctx context.Context, key, id string, token uint64, identity string) error {
	q := b.quorum
	tok := strconv.FormatUint(token, 10)
	value := encodeValue(id, token, identity)
	r := startRound(ctx, b, nil, counted(b, func(ctx context.Context, cl redis.UniversalClient, _ int) (answer, error) {
		return answerOf(writeBackScript.Run(ctx, cl, []string{key, key + counterSuffix}, id, tok, value).Int64())
	}))
	_, t := r.collect(ctx, func(t tally) bool { return t.yes >= q })
	if t.yes < q {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("fencing write-back reached %d of %d nodes, need %d: %s", t.yes, t.nodes, q, t.nodeErr())
	}
	return nil
}

// cleanup sends compare-and-delete without a notification (cleanupScript)
// for lease id to every node of an acquire round whose reply was not a
// definite "held by another": those that granted it, failed or had not
// answered. Each node's delete is sent after that node's acquire request
// has finished, so it cannot overtake it. It runs in the background with a
// fresh context bounded by RequestTimeout.
func (b *Backend) cleanup(key, id string, r *round[acquired]) {
	for i, rep := range r.replies {
		if r.skipped(i) {
			continue // nothing was sent
		}
		cl := b.clients[i]
		b.spawn(func() {
			<-rep.done
			if rep.status() == no {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.requestTimeout)
			defer cancel()
			cleanupScript.Run(ctx, cl, []string{key}, id)
		})
	}
}

// noteRelease records done, the release round of a lease on key, so that
// this Backend's next acquire of key is sent to each node only after that
// node's release request has finished. Release returns as soon as no
// quorum can hold the lease, with deletions still in flight; an acquire
// that overtook one of them would find the old key, hold the new lease on
// fewer nodes, and often need a fencing write-back round, as the nodes'
// counters then disagree.
func (b *Backend) noteRelease(key string, done []<-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.released) >= 64 {
		for k, d := range b.released {
			if finished(d) {
				delete(b.released, k)
			}
		}
	}
	b.released[key] = done
}

// releasing returns the release round of key that an acquire must follow,
// or nil when there is none still running.
func (b *Backend) releasing(key string) []<-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.released[key]
	if d != nil && finished(d) {
		delete(b.released, key)
		return nil
	}
	return d
}

// finished reports whether every channel in done is closed.
func finished(done []<-chan struct{}) bool {
	for _, c := range done {
		select {
		case <-c:
		default:
			return false
		}
	}
	return true
}

// lagging returns the nodes an acquire round of a key should leave out,
// given after, the key's latest release round from this Backend: those
// still busy with it, as long as the others can make a quorum on their own;
// nil when there are none or too few others. A candidate that releases and
// campaigns again at once (a hand-over within the process, or a loop)
// otherwise queues each new request behind the previous one on the slowest
// nodes: a round needs only the fastest quorum, so such a node falls
// further behind with every term until its requests time out. A node left
// out was sent nothing, so it needs no clean-up, and the lease's release
// sends it nothing either unless a renewal has reached it since.
func (b *Backend) lagging(after []<-chan struct{}) []bool {
	var skip []bool
	free := 0
	for i, c := range after {
		select {
		case <-c:
			free++
		default:
			if skip == nil {
				skip = make([]bool, len(after))
			}
			skip[i] = true
		}
	}
	if skip == nil || free < b.quorum {
		return nil
	}
	return skip
}

// maxFloors bounds the tokens remembered by lock key; past it the map
// starts afresh (a floor is only an optimisation).
const maxFloors = 4096

// noteToken records token, the token of a lease of key just won.
func (b *Backend) noteToken(key string, token uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.floors) >= maxFloors {
		clear(b.floors)
	}
	if token > b.floors[key] {
		b.floors[key] = token
	}
}

// floor returns the lowest token a new lease of key can get: one more than
// the highest this Backend has seen for it, or 0 when it has seen none.
// acquireScript raises a node's counter to it, so the counters of nodes an
// acquire round left out (or that missed terms for another reason) catch up
// at their next round instead of disagreeing with the others and costing a
// fencing write-back.
func (b *Backend) floor(key string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.floors[key]; ok {
		return t + 1
	}
	return 0
}
