package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// The ensemble's timing bounds how late its leader's view of a session can
// be. A follower answers its clients (pings included) at once and reports
// the sessions it heard from only in its reply to the leader's next ping;
// it keeps doing so while it hears from its leader at least once every
// syncLimit × tickTime (its read timeout on the leader's connection), so a
// paused leader, or a follower cut off from a running one, leaves the
// follower answering for up to that long with nothing counted. The leader
// then expires the session by its own last count. No answer a client can
// see proves the count: requests a follower forwards (a sync, a write)
// enter the leader's pipeline without touching the session, and a resumed
// leader's session tracker expires what is overdue without waiting for the
// pings its followers queued. See the package documentation, section
// Safety, for the sources.

// Stock timing: ZooKeeper's sample zoo.cfg (conf/zoo_sample.cfg), which
// Debian's package installs as is.
const (
	stockTickTime  = 2 * time.Second
	stockSyncLimit = 5
)

// reportSlack is added to an ensemble's report lag for the delivery and
// processing of a leader's packets between servers.
const reportSlack = 100 * time.Millisecond

// minTTLFactor is how many report lags a TTL must span (see [MinSafeTTL]).
const minTTLFactor = 2.5

// Timing is the timing of a ZooKeeper ensemble that a Backend's Deadlines
// rest on, and where it was learned.
type Timing struct {
	// TickTime is the ensemble's tickTime.
	TickTime time.Duration
	// SyncLimit is the ensemble's syncLimit, in ticks; 0 for a standalone
	// server, which has no followers.
	SyncLimit int
	// Source says where the numbers come from: "Options", "conf of
	// host:port" (the servers' conf four-letter word), or "assumed", when
	// no server reported its timing and ZooKeeper's sample configuration
	// (tickTime 2s, syncLimit 5) is assumed.
	Source string
}

// SyncWindow is syncLimit × tickTime: how long a follower keeps answering
// its clients after it last heard from its leader.
func (t Timing) SyncWindow() time.Duration { return time.Duration(t.SyncLimit) * t.TickTime }

// ReportLag is how long after an answer from a server arrived a later
// request of the same connection must have been sent, and answered, before
// the Deadline counts the first: the sync window, a tick (the leader pings
// every half tick, and may not have read the reply to its last ping), and
// 100 ms for packets between servers. A standalone server (SyncLimit 0)
// counts every answer at once.
func (t Timing) ReportLag() time.Duration {
	if t.SyncLimit == 0 {
		return 0
	}
	return time.Duration(t.SyncLimit+1)*t.TickTime + reportSlack
}

// MinTTL is [MinSafeTTL] of the timing.
func (t Timing) MinTTL() time.Duration { return MinSafeTTL(t.TickTime, t.SyncLimit) }

// MinSafeTTL is the shortest Candidate.TTL a Backend accepts on an ensemble
// with this tickTime and syncLimit: 2.5 × ((syncLimit + 1) × tickTime +
// 100 ms), truncated to whole milliseconds. A lease's Deadline trails its
// newest answer by a report lag and the gap to the next answered request
// (at most about a twelfth of the TTL while the session holds leases), and
// must stay ahead of an Elector's SafetyMargin (a fifth of the TTL by
// default) with room for a loaded process: a report lag of 40% of the TTL
// leaves it about 30% of the TTL ahead. This also keeps a session from
// expiring at a leader that resumes from a pause its followers rode out.
// ZooKeeper's sample configuration (tickTime 2s, syncLimit 5) needs
// 30.25s. A standalone server (syncLimit 0) needs nothing beyond [MinTTL].
func MinSafeTTL(tickTime time.Duration, syncLimit int) time.Duration {
	lag := Timing{TickTime: tickTime, SyncLimit: syncLimit}.ReportLag()
	return time.Duration(float64(lag) * minTTLFactor).Truncate(time.Millisecond)
}

