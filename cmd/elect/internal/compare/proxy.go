package compare

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy forwards TCP connections from a loopback port to one server, so
// that a client connected through it can be cut off at once, as if its
// process had died: cut closes every connection and refuses new ones. With
// a parser, it also counts the requests the client sends.
type proxy struct {
	ln       net.Listener
	target   string
	parser   func() requestParser // nil: requests are not counted
	requests atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
	wg    sync.WaitGroup
}

// newProxy starts a proxy to target; parser, when not nil, makes the
// request parser of each connection.
func newProxy(target string, parser func() requestParser) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, parser: parser, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// addr is the address clients dial instead of the target's.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // cut or closed
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// track records c; it reports false once the proxy is cut.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) forward(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(s) {
		c.Close()
		if s != nil {
			s.Close()
		}
		return
	}
	var wg sync.WaitGroup
	pipe := func(dst net.Conn, src io.Reader) {
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a dead process's socket would.
		dst.Close()
		c.Close()
		s.Close()
	}
	var up io.Reader = c // what the client sends
	if p.parser != nil {
		up = &countingReader{r: c, parser: p.parser(), n: &p.requests}
	}
	wg.Go(func() { pipe(s, up) })
	wg.Go(func() { pipe(c, s) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

// Cut closes every connection at once and refuses new ones.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

// Close cuts and waits for the proxy's goroutines.
func (p *proxy) Close() error {
	p.Cut()
	p.wg.Wait()
	return nil
}

// countingReader passes a connection's bytes through a request parser.
type countingReader struct {
	r      io.Reader
	parser requestParser
	n      *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if k > 0 {
		c.n.Add(int64(c.parser.feed(p[:k])))
	}
	return k, err
}
