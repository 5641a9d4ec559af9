package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// KindStall: the store probe's request to a backend node took longer than
// probeSlow, or failed (Proc "probe"; Note: the path, the node, the time
// taken and any error). It tells, when a bound is missed while no fault is
// active, whether the store answered: directly ("direct n3"), and through
// a toxiproxy link the nemesis never touches ("proxy n3"), so that a stall
// of the store, of the proxies or of the whole host can be told apart.
const KindStall = "stall"

// probeEvery is how often the store probe sends a request on each path;
// probeSlow is the time beyond which an answer is recorded as a stall.
const (
	probeEvery = 100 * time.Millisecond
	probeSlow  = 200 * time.Millisecond
	probeLimit = time.Second // a request's deadline
)

// probeStore times a PING to each Redis node every probeEvery, directly
// and through the proxies of the spare slot (a migrate campaign's late
// replica; unused otherwise, and never faulted), recording each answer
// slower than probeSlow, and each failure, as a [KindStall] event. It runs
// until ctx ends; for other stores it does nothing (their clients keep
// sessions of their own, which the candidates' logs already show).
func (c *campaign) probeStore(ctx context.Context) {
	if c.cfg.ServerKind != "redis" {
		return
	}
	var wg sync.WaitGroup
	spare := c.proxies[c.cfg.Candidates]
	for n, addr := range c.cfg.Addrs {
		direct, proxied := addr, spare[n].Listen
		wg.Go(func() { probePath(ctx, c.hist, fmt.Sprintf("direct n%d", n+1), dialer(direct)) })
		wg.Go(func() { probePath(ctx, c.hist, fmt.Sprintf("proxy n%d", n+1), dialer(proxied)) })
	}
	wg.Wait()
}

// dialer returns a function dialling addr over TCP.
func dialer(addr string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		d := net.Dialer{Timeout: probeLimit}
		return d.DialContext(ctx, "tcp", addr)
	}
}

// probePath sends "PING" every probeEvery over a connection from dial
// (dialled again after a failure) and adds a KindStall event to h for each
// answer slower than probeSlow or failure, named path.
func probePath(ctx context.Context, h *History, path string, dial func(context.Context) (net.Conn, error)) {
	var conn net.Conn
	var r *bufio.Reader
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		err := func() error {
			if conn == nil {
				var err error
				if conn, err = dial(ctx); err != nil {
					return err
				}
				r = bufio.NewReader(conn)
			}
			if err := conn.SetDeadline(began.Add(probeLimit)); err != nil {
				return err
			}
			if _, err := conn.Write([]byte("PING\r\n")); err != nil {
				return err
			}
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if line != "+PONG\r\n" {
				return fmt.Errorf("answered %q", line)
			}
			return nil
		}()
		took := time.Since(began)
		if err != nil && conn != nil {
			conn.Close()
			conn = nil
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil || took > probeSlow {
			note := fmt.Sprintf("%s %v", path, took.Round(time.Millisecond))
			if err != nil {
				note += ": " + err.Error()
			}
			h.Add(Event{Mono: Mono(), Proc: "probe", Kind: KindStall, Note: note})
		}
	}
}