// checkTTL refuses a TTL too short for the timing, naming the numbers and
// the ways out.
func (t Timing) checkTTL(ttl time.Duration) error {
	floor := t.MinTTL()
	switch {
	case ttl >= floor:
		return nil
	case t.unanswered():
		// Not a refusal: a slow server may report a timing that allows
		// ttl, and the next Campaign asks again.
		return fmt.Errorf("TTL %v is below %v, the shortest the assumed timing allows (%v, after %v): the ensemble's timing is not known yet, and the next Campaign asks again; Options.TickTime and Options.SyncLimit state it",
			ttl, floor, t, confWait)
	}
	return fmt.Errorf("%w: TTL %v is below %v, the shortest this ensemble allows (%v): "+
		"a follower answers for up to syncLimit × tickTime after its leader last counted a session, so a lease's Deadline trails its last answer by %v; "+
		"campaign with a TTL of at least %v, or run the ensemble with (syncLimit + 1) × tickTime at most %v%s",
		backend.ErrInvalid, ttl, floor, t, t.ReportLag(), floor,
		(time.Duration(float64(ttl)/minTTLFactor) - reportSlack).Truncate(time.Millisecond), t.hint())
}

// hint says how to state the timing when it was assumed.
func (t Timing) hint() string {
	if t.Source != sourceAssumed {
		return ""
	}
	return " and tell the Backend (Options.TickTime and Options.SyncLimit, or let the servers answer the conf four-letter word: 4lw.commands.whitelist=srvr,conf)"
}

// Sources of an assumed timing: the servers answered conf without their
// timing (ZooKeeper's default whitelist refuses it), or none answered in
// time.
const (
	sourceAssumed    = "assumed (ZooKeeper's sample configuration; no server reported its timing with the conf four-letter word)"
	sourceUnanswered = "assumed (ZooKeeper's sample configuration; no server answered the conf four-letter word in time)"
)

// unanswered reports whether t was assumed because no server answered conf
// at all.
func (t Timing) unanswered() bool { return t.Source == sourceUnanswered }

// Timing returns the ensemble timing b's Deadlines rest on: the one
// [Options.TickTime] and [Options.SyncLimit] state, or else the one the
// servers report through the conf four-letter word, learned once (it needs
// 4lw.commands.whitelist to include conf; ZooKeeper's default whitelist
// holds srvr only), or else ZooKeeper's sample configuration, tickTime 2s
// and syncLimit 5, assumed. It waits at most until ctx ends, and 5 s, for
// the servers' answers. A timing assumed because no server answered at all
// is not kept: the next call asks again, and a Campaign refused by it
// fails with an error that is not [backend.ErrInvalid], so that an Elector
// tries again.
func (b *Backend) Timing(ctx context.Context) (Timing, error) {
	if b.cfg.tick > 0 {
		return Timing{TickTime: b.cfg.tick, SyncLimit: b.cfg.syncLimit, Source: "Options"}, nil
	}
	b.timing.mu.Lock()
	defer b.timing.mu.Unlock()
	if b.timing.known {
		return b.timing.t, nil
	}
	t, err := askConf(ctx, b.servers, b.cfg.dialer)
	if err != nil {
		return Timing{}, err
	}
	if !t.unanswered() {
		b.timing.t, b.timing.known = t, true
	}
	return t, nil
}

// learned is a Backend's ensemble timing once a server answered.
type learned struct {
	mu    sync.Mutex
	known bool
	t     Timing
}

// confWait bounds how long Timing waits for the servers' conf answers:
// they have answered a session's handshake already, so only a loaded
// server takes seconds.
const confWait = 5 * time.Second

// confGrace is how long Timing waits for the other servers once one has
// reported its timing.
const confGrace = 100 * time.Millisecond

// confAnswer is one server's answer to conf.
type confAnswer struct {
	addr      string
	tick      time.Duration // 0 when not reported
	syncLimit int
	err       error // the server could not be asked
}

