package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/wait"
)

// pauseStoreLeader runs [FaultPauseStoreLeader]: it finds the ZooKeeper
// ensemble's leader with the srvr four-letter word, stops it for 1/2 to
// 4/5 of Config.SyncWindow (its followers last heard from it at most half a
// tick before, and drop it after syncLimit ticks of silence), and resumes
// it. Meanwhile the followers keep answering the candidates, and the
// leader, once resumed, expires the sessions it has not counted since it
// stopped.
func (c *campaign) pauseStoreLeader(ctx context.Context, rng *rand.Rand) error {
	if c.cfg.ServerKind != "zk" || c.cfg.SyncWindow <= 0 {
		return fmt.Errorf("%s needs a ZooKeeper campaign with Config.SyncWindow set", FaultPauseStoreLeader)
	}
	node := ""
	for i, addr := range c.cfg.Addrs {
		if zkMode(addr) == "leader" {
			node = fmt.Sprint(c.first() + i)
			break
		}
	}
	if node == "" {
		return nil // no leader (the ensemble is electing one): nothing to pause
	}
	w := c.cfg.SyncWindow
	c.faultBegins(FaultPauseStoreLeader, "zk "+node)
	defer c.faultHeals(FaultPauseStoreLeader)
	if err := c.servers("pause", "zk", node); err != nil {
		return err
	}
	wait.Sleep(ctx, jitter(rng, w/2, 4*w/5))
	return c.servers("resume", "zk", node)
}

// zkMode returns the Mode line of the srvr answer of the ZooKeeper server
// at addr ("leader", "follower", "standalone"), or "" if it does not answer.
func zkMode(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	out, _ := io.ReadAll(conn)
	for line := range strings.Lines(string(out)) {
		if mode, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode: "); ok {
			return mode
		}
	}
	return ""
}

// zkWindow returns syncLimit × tickTime of ZooKeeper ensemble 1-3, read
// with the conf four-letter word (its servers whitelist every word).
func zkWindow(t testing.TB) time.Duration {
	addr := testenv.ZKServers(t)[0]
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("conf on %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("conf")); err != nil {
		t.Fatalf("conf on %s: %v", addr, err)
	}
	out, _ := io.ReadAll(conn)
	v := map[string]int{}
	for line := range strings.Lines(string(out)) {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			if n, err := strconv.Atoi(val); err == nil {
				v[k] = n
			}
		}
	}
	if v["tickTime"] == 0 || v["syncLimit"] == 0 {
		t.Fatalf("conf on %s: no tickTime and syncLimit in %q", addr, out)
	}
	return time.Duration(v["syncLimit"]*v["tickTime"]) * time.Millisecond
}
