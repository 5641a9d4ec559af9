package etcd

import (
	"testing"
	"time"
)

// TestDeletedRightAfterWinIsLost: a lease that led at once watches its key
// only after ownWatchDelay, from the revision of its campaign, so a
// deletion by another client before the watch starts still closes Lost.
func TestDeletedRightAfterWinIsLost(t *testing.T) {
	cli := testClient(t)
	l := mustCampaign(t, testBackend(t, cli, nil), cand(testName(t), "alice"))
	if _, err := cli.Delete(testCtx(t), l.key); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case <-l.Lost():
		t.Logf("Lost closed %v after the deletion", time.Since(start))
	case <-time.After(testTTL):
		t.Fatalf("Lost still open %v after the key was deleted, want closed", testTTL)
	}
}