// askConf asks every server for conf at once, and returns the largest
// tickTime and syncLimit reported, or the assumed stock timing when none
// reported one, its Source saying whether any server answered at all (a
// refusal included). It returns ctx's error if ctx ends first.
func askConf(ctx context.Context, servers []string, dial func(network, addr string, timeout time.Duration) (net.Conn, error)) (Timing, error) {
	if dial == nil {
		dial = net.DialTimeout
	}
	askCtx, cancel := context.WithTimeout(ctx, confWait)
	defer cancel()
	answers := make(chan confAnswer, len(servers))
	for _, addr := range servers {
		go func() { answers <- conf(askCtx, addr, dial) }()
	}
	t := Timing{TickTime: stockTickTime, SyncLimit: stockSyncLimit, Source: sourceUnanswered}
	var grace <-chan time.Time
	reported := false
	for range servers {
		var a confAnswer
		select {
		case a = <-answers:
		case <-grace:
			return t, nil
		case <-askCtx.Done():
			if err := ctx.Err(); err != nil {
				return Timing{}, err
			}
			return t, nil
		}
		if a.err != nil {
			continue
		}
		if t.unanswered() {
			t.Source = sourceAssumed
		}
		if a.tick == 0 {
			continue
		}
		if !reported || a.tick > t.TickTime || (a.tick == t.TickTime && a.syncLimit > t.SyncLimit) {
			t = Timing{TickTime: a.tick, SyncLimit: a.syncLimit, Source: "conf of " + a.addr}
		}
		if !reported {
			reported = true
			grace = time.After(confGrace)
		}
	}
	if err := ctx.Err(); err != nil && t.unanswered() {
		// ctx ended while the last failures came in: select took them
		// first.
		return Timing{}, err
	}
	return t, nil
}

// conf asks the server at addr for its configuration with the conf
// four-letter word and parses tickTime and syncLimit from the answer.
func conf(ctx context.Context, addr string, dial func(network, addr string, timeout time.Duration) (net.Conn, error)) confAnswer {
	a := confAnswer{addr: addr}
	deadline, _ := ctx.Deadline()
	c, err := dial("tcp", addr, time.Until(deadline))
	if err != nil {
		a.err = err
		return a
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	c.SetDeadline(deadline)
	if _, err := c.Write([]byte("conf")); err != nil {
		a.err = err
		return a
	}
	sc := bufio.NewScanner(c)
	got := false
	// Stop at syncLimit, which follows tickTime: a proxy in between may
	// keep the connection open after the server closed its end.
	for a.syncLimit == 0 && sc.Scan() {
		got = true
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			continue
		}
		switch k {
		case "tickTime":
			a.tick = time.Duration(n) * time.Millisecond
		case "syncLimit":
			a.syncLimit = n
		}
	}
	if !got {
		a.err = fmt.Errorf("conf on %s: no answer: %v", addr, sc.Err())
	}
	return a
}

var _ backend.TTLFloor = (*Backend)(nil)

// MinTTL implements [backend.TTLFloor]: [MinSafeTTL] of the ensemble's
// [Backend.Timing] (at least [MinTTL]), and that timing in words. It
// returns an error when no server answered conf: the floor is not known.
func (b *Backend) MinTTL(ctx context.Context) (time.Duration, string, error) {
	t, err := b.Timing(ctx)
	if err != nil {
		return 0, "", err
	}
	if t.unanswered() {
		return 0, "", fmt.Errorf("zookeeper: the shortest TTL is not known: no server answered the conf four-letter word within %v", confWait)
	}
	return max(t.MinTTL(), MinTTL), t.String(), nil
}

// String describes the timing in words, for example "syncLimit 5 ×
// tickTime 2s, conf of zk1:2181".
func (t Timing) String() string {
	return fmt.Sprintf("syncLimit %d × tickTime %v, %s", t.SyncLimit, t.TickTime, t.Source)
}
