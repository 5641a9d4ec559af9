package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// notifier wakes waiting campaigns when a release is announced. Every
// release PUBLISHes on the election's channel (lock key + "//released") on
// each node; a Backend subscribes to an election's channel only while one of
// its campaigns (or watches) waits on it, so uncontended elections cost no
// pub/sub traffic at all. One subscribing node is enough to hear a release;
// missing one costs only time, as a waiter also sleeps until the holder's
// PTTL.
type notifier struct {
	b         *Backend
	startOnce sync.Once

	mu      sync.Mutex
	closed  bool
	subs    []*redis.PubSub       // per node, once started
	ops     []chan subOp          // per node: SUBSCRIBE/UNSUBSCRIBE in order
	entries map[string]*waitEntry // by channel
}

// subOp is a subscription change for one node's writer.
type subOp struct {
	subscribe bool
	channel   string
}

// waitEntry is the set of waiters on one channel.
type waitEntry struct {
	waiters   map[*waiter]struct{}
	confirmed chan struct{} // closed when a node confirms the subscription
	once      sync.Once
}

// waiter is one campaign or watch waiting on a lock key.
type waiter struct {
	channel  string
	campaign string        // its own releases do not wake it
	ch       chan struct{} // buffered: a release happened since drain
	entry    *waitEntry
}

func newNotifier(b *Backend) *notifier {
	return &notifier{b: b, entries: make(map[string]*waitEntry)}
}

// drain forgets releases announced before the next acquire round.
func (w *waiter) drain() {
	select {
	case <-w.ch:
	default:
	}
}

// register adds a waiter on key, subscribing to its channel if it is the
// first, and waits until one node has confirmed the subscription (so a
// release after the caller's next round is heard), at most RequestTimeout (nodes
// may be down). It returns ctx.Err() if ctx ends first; the caller must
// unregister the waiter in any case.
func (n *notifier) register(ctx context.Context, key, campaign string) (*waiter, error) {
	n.startOnce.Do(n.start)
	ch := releaseChannel(key)
	w := &waiter{channel: ch, campaign: campaign, ch: make(chan struct{}, 1)}
	n.mu.Lock()
	e := n.entries[ch]
	if e == nil {
		e = &waitEntry{waiters: make(map[*waiter]struct{}), confirmed: make(chan struct{})}
		n.entries[ch] = e
		n.send(subOp{subscribe: true, channel: ch})
	}
	e.waiters[w] = struct{}{}
	w.entry = e
	n.mu.Unlock()

	t := time.NewTimer(n.b.cfg.requestTimeout)
	defer t.Stop()
	select {
	case <-e.confirmed:
	case <-t.C:
	case <-n.b.done:
	case <-ctx.Done():
		return w, ctx.Err()
	}
	return w, nil
}

// unregister removes w, unsubscribing when it was the last waiter on its
// channel.
func (n *notifier) unregister(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.entries[w.channel]
	if e == nil {
		return
	}
	delete(e.waiters, w)
	if len(e.waiters) == 0 {
		delete(n.entries, w.channel)
		n.send(subOp{subscribe: false, channel: w.channel})
	}
}

// send queues op for every node's writer; n.mu must be held. The queues
// are long enough for any burst a Backend's campaigns make; a full one (a
// node stalled for long) drops the change, which costs that node's
// notifications only.
func (n *notifier) send(op subOp) {
	if n.closed {
		return
	}
	for _, q := range n.ops {
		select {
		case q <- op:
		default:
		}
	}
}

// start creates one PubSub per node, a writer that applies subscription
// changes in order, and a listener that dispatches messages.
func (n *notifier) start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, cl := range n.b.clients {
		ps := cl.Subscribe(context.Background())
		q := make(chan subOp, 1024)
		n.subs = append(n.subs, ps)
		n.ops = append(n.ops, q)
		if !n.b.spawn(func() { n.write(ps, q) }) || !n.b.spawn(func() { n.listen(ps) }) {
			_ = ps.Close()
		}
	}
}

// write applies subscription changes to one node, in order. A change that
// fails (the node is down) is dropped; go-redis resubscribes what the
// PubSub holds when it reconnects.
func (n *notifier) write(ps *redis.PubSub, q <-chan subOp) {
	for {
		select {
		case <-n.b.done:
			return
		case op := <-q:
			ctx, cancel := context.WithTimeout(context.Background(), n.b.cfg.requestTimeout)
			if op.subscribe {
				_ = ps.Subscribe(ctx, op.channel)
			} else {
				_ = ps.Unsubscribe(ctx, op.channel)
			}
			cancel()
		}
	}
}

// listen dispatches one node's messages until the Backend closes, backing
// off after errors (go-redis reconnects and resubscribes on the next
// Receive).
func (n *notifier) listen(ps *redis.PubSub) {
	backoff := 10 * time.Millisecond
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			t := time.NewTimer(backoff)
			select {
			case <-n.b.done:
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				n.confirm(m.Channel)
			}
		case *redis.Message:
			n.dispatch(m.Channel, m.Payload)
		}
	}
}

// confirm marks channel's subscription as in effect. (A confirmation of an
// earlier subscription to the same channel, unsubscribed since, may arrive
// late and confirm early; that costs at most a missed notification.)
func (n *notifier) confirm(channel string) {
	n.mu.Lock()
	e := n.entries[channel]
	n.mu.Unlock()
	if e != nil {
		e.once.Do(func() { close(e.confirmed) })
	}
}

// dispatch wakes the waiters on channel, except the campaign that released.
func (n *notifier) dispatch(channel, releaser string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.entries[channel]
	if e == nil {
		return
	}
	for w := range e.waiters {
		if w.campaign != "" && len(releaser) >= campaignIDLen && w.campaign == releaser[:campaignIDLen] {
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

// close ends the subscriptions; the listeners and writers return.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	subs := n.subs
	n.subs = nil
	n.mu.Unlock()
	for _, ps := range subs {
		_ = ps.Close()
	}
}
