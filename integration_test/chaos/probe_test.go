package chaos

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestProbeRecordsStalls: the store probe records an answer slower than
// probeSlow and a failure, each as one stall event naming its path, and
// nothing for answers in time.
func TestProbeRecordsStalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		delays := make(chan time.Duration, 16) // each PING's answer delay, in order
		for _, d := range []time.Duration{0, 10 * time.Millisecond, 350 * time.Millisecond, 0, 2 * time.Second, 0} {
			delays <- d
		}
		dials := 0
		pinged := make(chan struct{}, 64) // one per PING a server read
		quit := make(chan struct{})       // ends the servers' pending answers
		var servers sync.WaitGroup
		dial := func(context.Context) (net.Conn, error) {
			dials++
			client, server := net.Pipe()
			servers.Go(func() {
				defer server.Close()
				r := bufio.NewReader(server)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line != "PING\r\n" {
						t.Errorf("probe sent %q; want PING", line)
						return
					}
					pinged <- struct{}{}
					var d time.Duration
					select {
					case d = <-delays:
					default:
					}
					select {
					case <-time.After(d):
					case <-quit:
						return
					}
					if _, err := server.Write([]byte("+PONG\r\n")); err != nil {
						return
					}
				}
			})
			return client, nil
		}
		h := &History{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { probePath(ctx, h, "direct n1", dial); close(done) }()
		// Six requests, one every probeEvery, the fifth timing out after
		// probeLimit; the sixth, on a new connection, answered at once.
		for range 6 {
			<-pinged
		}
		synctest.Wait() // the probe has handled the sixth answer
		cancel()
		<-done
		close(quit)
		servers.Wait()

		var notes []string
		for _, ev := range h.Events() {
			if ev.Kind != KindStall || ev.Proc != "probe" {
				t.Errorf("event %+v; want only stalls of proc probe", ev)
			}
			notes = append(notes, ev.Note)
		}
		if len(notes) != 2 {
			t.Fatalf("stalls %q; want 2: the 350 ms answer and the one that timed out", notes)
		}
		if !strings.HasPrefix(notes[0], "direct n1 350ms") || strings.Contains(notes[0], ":") {
			t.Errorf("first stall %q; want \"direct n1 350ms\"", notes[0])
		}
		if !strings.HasPrefix(notes[1], "direct n1 1s: ") {
			t.Errorf("second stall %q; want the timeout after 1s with its error", notes[1])
		}
		if dials != 2 {
			t.Errorf("dialled %d times; want 2 (again after the failure)", dials)
		}
	})
}
