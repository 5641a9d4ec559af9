package kube

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/backend"
)

const (
	// listPage is the most Leases one page of Leaders' List returns.
	listPage = 500
	// listPerElection bounds the Leases Leaders lists per election asked:
	// when the namespace's last List returned more than this many Leases
	// per election, Leaders reads each election with a Get instead.
	listPerElection = 32
)

var _ backend.BatchReader = (*Backend)(nil)

// Leaders reports the holder of each election as [Backend.Leader] does. It
// reads two or more elections with one List of the namespace's Leases (in
// pages of 500) rather than a Get each, so that a partition group reading
// its 64 partitions' holders, or its membership slots every poll, costs one
// request of the client's rate limit instead of one per election. A List
// reads every Lease of the namespace: when the last one found more than 32
// Leases per election asked, Leaders reads each election with a Get instead
// (a partition group in a namespace crowded with other Leases). While the
// Backend's watch of its namespace runs (from its first Campaign, Watch or
// lease won), Leaders reads the elections from it and sends no request. It
// implements [backend.BatchReader].
func (b *Backend) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	holders, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	names := make([]string, len(elections))
	var at []int // the index of each valid election
	for i, e := range elections {
		name, err := leaseName(e)
		if err == nil {
			err = b.usable("leader", e)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		names[i] = name
		at = append(at, i)
	}
	valid, validNames := make([]string, len(at)), make([]string, len(at))
	for j, i := range at {
		valid[j], validNames[j] = elections[i], names[i]
	}
	if hs, es, ok := b.cachedHolders(valid, validNames); ok {
		for j, i := range at {
			holders[i], errs[i] = hs[j], es[j]
		}
		return holders, errs
	}
	if n := b.listed.Load(); len(at) < 2 || n > int64(listPerElection*len(at)) {
		for _, i := range at {
			holders[i], errs[i] = b.Leader(ctx, elections[i])
		}
		return holders, errs
	}
	sent := time.Now()
	leases, err := b.listAll(ctx)
	if err == nil && !slices.ContainsFunc(at, func(i int) bool { return leases[names[i]] != nil }) {
		err = b.checkNamespace(ctx) // none of them: is there a namespace?
	}
	for _, i := range at {
		switch {
		case err != nil && ctx.Err() != nil:
			errs[i] = ctx.Err()
		case err != nil:
			errs[i] = fmt.Errorf("kube: leader %q: %w", elections[i], err)
		default:
			l := leases[names[i]]
			holders[i], errs[i] = b.holderAt(elections[i], names[i], l, sent, b.judge(ctx, l))
		}
	}
	return holders, errs
}

// listAll reads every Lease of the namespace, by name, in pages of
// listPage, and records how many there are. A page whose continue token
// expired meanwhile (410 Gone) restarts the List without pages, as
// client-go's pager does.
func (b *Backend) listAll(ctx context.Context) (map[string]*coordinationv1.Lease, error) {
	out := make(map[string]*coordinationv1.Lease)
	opts := metav1.ListOptions{Limit: listPage}
	for {
		ll, err := bounded(b, ctx, func(ctx context.Context) (*coordinationv1.LeaseList, error) {
			return b.leases.List(ctx, opts)
		})
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			clear(out)
			opts = metav1.ListOptions{}
			continue
		}
		if err != nil {
			return nil, err
		}
		for i := range ll.Items {
			out[ll.Items[i].Name] = &ll.Items[i]
		}
		if ll.Continue == "" {
			break
		}
		opts.Continue = ll.Continue
	}
	b.listed.Store(int64(len(out)))
	return out, nil
}
