package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// warmTimeout bounds the first connection to each node, made before the
// first round of a Backend: RequestTimeout bounds a request, not the making of
// a connection (TCP, TLS and the HELLO handshake) and the loading of a
// script, which on a busy host take longer than a request.
const warmTimeout = time.Second

// warmer connects to the nodes once, before the Backend's first round.
type warmer struct {
	once sync.Once
	mu   sync.Mutex
	ok   int           // nodes connected so far
	left int           // nodes not done yet
	more chan struct{} // closed and replaced at each node done
}

// warm makes sure that before the first round of b a quorum of nodes has a
// connection with the round scripts loaded, or every node has answered, or
// warmTimeout has passed, whichever comes first (so a minority of nodes
// that do not answer delays nothing, and a majority the first round by
// warmTimeout at most, once); it returns at once after that, or when ctx
// ends. Without it, the first round of a fresh process
// spends its RequestTimeout on connecting and loading scripts and, on a busy
// host, misses its quorum: a false "quorum unreachable". The nodes that
// have not connected by then go on connecting in the background, bounded
// by warmTimeout; a failure is left to the rounds to report.
func (b *Backend) warm(ctx context.Context) {
	w := &b.warmer
	w.once.Do(func() {
		w.left, w.more = len(b.clients), make(chan struct{})
		wctx, cancel := context.WithTimeout(context.Background(), max(warmTimeout, b.cfg.requestTimeout))
		var wg sync.WaitGroup
		for _, cl := range b.clients {
			wg.Add(1) // before the goroutine that may be done at once
			ok := b.spawn(func() {
				defer wg.Done()
				w.done(connect(wctx, cl) == nil) // a failure is the rounds' to report
			})
			if !ok {
				wg.Done()
				w.done(false)
			}
		}
		if !b.spawn(func() {
			select {
			case <-b.done:
				cancel()
			case <-wctx.Done():
			}
			wg.Wait()
			cancel()
		}) {
			cancel()
		}
	})
	for {
		w.mu.Lock()
		settled, more := w.ok >= b.quorum || w.left == 0, w.more
		w.mu.Unlock()
		if settled {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			return
		case <-b.done:
			return
		}
	}
}

// done records a node that connected (ok) or failed to.
func (w *warmer) done(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.ok++
	}
	w.left--
	close(w.more)
	w.more = make(chan struct{})
}

// connect makes a connection to cl's node and loads there the scripts a
// first term runs.
func connect(ctx context.Context, cl redis.UniversalClient) error {
	for _, s := range []*redis.Script{acquireScript, readScript, writeBackScript, renewScript, releaseScript} {
		if err := s.Load(ctx, cl).Err(); err != nil {
			return err
		}
	}
	return nil
}
