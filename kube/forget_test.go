package kube

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/backendurl"
)

// Forget deletes a released Lease, leaves a held one alone with an error
// naming its holder, and reports false for an election that has no Lease.
func TestForget(t *testing.T) {
	t.Parallel() // an election of its own
	s := testServer(t)
	b := testBackend(t, s, nil)
	name := testName(t)
	l := mustCampaign(t, b, cand(name, "alice"))
	if ok, err := b.Forget(testCtx(t), name); ok || err == nil || !strings.Contains(err.Error(), `"alice"`) {
		t.Errorf("Forget of a held election: got (%v, %v); want false and an error naming alice", ok, err)
	}
	if _, err := b.leases.Get(testCtx(t), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the held Lease after Forget: %v; want it kept", err)
	}
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Forget(testCtx(t), name); !ok || err != nil {
		t.Errorf("Forget of a released election: got (%v, %v); want true, nil", ok, err)
	}
	if _, err := b.leases.Get(testCtx(t), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the released Lease after Forget: got %v; want it deleted", err)
	}
	if ok, err := b.Forget(testCtx(t), name); ok || err != nil {
		t.Errorf("Forget of an election without a Lease: got (%v, %v); want false, nil", ok, err)
	}
}

// RequestRate reports the QPS of the client a kube:// URL configures: the
// URL's qps, else the opener's default.
func TestRequestRateFromURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		want  float64
	}{{"", defaultQPS}, {"&qps=7.5&burst=9", 7.5}} {
		b, closer, err := backendurl.Open(testCtx(t), testenvKubeURL(t)+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.(*Backend).RequestRate(); got != tc.want {
			t.Errorf("URL with %q: RequestRate %v; want %v", tc.query, got, tc.want)
		}
		_ = closer.Close()
	}
	// The tests' own clients set no limit.
	if got := testBackend(t, testServer(t), nil).RequestRate(); got != 0 {
		t.Errorf("client without a rate limiter: RequestRate %v; want 0", got)
	}
}
