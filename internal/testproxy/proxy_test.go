package testproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// quiet is how long a connection must stay silent for a test to call it
// silent: nothing on loopback takes that long to arrive.
const quiet = 200 * time.Millisecond

// patience bounds the waits for what must happen; it is reached only when a
// test fails.
const patience = 5 * time.Second

// server is the proxy's target: a loopback listener that hands each
// connection it accepts to the test.
type server struct {
	ln       net.Listener
	accepted chan net.Conn
}

func newServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, accepted: make(chan net.Conn, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		close(s.accepted)
		for c := range s.accepted {
			_ = c.Close()
		}
	})
	return s
}

// next returns the next connection the server accepted, closed when t ends.
func (s *server) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		t.Cleanup(func() { _ = c.Close() })
		return c
	case <-time.After(patience):
		t.Fatalf("the server accepted no connection within %v", patience)
		return nil
	}
}

// none checks that the server has accepted no connection the test has not
// taken.
func (s *server) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-s.accepted:
		_ = c.Close()
		t.Errorf("the server accepted a connection from %v; want none to reach it", c.RemoteAddr())
	default:
	}
}

// dial connects to the proxy; the connection is closed when t ends.
func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), patience)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// link dials the proxy and returns the client's and the server's ends of
// the connection, having passed bytes both ways.
func link(t *testing.T, p *Proxy, s *server) (client, srv net.Conn) {
	t.Helper()
	client = dial(t, p)
	srv = s.next(t)
	passes(t, client, srv, "ping")
	passes(t, srv, client, "pong")
	return client, srv
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
}

// passes writes msg on from and checks that to reads it.
func passes(t *testing.T, from, to net.Conn, msg string) {
	t.Helper()
	send(t, from, msg)
	_ = to.SetReadDeadline(time.Now().Add(patience))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(to, got); err != nil {
		t.Fatalf("read %q through the proxy: %v", msg, err)
	}
	if !bytes.Equal(got, []byte(msg)) {
		t.Fatalf("read %q through the proxy, want %q", got, msg)
	}
}

// silent checks that c stays open and receives nothing for a while.
func silent(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	n, err := c.Read(make([]byte, 64))
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: read %d bytes, %v; want it open and silent for %v", what, n, err, quiet)
	}
}

// closed checks that c's peer has closed it: a read ends without waiting.
func closed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(patience))
	n, err := c.Read(make([]byte, 64))
	if n > 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: read %d bytes, %v; want it closed", what, n, err)
	}
}

func TestForwards(t *testing.T) {
	s := newServer(t)
	p := New(t, s.ln.Addr().String())
	c1, s1 := link(t, p, s)
	c2, s2 := link(t, p, s)
	passes(t, c1, s1, "one")
	passes(t, s2, c2, "two")
	_ = c1.Close()
	closed(t, s1, "the server's end after the client closed its own")
}

// Cut and Stall both end every open connection; they differ in what a
// connection made during the fault meets.
func TestCutAndStall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*Proxy)
		fresh func(t *testing.T, c net.Conn)
	}{
		{"Cut", (*Proxy).Cut, func(t *testing.T, c net.Conn) {
			closed(t, c, "a connection made while cut")
		}},
		{"Stall", (*Proxy).Stall, func(t *testing.T, c net.Conn) {
			send(t, c, "hello?")
			silent(t, c, "a connection made while stalled")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			p := New(t, s.ln.Addr().String())
			c1, s1 := link(t, p, s)
			tc.fault(p)
			closed(t, c1, "the client's open connection")
			closed(t, s1, "the server's open connection")
			c2 := dial(t, p)
			tc.fresh(t, c2)
			s.none(t) // the proxy dials the server for no connection made during the fault
			p.Heal()
			closed(t, c2, "a connection made during the fault, after Heal")
			link(t, p, s)
		})
	}
}

func TestPartition(t *testing.T) {
	s := newServer(t)
	p := New(t, s.ln.Addr().String())
	c1, s1 := link(t, p, s)
	c2, s2 := link(t, p, s)
	p.Partition()
	send(t, c1, "lost")
	send(t, s1, "lost")
	silent(t, s1, "the server's end of a partitioned connection")
	silent(t, c1, "the client's end of a partitioned connection")
	_ = c2.Close()
	silent(t, s2, "the server's end of a partitioned connection its client closed")
	c3 := dial(t, p)
	send(t, c3, "hello?")
	silent(t, c3, "a connection made while partitioned")
	s.none(t)
	p.Heal()
	closed(t, c1, "the client's end of a partitioned connection after Heal")
	closed(t, s1, "the server's end of a partitioned connection after Heal")
	closed(t, s2, "the server's end whose client closed, after Heal")
	closed(t, c3, "a connection made while partitioned, after Heal")
	link(t, p, s)
}

func TestClose(t *testing.T) {
	s := newServer(t)
	p := New(t, s.ln.Addr().String())
	c1, s1 := link(t, p, s)
	p.Partition() // Close ends the connections a partition holds open too
	p.Close()
	closed(t, c1, "the client's end of a partitioned connection after Close")
	closed(t, s1, "the server's end of a partitioned connection after Close")
	if c, err := net.DialTimeout("tcp", p.Addr(), patience); err == nil {
		_ = c.Close()
		t.Errorf("dial the proxy after Close: connected; want it refused")
	}
	p.Close() // again: returns at once
}

// A connection accepted before Cut whose dial to the server completes after
// it is closed on both sides, not forwarded through the cut.
func TestCutDuringDial(t *testing.T) {
	s := newServer(t)
	dialing, resume := make(chan struct{}), make(chan struct{})
	p := start(t, s.ln.Addr().String(), func(network, addr string) (net.Conn, error) {
		close(dialing)
		<-resume
		return net.DialTimeout(network, addr, patience)
	})
	c := dial(t, p)
	<-dialing
	p.Cut()
	close(resume)
	srv := s.next(t)
	closed(t, c, "the client's end of a connection whose dial outlived Cut")
	closed(t, srv, "the server's end of a connection whose dial outlived Cut")
}

// A proxy of Start passes what each client sends to its Sent function, in
// order, per connection, and nothing the server sends.
func TestStartSeesWhatClientsSend(t *testing.T) {
	s := newServer(t)
	var mu sync.Mutex
	var seen []string
	p, err := Start(s.ln.Addr().String(), &Options{Sent: func() func([]byte) {
		var conn strings.Builder
		mu.Lock()
		i := len(seen)
		seen = append(seen, "")
		mu.Unlock()
		return func(b []byte) {
			conn.Write(b)
			mu.Lock()
			seen[i] = conn.String()
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c1, s1 := link(t, p, s)
	c2, s2 := link(t, p, s)
	passes(t, c1, s1, "one")
	passes(t, c2, s2, "two")
	passes(t, s1, c1, "back")
	mu.Lock()
	got := fmt.Sprint(seen)
	mu.Unlock()
	if want := "[pingone pingtwo]"; got != want {
		t.Errorf("Sent saw %s; want %s: what each client sent, the server's bytes left out", got, want)
	}
	p.Cut()
	closed(t, c1, "a client's connection after Cut")
}
