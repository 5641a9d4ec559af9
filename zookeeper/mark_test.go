package zookeeper

import (
	"testing"
	"time"
)

// TestUnmarkOnlyTheMarker: Unmark of an election with a live leader and no
// marker removes nothing; after Mark it removes the marker znode only, and
// the next leader's token (a czxid) is above the marked term's.
func TestUnmarkOnlyTheMarker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	e := "mark-" + randomSuffix()
	live := f.acquire(b, e, "alice")
	removed, err := b.Unmark(f.ctx, e)
	if err != nil || removed {
		t.Fatalf("Unmark with a live leader and no marker: got %v, %v; want false, nil", removed, err)
	}
	if h, err := b.Leader(f.ctx, e); err != nil || h.Identity != "alice" || h.Token != live.Token() {
		t.Errorf("holder after Unmark: got %+v, %v; want alice with token %d", h, err, live.Token())
	}
	waiting := f.campaignAsync(b, e, "bob")
	if err := b.Mark(f.ctx, e, live, "migrated-to-etcd"); err != nil {
		t.Fatal(err)
	}
	marker, err := b.Leader(f.ctx, e)
	if err != nil || marker.Identity != "migrated-to-etcd" {
		t.Fatalf("holder after Mark: got %+v, %v; want the marker", marker, err)
	}
	removed, err = b.Unmark(f.ctx, e)
	if err != nil || !removed {
		t.Fatalf("Unmark of a marked election: got %v, %v; want true, nil", removed, err)
	}
	r := f.await(waiting, 5*time.Second, "bob leads once the marker is gone")
	defer r.l.Release(f.ctx)
	if r.l.Token() <= live.Token() {
		t.Errorf("token after Unmark: got %d, want above the marked term's %d", r.l.Token(), live.Token())
	}
	if removed, err = b.Unmark(f.ctx, e); err != nil || removed {
		t.Errorf("Unmark with bob leading: got %v, %v; want false, nil: bob's znode stays", removed, err)
	}
	if h, err := b.Leader(f.ctx, e); err != nil || h.Identity != "bob" {
		t.Errorf("holder after a second Unmark: got %+v, %v; want bob", h, err)
	}
}
