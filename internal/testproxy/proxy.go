// Package testproxy puts a TCP proxy between a test's client and a real
// server, so that the test can break the network between them: cut it (every
// connection closed, new ones closed as they come), stall it (every
// connection closed, new ones accepted and never answered) or partition it
// (open connections kept, every byte dropped both ways), and heal it again.
//
// It serves the drivers' and elect's tests, which run against real
// servers: a fault is injected where the client meets the network, and the
// server and the code under test are what they are in production. It is
// also the one proxy of elect compare ([Start]), which cuts a holder's
// client off as its process's death would, and reads what a client sends
// to count its requests.
package testproxy

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dialTimeout bounds the proxy's dial to its target, so that [Proxy.Close]
// never waits long for a dial in flight.
const dialTimeout = 5 * time.Second

// mode is what a [Proxy] does with the connections and bytes it gets.
type mode int32

const (
	forwarding  mode = iota // bytes pass both ways
	cut                     // connections are closed as they come
	partitioned             // connections are held open, their bytes dropped
)

// Proxy forwards the TCP connections made to [Proxy.Addr] to one target
// address until a test breaks the link. Its methods are safe for concurrent
// use.
type Proxy struct {
	ln     net.Listener
	target string
	dial   func(network, addr string) (net.Conn, error)
	mode   atomic.Int32 // a mode; changed only with mu held
	sent   func() func([]byte)

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open: client sides and target sides
	closed bool
	wg     sync.WaitGroup
}

// New starts a proxy to target (host:port) on a loopback port of its own. It
// forwards until [Proxy.Cut], [Proxy.Stall] or [Proxy.Partition], and is
// closed when tb ends if [Proxy.Close] has not closed it before.
func New(tb testing.TB, target string) *Proxy {
	tb.Helper()
	d := &net.Dialer{Timeout: dialTimeout}
	return start(tb, target, d.Dial)
}

// start starts a proxy that reaches target with dial.
func start(tb testing.TB, target string, dial func(network, addr string) (net.Conn, error)) *Proxy {
	tb.Helper()
	p, err := listen(target, dial, nil)
	if err != nil {
		tb.Fatalf("testproxy: %v", err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Options configures a proxy of [Start].
type Options struct {
	// Sent, when not nil, is called for each connection the proxy
	// forwards, and the function it returns is called with the bytes the
	// client sends on it, in order, as they are passed on; one call at a
	// time per connection. It must not keep the slice.
	Sent func() func([]byte)
}

// Start starts a proxy to target (host:port) on a loopback port of its
// own, as [New] does, for a program: the caller closes it. opts may be nil.
func Start(target string, opts *Options) (*Proxy, error) {
	d := &net.Dialer{Timeout: dialTimeout}
	var sent func() func([]byte)
	if opts != nil {
		sent = opts.Sent
	}
	return listen(target, d.Dial, sent)
}

func listen(target string, dial func(network, addr string) (net.Conn, error), sent func() func([]byte)) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, dial: dial, sent: sent, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the address (host:port) clients dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection, on both sides, and closes each new one as
// soon as it is accepted, until [Proxy.Heal]: the client sees its
// connections end and new ones fail at once, as when the target's host is
// down.
func (p *Proxy) Cut() { p.set(cut, true) }

// Stall closes every connection, on both sides, then accepts new ones,
// reads and drops what they send, and never answers on them nor passes them
// on, until [Proxy.Heal]: the client reconnects and its requests hang until
// its own timeouts, as when the target's host stops responding.
func (p *Proxy) Stall() { p.set(partitioned, true) }

// Partition drops every byte both ways and leaves the connections open,
// until [Proxy.Heal]: nothing is refused and nothing arrives, and neither
// side learns that the other closed its end. New connections are accepted
// and treated the same way.
func (p *Proxy) Partition() { p.set(partitioned, false) }

// Heal forwards again. The connections held open by [Proxy.Stall] or
// [Proxy.Partition] are closed, as bytes on them were lost; clients reach
// the target on the connections they make next. Heal of a proxy that
// forwards does nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.switchTo(forwarding, mode(p.mode.Load()) != forwarding)
}

// Close stops the proxy: it closes every connection and the listener, so
// that dialing [Proxy.Addr] is refused, and waits for the proxy's
// goroutines. Close may be called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.set(cut, true)
	p.wg.Wait()
}

func (p *Proxy) set(m mode, closeAll bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.switchTo(m, closeAll)
}

// switchTo closes every connection if closeAll, then switches to m; p.mu is
// held. Closing first means a byte read on a broken connection is never
// passed on once the proxy forwards again.
func (p *Proxy) switchTo(m mode, closeAll bool) {
	if closeAll {
		for c := range p.conns {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
	p.mode.Store(int32(m))
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.handle(c) })
	}
}

// handle serves one client connection c.
func (p *Proxy) handle(c net.Conn) {
	switch p.admit(c) {
	case cut:
		return
	case partitioned:
		p.drain(c)
		return
	}
	s, err := p.dial("tcp", p.target)
	if err != nil {
		p.drop(c)
		return
	}
	// The link may have been cut while dialing: admit decides again.
	if p.admit(s) == cut {
		p.drop(c)
		return
	}
	var sent func([]byte)
	if p.sent != nil {
		sent = p.sent()
	}
	p.wg.Go(func() { p.pipe(s, c, sent) })
	p.pipe(c, s, nil)
}

// admit records the open connection c and returns the mode it was admitted
// under; when the proxy is cut or closed, it closes c and returns cut.
func (p *Proxy) admit(c net.Conn) mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := mode(p.mode.Load())
	if m == cut || p.closed {
		_ = c.Close()
		return cut
	}
	p.conns[c] = struct{}{}
	return m
}

// drop forgets c and closes it.
func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// drain reads and discards what a client sends on a connection accepted
// while partitioned or stalled, until the connection is closed.
func (p *Proxy) drain(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
	p.drop(c)
}

// pipe passes what src sends on to dst, dropping it while partitioned, until
// src ends. Then it closes both, as the end of one side would reach the
// other, except while partitioned: that end is lost with the bytes, and
// dst stays open. seen, when not nil, is called with what is passed on.
func (p *Proxy) pipe(dst, src net.Conn, seen func([]byte)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && mode(p.mode.Load()) == forwarding {
			if seen != nil {
				seen(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	if mode(p.mode.Load()) != partitioned {
		p.drop(dst)
	}
	p.drop(src)
}
