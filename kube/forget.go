package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Forget deletes the election's Lease when no lease holds it (elect
// compare calls it for the elections of its run, whose Leases would
// otherwise stay in the namespace): when it
// names no holder, or its holder has expired as [Backend.Leader] judges it
// (its leaseDurationSeconds after this Backend first read its record, so a
// first Forget of a Lease whose holder stopped fails, and one a duration
// later succeeds). The delete is conditional on the resourceVersion read,
// so a candidate that takes the Lease meanwhile keeps it. A Lease whose
// holder has not expired, a "migrated" marker included, is left alone and
// Forget returns an error naming the holder. Forget reports whether it
// deleted a Lease.
//
// Deleting a Lease resets its leaseTransitions, the election's fencing
// counter (see # Fencing in the package documentation): never forget an
// election whose tokens a resource checks.
func (b *Backend) Forget(ctx context.Context, election string) (bool, error) {
	name, err := b.open("forget", election)
	if err != nil {
		return false, err
	}
	for range maxConflicts {
		cur, err := b.get(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil:
			return false, fmt.Errorf("kube: forget %q: %w", election, err)
		}
		if id := holderOf(cur); id != "" {
			now := time.Now()
			if exp := b.seen.first(name, cur, now).Add(durationOf(cur)); now.Before(exp) {
				return false, fmt.Errorf("kube: forget %q: lease %s/%s is held by %q (leaseTransitions %d) for %v more at least; only a Lease that names no holder, or whose holder expired, is deleted",
					election, b.ns, name, id, transitionsOf(cur), exp.Sub(now).Round(time.Millisecond))
			}
		}
		rv := cur.ResourceVersion
		_, err = bounded(b, ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, b.leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err):
			continue // written meanwhile: read it again
		case ctx.Err() != nil:
			return false, ctx.Err()
		default:
			return false, fmt.Errorf("kube: forget %q: %w", election, permanent(err))
		}
	}
	return false, fmt.Errorf("kube: forget %q: lease %s/%s: %d conflicting writes in a row", election, b.ns, name, maxConflicts)
}

// RequestRate returns the sustained rate of the client's rate limiter, in
// requests per second: every request
// of the Backend passes it, so it bounds how many elections one Backend
// keeps renewed (one update per election per renewal). It is 0 when the
// client sets no limit, or when the client given to [New] does not expose
// its REST client.
func (b *Backend) RequestRate() float64 { return b.rate }

// Requests returns the number of requests the Backend has sent to the
// apiserver, and true: every get, list,
// create, update and delete of a Lease, and every watch it started.
// client-go's own retries of a request the apiserver asked it to retry are
// not counted.
func (b *Backend) Requests() (int64, bool) { return b.requests.Load(), true }

// clientRate returns the QPS of the rate limiter of client's REST client,
// 0 when it has none or does not say.
func clientRate(client any) float64 {
	rc, ok := client.(interface{ RESTClient() rest.Interface })
	if !ok {
		return 0
	}
	r := rc.RESTClient()
	if r == nil {
		return 0
	}
	if l := r.GetRateLimiter(); l != nil {
		return float64(l.QPS())
	}
	return 0
}
