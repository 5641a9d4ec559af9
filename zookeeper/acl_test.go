package zookeeper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// With credentials and no ACL, every znode the Backend creates is
// creator-only: the server expands the "auth" ACL to the session's digest
// identity, so an anonymous client can neither read the election nor delete
// the leader's znode (world:anyone would let anyone delete it).
func TestAuthWithoutACLIsCreatorOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	root := testPrefix + "-acl-" + randomSuffix()
	a, _ := f.backend(&Options{Prefix: root, Auth: []Auth{{Scheme: "digest", Secret: []byte("elector:s3cret")}}})
	l := f.acquire(a, "e", "alice")

	paths := []string{root, root + "/e", l.path}
	// The anonymous session may be on a server that has not applied the
	// creates yet: ZooKeeper orders one session's view, not two sessions'.
	if _, err := f.admin.Sync(l.path); err != nil {
		t.Fatalf("Sync(%s): %v", l.path, err)
	}
	for _, p := range paths {
		if _, _, err := f.admin.GetACL(p); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("anonymous GetACL(%s): got %v, want zk.ErrNoAuth", p, err)
		}
	}
	if err := f.admin.Delete(l.path, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("anonymous Delete of the leader's znode: got %v, want zk.ErrNoAuth", err)
	}
	f.admin.AddAuth("digest", []byte("elector:s3cret"))
	for _, p := range paths {
		acl, _, err := f.admin.GetACL(p)
		if err != nil {
			t.Fatalf("GetACL(%s): %v", p, err)
		}
		if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "elector:") || acl[0].Perms != zk.PermAll {
			t.Fatalf("ACL of %s: got %+v, want only digest elector:… with all permissions: credentials make znodes creator-only", p, acl)
		}
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	// The containers vanish once empty; delete them now to keep the tree tidy.
	f.admin.Delete(root+"/e", -1)
	f.admin.Delete(root, -1)
}

// Without credentials the znodes are world:anyone with all permissions, as
// Curator's default, and any client of the ensemble can end a term by
// deleting the leader's znode: what the package documentation warns of.
func TestNoAuthIsWorldACL(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := f.backend(nil)
	l := f.acquire(a, "world-"+randomSuffix(), "alice")
	if _, err := f.admin.Sync(l.path); err != nil { // the admin's server may lag
		t.Fatalf("Sync(%s): %v", l.path, err)
	}
	acl, _, err := f.admin.GetACL(l.path)
	if err != nil || len(acl) != 1 || acl[0] != zk.WorldACL(zk.PermAll)[0] {
		t.Fatalf("ACL of %s: got %+v, %v; want world:anyone with all permissions", l.path, acl, err)
	}
	if err := f.admin.Delete(l.path, -1); err != nil {
		t.Fatalf("anonymous Delete of the leader's znode: %v", err)
	}
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not lost within 10s after its znode was deleted")
	}
}
