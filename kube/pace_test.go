package kube

import (
	"context"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/leaderkit/elector/internal/testproxy"
)

// Twenty candidates that start waiting at once on a client limited to 4
// requests/s (a read and a watch each: ten seconds of the client's rate)
// leave the Backend's held lease its renewals: waiters get at most half the
// rate, so a renewal waits a fraction of a second for the limiter instead
// of queueing behind forty requests past its RequestTimeout.
func TestWaitersLeaveRenewalsTheirShare(t *testing.T) {
	s := testServer(t)
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + testproxy.New(t, s.addr()).Addr()
	cfg.QPS, cfg.Burst = 4, 4
	cli, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cli, s.ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	l := mustCampaign(t, b, cand(testName(t), "holder"))

	holder := testBackend(t, s, nil)
	base := testName(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	var waiting []<-chan result
	for i := range 20 {
		name := base + "-" + strconv.Itoa(i)
		mustCampaign(t, holder, cand(name, "other"))
		waiting = append(waiting, campaignAsync(ctx, b, cand(name, "waiter")))
	}
	for i := range 3 {
		if err := l.Renew(testCtx(t)); err != nil {
			t.Fatalf("renewal %d while 20 candidates start waiting: %v", i+1, err)
		}
	}
	cancel()
	for _, ch := range waiting {
		if r := <-ch; r.err == nil {
			t.Errorf("a waiting candidate won an election another Backend holds")
		}
	}
}
