package kube

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/backend"
)

// errRace means another writer changed the Lease between the read and the
// write of a take-over: read it again.
var errRace = errors.New("the Lease changed meanwhile")

// Campaign takes the election's Lease when it is free: absent (it is
// created), naming no holder (released), or expired: as client-go judges
// it, leaseDurationSeconds of the holder have passed on this process's
// clock since the Lease was last seen to change, or, judged on the
// apiserver's clock as a reader judges it (see # Readers), its holder's
// last write is older than its duration plus the stamps' margins, so that
// a process that starts after a holder crashed need not watch it for a
// whole duration first. Until then it waits on a watch of the Lease, so a
// release or a change of holder is seen at once, and on a timer for the
// expiry. Every take-over is an update conditional on the resourceVersion
// read, so of candidates racing for a free Lease exactly one wins; the
// others read it again, and a record judged expired is taken only as it
// was judged. A free Lease whose spec.preferredHolder names another
// identity (Coordinated Leader Election) is left to it for c.TTL.
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	name, err := leaseName(c.Election)
	if err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, fmt.Errorf("kube: campaign %q: %w", c.Election, err)
	}
	secs, err := b.cfg.ttlSeconds(c.TTL)
	if err != nil {
		return nil, fmt.Errorf("kube: campaign %q: %w", c.Election, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.usable("campaign", c.Election); err != nil {
		return nil, err
	}
	w := &waiter{b: b, name: name}
	if err := w.refresh(ctx); err != nil {
		return nil, b.campaignErr(ctx, c.Election, err)
	}
	var v verdict // on the apiserver's clock, of the record w holds
	for {
		if !v.on(w.obj) {
			v = b.judge(ctx, w.obj)
		}
		if w.freeBy(v, time.Now()) {
			if until := w.reservedUntil(c); time.Now().Before(until) {
				if err := w.wait(ctx, until); err != nil {
					return nil, b.campaignErr(ctx, c.Election, err)
				}
				continue
			}
			done, waited, err := b.admit(ctx, c.TTL)
			if err != nil {
				return nil, b.campaignErr(ctx, c.Election, err)
			}
			if waited {
				w.load() // as it is now, after the wait
				if !w.freeBy(v, time.Now()) {
					done()
					continue
				}
			}
			l, err := b.take(ctx, c, name, secs, w.obj)
			done()
			if !errors.Is(err, errRace) {
				return l, err
			}
			// Another writer got there first: its write is on the watch,
			// which started before it (from the version read).
			if err := w.wait(ctx, time.Time{}); err != nil {
				return nil, b.campaignErr(ctx, c.Election, err)
			}
			continue
		}
		if err := w.wait(ctx, w.expiryBy(v)); err != nil {
			return nil, b.campaignErr(ctx, c.Election, err)
		}
	}
}

// reservedUntil returns until when a free Lease is left to the identity its
// spec.preferredHolder names, when that is not c's: c.TTL after its record
// was first seen, so that the holder Coordinated Leader Election prefers is
// elected after an elector holder yielded to it, and a preferred holder
// that does not take the Lease holds the election up for no longer. The
// zero time when the Lease names no other preferred holder.
func (w *waiter) reservedUntil(c backend.Candidate) time.Time {
	if w.obj == nil {
		return time.Time{}
	}
	if p := w.obj.Spec.PreferredHolder; p == nil || *p == "" || *p == c.Identity {
		return time.Time{}
	}
	return w.at.Add(c.TTL)
}

// campaignErr returns ctx.Err() when ctx has ended, and err wrapped
// otherwise.
func (b *Backend) campaignErr(ctx context.Context, election string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("kube: campaign %q: %w", election, permanent(err))
}

// take writes c's holder record onto the Lease cur (creating it when cur is
// nil), with leaseTransitions one above cur's: the new lease's token. It
// returns errRace when another writer got there first.
func (b *Backend) take(ctx context.Context, c backend.Candidate, name string, secs int32, cur *coordinationv1.Lease) (backend.Lease, error) {
	o := owner{identity: c.Identity, nonce: newNonce(), token: 1}
	var next *coordinationv1.Lease
	if cur == nil {
		next = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns}}
	} else {
		t := transitionsOf(cur)
		if t == math.MaxInt32 {
			return nil, fmt.Errorf("kube: campaign %q: %w: lease %s/%s has leaseTransitions %d, the largest a Lease holds: no greater token can be issued",
				c.Election, backend.ErrInvalid, b.ns, name, t)
		}
		o.token = t + 1
		next = cur.DeepCopy()
	}
	holderRecord(o, secs, true).writeTo(next)
	sent := time.Now()
	var got *coordinationv1.Lease
	var err error
	if cur == nil {
		got, err = b.create(ctx, next)
	} else {
		got, err = b.update(ctx, next)
	}
	switch {
	case err == nil:
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return nil, errRace
	case apierrors.IsNotFound(err) && cur != nil:
		return nil, errRace // deleted meanwhile: create it
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("kube: campaign %q: creating lease %s/%s: %w", c.Election, b.ns, name, err)
	case refused(err):
		return nil, b.campaignErr(ctx, c.Election, err) // nothing was written
	default:
		// The write may have been applied although its answer was lost:
		// clear it, so that it does not hold the election up.
		b.background(func() { b.cleanup(name, o) })
		return nil, b.campaignErr(ctx, c.Election, err)
	}
	l := &lease{
		b: b, election: c.Election, name: name, o: o, secs: secs, obj: got, won: got.ResourceVersion,
		seen: secondsKeyOf(got), seenSent: sent,
		deadline: backend.LeaseDeadline(sent, time.Duration(secs)*time.Second, b.cfg.drift),
		lost:     make(chan struct{}),
		yield:    make(chan struct{}),
	}
	l.checkPreferred(got)
	if !b.keep(l) {
		l.finish()
		l.clear()
		return nil, fmt.Errorf("kube: campaign %q: %w", c.Election, backend.ErrClosed)
	}
	if late := time.Since(l.deadline); late >= 0 {
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("kube: campaign %q: the update that took the lease was answered %v after the lease's Deadline (TTL %v); released it",
			c.Election, late.Round(time.Millisecond), c.TTL)
	}
	return l, nil
}

// cleanup clears the Lease if o holds it, bounded by Options.CleanupTimeout.
func (b *Backend) cleanup(name string, o owner) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.cleanup)
	defer cancel()
	_, _ = b.clearOwned(ctx, name, o, nil)
}

// refused reports whether the apiserver refused a write before applying it,
// as opposed to an error after which the write may have been applied (a
// lost answer, a storage timeout).
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) ||
		apierrors.IsUnauthorized(err) || apierrors.IsTooManyRequests(err) || apierrors.IsMethodNotSupported(err)
}
