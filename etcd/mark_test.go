package etcd

import (
	"testing"
)

// TestUnmarkOnlyTheMarker: Unmark of an election with a live leader and no
// marker removes nothing; after Mark it removes the marker only, and the
// next leader's token (a create revision) is above the marked one. Not
// t.Parallel: bob's term is on a 2 s lease that nothing renews, and must
// outlast the requests after his election.
func TestUnmarkOnlyTheMarker(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	ctx := testCtx(t)
	e := testName(t)
	live := mustCampaign(t, b, unrenewed(e, "alice"))
	removed, err := b.Unmark(ctx, e)
	if err != nil || removed {
		t.Fatalf("Unmark with a live leader and no marker: got %v, %v; want false, nil", removed, err)
	}
	if h, err := b.Leader(ctx, e); err != nil || h.Identity != "alice" || h.Token != live.Token() {
		t.Errorf("holder after Unmark: got %+v, %v; want alice with token %d", h, err, live.Token())
	}
	waiting := campaignAsync(ctx, b, cand(e, "bob"))
	if err := b.Mark(ctx, e, live, "migrated-to-zk"); err != nil {
		t.Fatal(err)
	}
	removed, err = b.Unmark(ctx, e)
	if err != nil || !removed {
		t.Fatalf("Unmark of a marked election: got %v, %v; want true, nil", removed, err)
	}
	r := await(t, waiting, 5*testTTL)
	if r.err != nil {
		t.Fatalf("bob's campaign after Unmark: %v", r.err)
	}
	defer r.l.Release(ctx)
	if r.l.Token() <= live.Token() {
		t.Errorf("token after Unmark: got %d, want above the marked %d", r.l.Token(), live.Token())
	}
	if removed, err = b.Unmark(ctx, e); err != nil || removed {
		t.Errorf("Unmark with bob leading: got %v, %v; want false, nil: bob's key stays", removed, err)
	}
	if h, err := b.Leader(ctx, e); err != nil || h.Identity != "bob" {
		t.Errorf("holder after a second Unmark: got %+v, %v; want bob", h, err)
	}
}
