package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
	"github.com/leaderkit/elector/internal/testproxy"
)

// The LeaseCandidate of an entry has a valid name and label whatever the
// election's name (a long one, one with characters a Lease name refuses),
// names the election's Lease in spec.leaseName, carries the entry in its
// annotations, and is listed by its label; Withdraw deletes it.
func TestCandidateObject(t *testing.T) {
	t.Parallel() // elections of its own
	s := testServer(t)
	b := testBackend(t, s, nil)
	ctx := testCtx(t)
	long := testName(t) + "/" + strings.Repeat("Jobs/EU.", 25)
	for _, election := range []string{testName(t), testName(t) + "/Billing EU", long} {
		c := cand(election, "alice")
		c.Priority = 5
		reg, err := b.Register(ctx, c, true)
		if err != nil {
			t.Fatalf("Register(%.40q): got %v, want an entry", election, err)
		}
		if errs := validation.IsDNS1123Subdomain(reg.ID()); len(errs) > 0 {
			t.Fatalf("Register(%.40q): got ID %q, want a valid object name: %v", election, reg.ID(), errs)
		}
		obj, err := b.cands.Get(ctx, reg.ID(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get LeaseCandidate %s: %v", reg.ID(), err)
		}
		if got, want := obj.Spec.LeaseName, LeaseName(election); got != want {
			t.Errorf("spec.leaseName: got %q, want %q, the election's Lease", got, want)
		}
		if errs := validation.IsValidLabelValue(obj.Labels[ElectionLabel]); len(errs) > 0 {
			t.Errorf("label %s: got %q, want a valid label value: %v", ElectionLabel, obj.Labels[ElectionLabel], errs)
		}
		if got, want := obj.Annotations[CandidateAnnotation], "elector-candidate/1 5 aside alice"; got != want {
			t.Errorf("annotation %s: got %q, want %q", CandidateAnnotation, got, want)
		}
		if got, want := obj.Annotations[TTLAnnotation], testTTL.String(); got != want {
			t.Errorf("annotation %s: got %q, want %q", TTLAnnotation, got, want)
		}
		if got := string(obj.Spec.Strategy); got != CandidateStrategy || obj.Spec.EmulationVersion != "" {
			t.Errorf("strategy %q, emulationVersion %q: want %q and none, so that Coordinated Leader Election never elects the entry", got, obj.Spec.EmulationVersion, CandidateStrategy)
		}
		list, err := b.Entries(ctx, election)
		if want := (backend.Entry{ID: reg.ID(), Identity: "alice", Priority: 5, Aside: true}); err != nil || len(list) != 1 || list[0] != want {
			t.Fatalf("Entries(%.40q): got (%v, %v), want [%v]", election, list, err, want)
		}
		if err := reg.Withdraw(ctx); err != nil {
			t.Fatalf("Withdraw: %v", err)
		}
		if _, err := b.cands.Get(ctx, reg.ID(), metav1.GetOptions{}); err == nil {
			t.Errorf("LeaseCandidate %s: still there after Withdraw, want it deleted", reg.ID())
		}
	}
}

// Elections whose Lease names share the first 63 characters have labels
// of their own, and a Lease name that is a valid label value is its own
// label.
func TestElectionLabel(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 70), strings.Repeat("a", 70)+"b"
	if electionLabel(a) == electionLabel(b) {
		t.Errorf("electionLabel(%q) = electionLabel(%q) = %q, want distinct labels", a, b, electionLabel(a))
	}
	for _, n := range []string{a, b, "jobs", strings.Repeat("x.", 40) + "y"} {
		if errs := validation.IsValidLabelValue(electionLabel(n)); len(errs) > 0 {
			t.Errorf("electionLabel(%q) = %q: %v", n, electionLabel(n), errs)
		}
	}
	if got := electionLabel("jobs-eu"); got != "jobs-eu" {
		t.Errorf(`electionLabel("jobs-eu") = %q, want "jobs-eu"`, got)
	}
	if got := candidateName(strings.Repeat("a", 240)+"."+strings.Repeat("b", 12), "0123456789abcdef"); len(validation.IsDNS1123Subdomain(got)) > 0 {
		t.Errorf("candidateName of a 253-character Lease name: %q is not a valid name", got)
	}
}

// On an apiserver that does not serve the LeaseCandidate API, Register
// fails for good, naming the API and the feature gate.
func TestRegisterWithoutCandidateAPI(t *testing.T) {
	t.Parallel()
	s := testServer(t)
	b := testBackend(t, s, nil)
	b.cands = candidateClient(b.rest, b.ns, "/apis/coordination.k8s.io/v1alpha9") // served by no apiserver
	_, err := b.Register(testCtx(t), cand(testName(t), "alice"), false)
	if !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("Register: got %v, want an error wrapping backend.ErrInvalid: the apiserver will never accept it", err)
	}
	for _, want := range []string{"coordination.k8s.io/v1beta1", "CoordinatedLeaderElection"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Register: got %q, want it to name %s", err, want)
		}
	}
}

