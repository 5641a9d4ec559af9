package partition

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend/memory"
)

// recorder is a slog.Handler that keeps every record's level and message.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// count returns the records at level whose message starts with msg.
func (r *recorder) count(level slog.Level, msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Level == level && strings.HasPrefix(rec.Message, msg) {
			n++
		}
	}
	return n
}

// TestFullGroupWarnsOnce: a member waiting for a membership slot warns when
// it finds every slot taken, then logs each further poll at Debug only,
// and at Info when a slot frees and it joins.
func TestFullGroupWarnsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		a := start(t, store.Peer(), "full", 2, &Options{Identity: "a", TTL: time.Second, MaxMembers: 1, Logger: discard()})
		time.Sleep(time.Second) // a joins
		rec := &recorder{}
		b := start(t, store.Peer(), "full", 2, &Options{Identity: "b", TTL: time.Second, MaxMembers: 1, Logger: slog.New(rec)})
		time.Sleep(3500 * time.Millisecond) // b polls, every slot taken
		const full = "every membership slot is taken"
		if w, d := rec.count(slog.LevelWarn, full), rec.count(slog.LevelDebug, full); w != 1 || d < 2 {
			t.Errorf("while the group is full: %d warnings and %d debug records of %q; want 1 warning, then debug at each poll", w, d, full)
		}
		a.stop(t)
		time.Sleep(2 * time.Second)
		if n := rec.count(slog.LevelInfo, "a membership slot is free"); n != 1 {
			t.Errorf("%d infos that a slot is free once a left; want 1", n)
		}
		if n := rec.count(slog.LevelWarn, full); n != 1 {
			t.Errorf("%d warnings in all; want still 1", n)
		}
		b.stop(t)
	})
}

// TestDuplicateIdentityWarns: two members started with one identity each
// warn, once, that another member has their identity; a member with its
// own identity does not.
func TestDuplicateIdentityWarns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		recs := []*recorder{{}, {}, {}}
		var ms []*member
		for i, id := range []string{"dup", "dup", "other"} {
			ms = append(ms, start(t, store.Peer(), "twins", 4, &Options{Identity: id, TTL: time.Second, Logger: slog.New(recs[i])}))
		}
		time.Sleep(5 * time.Second) // several TTLs: no crashed member's slot lasts that long
		const twin = "another member has this identity"
		for i, want := range []int{1, 1, 0} {
			if n := recs[i].count(slog.LevelWarn, twin); n != want {
				t.Errorf("member %d: %d warnings %q; want %d", i, n, twin, want)
			}
		}
		for _, m := range ms {
			m.stop(t)
		}
	})
}

// TestRestartSameIdentityQuiet: a member that restarts under its identity
// after a crash finds its old slot held until that lease lapses; that is
// no duplicate, and it does not warn.
func TestRestartSameIdentityQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		peer := store.Peer()
		old := start(t, peer, "restart", 4, &Options{Identity: "x", TTL: time.Second, Logger: discard()})
		time.Sleep(time.Second)
		peer.Crash() // its slot's lease stays until it lapses
		old.cancel()
		<-old.done
		rec := &recorder{}
		m := start(t, store.Peer(), "restart", 4, &Options{Identity: "x", TTL: time.Second, Logger: slog.New(rec)})
		time.Sleep(5 * time.Second)
		if n := rec.count(slog.LevelWarn, "another member has this identity"); n != 0 {
			t.Errorf("%d duplicate-identity warnings after a restart; want none", n)
		}
		m.stop(t)
	})
}
