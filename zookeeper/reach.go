package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// connectPatience bounds how long a call waits for a new session's first
// handshake before it returns an error naming the cause: a server that
// accepts connections but never answers would otherwise hold it for up to
// 20/3 × the session timeout (go-zookeeper's handshake read deadline).
const connectPatience = 3 * time.Second

// problems remembers the last connection problem of a session, so that an
// error can say why no server could be reached instead of go-zookeeper's
// bare zk.ErrNoServer.
type problems struct {
	servers []string
	mu      sync.Mutex
	last    string
}

// dialed records the outcome of a dial of addr.
func (p *problems) dialed(addr string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.last = err.Error()
		return
	}
	p.last = addr + " accepted the connection but has not answered the session handshake"
}

// logged records a go-zookeeper log line that reports a failed handshake
// (failed dials are recorded by dialed).
func (p *problems) logged(line string) {
	if strings.HasPrefix(line, "authentication failed: ") {
		p.mu.Lock()
		p.last = line
		p.mu.Unlock()
	}
}

// explain adds the servers and the last connection problem to err.
func (p *problems) explain(err error) error {
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	if last == "" {
		last = "none yet"
	}
	return fmt.Errorf("%w (servers %s; last connection problem: %s)", err, strings.Join(p.servers, ","), last)
}

// problemLogger records go-zookeeper's log lines in a session's problems
// and passes them on.
type problemLogger struct {
	p    *problems
	next zk.Logger
}

func (l problemLogger) Printf(format string, args ...any) {
	l.p.logged(fmt.Sprintf(format, args...))
	l.next.Printf(format, args...)
}

// connecting waits for a session that has not completed its first
// handshake yet, until it has, ctx ends, or it is clear that no server can
// be reached: go-zookeeper fails queued requests with zk.ErrNoServer each
// time it has tried every server (a probe request is queued to learn it),
// and a handshake not answered within connectPatience counts as well. The
// error then names the last connection problem. It returns nil otherwise;
// the caller then waits for the session as usual.
func (b *Backend) connecting(ctx context.Context, s *session) error {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	probe := make(chan error, 1)
	go func() {
		_, err := do(b, pctx, func() (bool, error) {
			ok, _, err := s.conn.Exists("/")
			return ok, err
		}, nil)
		probe <- err
	}()
	patience := time.NewTimer(connectPatience)
	defer patience.Stop()
	select {
	case err := <-probe:
		if errors.Is(err, zk.ErrNoServer) {
			return s.problems.explain(err)
		}
	case <-patience.C:
		return s.problems.explain(fmt.Errorf("no session established within %v", connectPatience))
	case <-s.ready:
	case <-ctx.Done():
	}
	return nil
}