// A Register whose create reached the apiserver but whose reply was lost
// fails, and leaves no LeaseCandidate behind for readers to count.
func TestFailedRegisterLeavesNoEntry(t *testing.T) {
	t.Parallel() // an election of its own; the lost replies are its own proxy's
	s := testServer(t)
	b, r := testBackend(t, s, nil), testBackend(t, s, nil)
	p := testproxy.New(t, s.addr())
	b.cands = candidateClient(s.clientFor(t, p.Addr(), loseCreateReplies).RESTClient(), b.ns, candidatesPath)
	ctx := testCtx(t)
	name := testName(t)
	if reg, err := b.Register(ctx, cand(name, "alice"), false); err == nil {
		t.Fatalf("Register with its reply lost: got %s, want an error", reg.ID())
	}
	got, err := r.Entries(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("Entries after a Register that failed: got %v, want none", got)
	}
}

// A Register whose create reply was lost, and whose delete of what it may
// have created failed, leaves no second entry beside the candidate's next
// one, nor one after Close.
func TestFailedRegisterCleanedUp(t *testing.T) {
	t.Parallel() // elections of its own; the lost replies are its own proxy's
	s := testServer(t)
	prioritytest.FailedRegister(t, func(t *testing.T) prioritytest.Broken {
		b, r := testBackend(t, s, nil), testBackend(t, s, nil)
		var broken atomic.Bool
		broken.Store(true)
		p := testproxy.New(t, s.addr())
		b.cands = candidateClient(s.clientFor(t, p.Addr(), func(next http.RoundTripper) http.RoundTripper {
			lost := loseCreateReplies(next)
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				switch {
				case !broken.Load():
					return next.RoundTrip(req)
				case req.Method == http.MethodDelete:
					return nil, errors.New("delete not sent by the test")
				}
				return lost.RoundTrip(req)
			})
		}).RESTClient(), b.ns, candidatesPath)
		name := testName(t)
		return prioritytest.Broken{
			Backend:  b,
			Election: name,
			Heal:     func() { broken.Store(false) },
			Read:     func(ctx context.Context) ([]backend.Entry, error) { return r.Entries(ctx, name) },
		}
	})
}

// loseCreateReplies sends every request, and fails each POST as if its
// reply never came.
func loseCreateReplies(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil || req.Method != http.MethodPost {
			return resp, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("reply lost by the test")
	})
}

// An entry is judged by its writer's last write, not by the apiserver's
// Coordinated Leader Election controller pinging it (an update that owns
// spec.pingTime alone, as the apiserver records it in managedFields), which
// the controller does to the entries of a crashed process too; a write of
// any other field counts.
func TestPingDoesNotKeepEntryLive(t *testing.T) {
	t.Parallel()
	w := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	local := time.Now()
	entry := func(later string) *coordinationv1beta1.LeaseCandidate {
		obj := &coordinationv1beta1.LeaseCandidate{}
		obj.Name = "c"
		obj.CreationTimestamp = metav1.NewTime(w.Add(-time.Hour))
		obj.Annotations = map[string]string{CandidateAnnotation: backend.EncodeEntry(backend.Entry{Identity: "dave"}), TTLAnnotation: testTTL.String()}
		obj.Spec.LeaseName = "l"
		obj.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "elector-kube", Time: new(metav1.NewTime(w)), FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:leaseName":{},"f:renewTime":{}}}`)},
			{Manager: "kube-apiserver", Time: new(metav1.NewTime(w.Add(3 * time.Second))), FieldsV1: metav1.NewFieldsV1(later)},
		}
		return obj
	}
	for _, tc := range []struct {
		name, later string
		want        time.Duration // after the sample, taken at w
	}{
		{"pinged", `{"f:spec":{"f:pingTime":{}}}`, testTTL + 2*time.Second},
		{"renewed", `{"f:spec":{"f:renewTime":{}}}`, testTTL + 5*time.Second},
		{"pinged and renewed", `{"f:spec":{"f:pingTime":{},"f:renewTime":{}}}`, testTTL + 5*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCandidate(entry(tc.later), "l")
			if !ok {
				t.Fatal("parseCandidate: not an entry")
			}
			got, ok := c.judge(clockSample{server: w, at: local}, true, 0)
			if !ok || got.Sub(local) != tc.want {
				t.Fatalf("judge: lapses %v after the sample (ok %v), want %v", got.Sub(local), ok, tc.want)
			}
		})
	}
}

// Close deletes the LeaseCandidates of the entries it registered.
func TestCloseWithdrawsEntries(t *testing.T) {
	t.Parallel() // an election of its own; it lists only that election's entries
	s := testServer(t)
	a, b := testBackend(t, s, nil), testBackend(t, s, nil)
	ctx := testCtx(t)
	name := testName(t)
	if _, err := a.Register(ctx, cand(name, "alice"), false); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := b.cands.List(ctx, selector(LeaseName(name)))
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("LeaseCandidates after Close: got (%d, %v), want none: Close withdraws its entries", len(list.Items), err)
	}
}

// An Elector with a priority on an apiserver that does not serve the
// LeaseCandidate API stops: Run returns the error naming the API rather
// than campaigning without its priority.
func TestPriorityRefusedWithoutCandidateAPI(t *testing.T) {
	t.Parallel()
	s := testServer(t)
	b := testBackend(t, s, nil)
	b.cands = candidateClient(b.rest, b.ns, "/apis/coordination.k8s.io/v1alpha9") // served by no apiserver
	e, err := elector.New(b, testName(t), &elector.Options{TTL: testTTL, Priority: 3, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatalf("elector.New: %v", err)
	}
	err = e.Run(testCtx(t))
	if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "CoordinatedLeaderElection") {
		t.Fatalf("Run: got %v, want an error wrapping backend.ErrInvalid that names the feature gate", err)
	}
}
