package partition

import (
	"context"
	"time"

	"github.com/leaderkit/elector/backend"
)

// probeReads is how many partitions' holders a member reads before it
// first campaigns, to tell a cold start from a join.
const probeReads = 8

// readParallelism bounds the concurrent Leader reads of a member reading
// every partition's holder.
const readParallelism = 32

// partsRead is the outcome of one reading of some partitions' holders
// (see reader.parts): holders[i] is the holder of parts[i] (zero for none),
// unless errs[i] is set.
type partsRead struct {
	parts   []int
	holders []backend.Holder
	errs    []error
}

// holdersRead is the outcome of one reading of the partitions' holders.
type holdersRead struct {
	seq    int
	owners []string
	ttls   []time.Duration // each holder's TTL, when the driver tells it
	err    error
	failed bool // some reads failed transiently: the store is loaded
}

// reader reads partitions' holders in the background for the loop, one
// reading at a time: a reading runs in a goroutine of its own and its
// outcome comes back on a channel of its kind, which the loop receives
// from (then clears busy). It knows nothing of the loop: the loop decides
// which reading comes first (see loop.readNext) and what a reading means.
// One reading at a time bounds the Leader reads a member puts on the store
// to one reading's, whatever the kinds due at once.
type reader struct {
	b     backend.Backend
	group string
	n     int
	me    string

	read    chan holdersRead // readings of every holder (see holders)
	checked chan partsRead   // readings of awaited partitions (see planState.awaited)
	lapsed  chan partsRead   // readings of lapsing partitions (see planState.lapsing)
	busy    bool             // a reading is in flight; set and cleared on the loop's goroutine
}

func newReader(b backend.Backend, group string, n int, me string) reader {
	return reader{b: b, group: group, n: n, me: me,
		read: make(chan holdersRead), checked: make(chan partsRead), lapsed: make(chan partsRead)}
}

// holders reads every partition's holder, with at most par reads at once,
// and sends the outcome, tagged seq, on rd.read. When probe is set it first
// reads probeReads partitions spread over the n, and reads no further (the
// outcome has no owners) unless each of them is held by another member.
func (rd *reader) holders(ctx context.Context, seq, par int, probe bool) {
	rd.busy = true
	go func() {
		r := holdersRead{seq: seq}
		if probe && !rd.probe(ctx) {
			r.err = ctx.Err()
			rd.read <- r
			return
		}
		hs, errs := readHolders(ctx, rd.b, rd.n, par, func(p int) string { return Election(rd.group, p) })
		r.err = ctx.Err()
		for _, err := range errs {
			if r.err == nil && backend.IsPermanent(err) {
				r.err = err
			}
			r.failed = r.failed || err != nil
		}
		// A holder that could not be read counts as none: the placement
		// may then place a held partition, whose campaign just waits.
		if r.err == nil {
			r.owners, r.ttls = make([]string, len(hs)), make([]time.Duration, len(hs))
			for p, h := range hs {
				r.owners[p], r.ttls[p] = h.Identity, h.TTL
			}
		}
		rd.read <- r
	}()
}

// probe reports whether probeReads partitions spread over the n all have a
// holder other than this member: whether the group runs already.
func (rd *reader) probe(ctx context.Context) bool {
	k := min(probeReads, rd.n)
	hs, errs := readHolders(ctx, rd.b, k, k, func(i int) string { return Election(rd.group, i*rd.n/k) })
	for i := range hs {
		if errs[i] != nil || hs[i].Identity == "" || hs[i].Identity == rd.me {
			return false
		}
	}
	return true
}

// parts reads the holders of parts and sends the outcome on out.
func (rd *reader) parts(ctx context.Context, parts []int, out chan<- partsRead) {
	rd.busy = true
	go func() {
		hs, errs := readHolders(ctx, rd.b, len(parts), readParallelism, func(i int) string { return Election(rd.group, parts[i]) })
		out <- partsRead{parts: parts, holders: hs, errs: errs}
	}()
}
