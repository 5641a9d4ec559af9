package kube

import (
	"errors"
	"strconv"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testproxy"
)

// testNamespace creates a namespace of t's own and returns s in it, so that
// the test knows every Lease the namespace holds.
func testNamespace(t *testing.T, s server) server {
	t.Helper()
	p := testproxy.New(t, s.addr()) // closed when t ends, and with it the client's connections
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + p.Addr()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := testName(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name[:min(len(name), 50)] + "x"}}
	if ns, err = cs.CoreV1().Namespaces().Create(testCtx(t), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.ns = ns.Name
	return s
}

// Leaders reads a partition group's worth of elections with one List
// request, and reports each as Leader does: held, released, never
// created, invalid. In a namespace holding more than 32 Leases per
// election asked, it reads each election with a Get instead. It runs
// alone: its holders' 3 s leases, never renewed, must outlive the test's
// hundred requests.
func TestLeadersReadsInOneList(t *testing.T) {
	s := testNamespace(t, testServer(t))
	holder, reader := testBackend(t, s, nil), testBackend(t, s, nil)
	var names []string
	for i := range 10 {
		names = append(names, "part/"+strconv.Itoa(i))
		mustCampaign(t, holder, cand(names[i], "h"+strconv.Itoa(i)))
	}
	released := mustCampaign(t, holder, cand("part/released", "r"))
	if err := released.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	names = append(names, "part/released", "part/never", "Bad\x00name")

	// Lease requests: the samples of the apiserver's clock that readers
	// take (at most one per clockMaxAge) are not counted.
	leaseRequests := func() int64 {
		n, _ := reader.Requests()
		return n - reader.clock.taken.Load()
	}
	before := leaseRequests()
	hs, errs := reader.Leaders(testCtx(t), names)
	if after := leaseRequests(); after-before != 1 {
		t.Errorf("Leaders of %d elections sent %d requests; want 1 List", len(names), after-before)
	}
	for i, name := range names {
		want, werr := reader.Leader(testCtx(t), name)
		switch {
		case i < 10 && (errs[i] != nil || hs[i].Identity != "h"+strconv.Itoa(i) || hs[i].Token != want.Token || hs[i].Token == 0):
			t.Errorf("Leaders[%q] = %+v, %v; want holder h%d with token %d", name, hs[i], errs[i], i, want.Token)
		case i == 10 || i == 11:
			if !errors.Is(errs[i], backend.ErrNoLeader) || !errors.Is(werr, backend.ErrNoLeader) {
				t.Errorf("Leaders[%q]: %v, Leader: %v; want both ErrNoLeader", name, errs[i], werr)
			}
		case i == 12:
			if !errors.Is(errs[i], backend.ErrInvalid) {
				t.Errorf("Leaders[%q]: %v; want ErrInvalid", name, errs[i])
			}
		}
	}

	// Crowd the namespace: more than 32 Leases per election of a batch
	// of two.
	leases := s.client(t).Leases(s.ns)
	for i := range 70 {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "crowd-" + strconv.Itoa(i), Namespace: s.ns}}
		if _, err := leases.Create(testCtx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for round, want := range []int64{1, 2} { // the List that counts them, then a Get each
		before = leaseRequests()
		hs, errs = reader.Leaders(testCtx(t), names[:2])
		after := leaseRequests()
		if after-before != want {
			t.Errorf("round %d: Leaders of 2 elections in a namespace of %d Leases sent %d requests; want %d", round, reader.listed.Load(), after-before, want)
		}
		for i := range 2 {
			if errs[i] != nil || hs[i].Identity != "h"+strconv.Itoa(i) {
				t.Errorf("round %d: Leaders[%q] = %+v, %v; want holder h%d", round, names[i], hs[i], errs[i], i)
			}
		}
	}
}
