package zookeeper

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// housekeeper deletes the znodes of one session that nobody will use (a
// Campaign whose ctx ended, a lease lost to a disconnection, a create whose
// outcome could not be learned) as soon as the session is reachable. This is
// the only work the driver does unasked: Curator's "guaranteed delete".
type housekeeper struct {
	s    *session
	kick chan struct{} // wakes run when work is queued

	mu      sync.Mutex
	orphans map[string]orphan // znodes to delete, by path
}

// orphan is a candidate znode nobody uses, or (prefix set) any child whose
// path starts with the key: a create whose outcome is unknown.
type orphan struct {
	session int64 // the session that made it; the znode goes with it
	prefix  bool
}

func newHousekeeper(s *session) *housekeeper {
	return &housekeeper{s: s, kick: make(chan struct{}, 1), orphans: make(map[string]orphan)}
}

// abandon queues the deletion of a znode that session id made (with prefix
// set: of every child whose path starts with path).
func (h *housekeeper) abandon(path string, id int64, prefix bool) {
	if id == 0 {
		return // no session: no znode
	}
	h.mu.Lock()
	h.orphans[path] = orphan{session: id, prefix: prefix}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// sweepRetry is how long the janitor waits to try again after a delete
// failed on a session that looked connected (a slow or overloaded server).
const sweepRetry = 250 * time.Millisecond

// run deletes orphans each time the session (re)connects or work is queued,
// and again after sweepRetry while a delete fails, until the session closes.
func (h *housekeeper) run() {
	defer h.s.wg.Done()
	for {
		st, changed := h.s.state()
		if st.closed {
			return
		}
		var retry <-chan time.Time // nil: no delete failed
		if st.up {
			if !h.s.settle() {
				return
			}
			if !h.sweep(st.id) {
				retry = time.After(sweepRetry)
			}
		}
		select {
		case <-h.s.done:
			return
		case <-h.kick:
		case <-changed:
		case <-retry:
		}
	}
}

// sweep deletes the orphans of session id and forgets those of older
// sessions, whose ephemeral znodes went with them. It reports whether
// every deletion it tried succeeded.
func (h *housekeeper) sweep(id int64) bool {
	done := true
	h.mu.Lock()
	work := make(map[string]orphan)
	for p, o := range h.orphans {
		if o.session != id {
			delete(h.orphans, p)
		} else {
			work[p] = o
		}
	}
	h.mu.Unlock()
	for p, o := range work {
		if !h.delete(p, o) {
			done = false
			continue
		}
		h.mu.Lock()
		if h.orphans[p] == o {
			delete(h.orphans, p)
		}
		h.mu.Unlock()
	}
	return done
}

// delete deletes the znode p, or every child of p's parent whose path
// starts with p, and reports whether nothing is left to do.
func (h *housekeeper) delete(p string, o orphan) bool {
	conn := h.s.conn
	paths := []string{p}
	if o.prefix {
		dir := p[:strings.LastIndexByte(p, '/')]
		kids, _, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return true
		}
		if err != nil {
			return false
		}
		paths = paths[:0]
		for _, k := range kids {
			if strings.HasPrefix(dir+"/"+k, p) {
				paths = append(paths, dir+"/"+k)
			}
		}
	}
	for _, p := range paths {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false
		}
	}
	return true
}
