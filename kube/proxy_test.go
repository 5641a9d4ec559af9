package kube

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy is a TCP proxy in front of the apiserver that can cut every
// connection through it, as a network partition would.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	stall bool // accept connections but never answer
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, stall := p.cut, p.stall
		if stall {
			p.conns[c] = struct{}{} // held open, unanswered, until Heal or Close
		}
		p.mu.Unlock()
		if cut {
			_ = c.Close()
			continue
		}
		if stall {
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection and refuses new ones until Heal.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Stall closes every connection, then accepts new ones but never answers
// on them, as a host that stopped responding would, until Heal.
func (p *proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal lets connections through again.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.stall = false, false
	for c := range p.conns {
		_ = c.Close() // stalled ones too: their clients dial again
	}
}

// Close stops the proxy and waits for its goroutines.
func (p *proxy) Close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
