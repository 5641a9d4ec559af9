package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLeaseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ election, want string }{
		{"my-controller", "my-controller"},
		{"kube-system.scheduler", "kube-system.scheduler"},
		{"a", "a"},
	} {
		if got := LeaseName(tc.election); got != tc.want {
			t.Errorf("LeaseName(%q): got %q, want %q: a valid Lease name is used as it is", tc.election, got, tc.want)
		}
	}
	seen := map[string]string{}
	for _, e := range []string{"jobs/eu", "jobs/EU", "jobs-eu", "Jobs", "a b", "ünïcode-名前", "名前", "x/-/y", "-x-", strings.Repeat("ab/", 120) + "c", strings.Repeat("ab/", 120) + "d"} {
		got := LeaseName(e)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("LeaseName(%q) = %q: not a valid Lease name: %v", e, got, errs)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("LeaseName(%q) = LeaseName(%q) = %q: distinct elections share a Lease", e, other, got)
		}
		seen[got] = e
		if LeaseName(e) != got {
			t.Errorf("LeaseName(%q) is not deterministic", e)
		}
	}
	if got := LeaseName("jobs/EU"); !strings.HasPrefix(got, "jobs-eu-") || len(got) != len("jobs-eu-")+hashLen {
		t.Errorf("LeaseName(%q) = %q, want jobs-eu- and %d hex digits", "jobs/EU", got, hashLen)
	}
}

// TestLeaseNameNoCollision: a valid name shaped like another name's mapped
// Lease name does not share that Lease. Mapped names are kept as they were
// (existing Leases stay where they are), and so are the plain names that
// do not have the mapped shape (client-go's LeaseLock names).
func TestLeaseNameNoCollision(t *testing.T) {
	t.Parallel()
	mapped := LeaseName("Jobs/EU")
	if mapped != "jobs-eu-c45523737fddc3a1" {
		t.Fatalf("LeaseName(%q) = %q; want jobs-eu-c45523737fddc3a1, the name existing Leases have", "Jobs/EU", mapped)
	}
	for _, e := range []string{mapped, "c45523737fddc3a1", LeaseName("名前"), "a-b-0123456789abcdef"} {
		got := LeaseName(e)
		if got == mapped || got == e || len(validation.IsDNS1123Subdomain(got)) > 0 {
			t.Errorf("LeaseName(%q) = %q; want a valid Lease name of its own, not %q nor itself", e, got, mapped)
		}
		if LeaseName(got) == got {
			t.Errorf("LeaseName(%q) = %q, which is its own Lease name too", e, got)
		}
	}
	// Plain names keep their Lease: not the mapped shape.
	for _, e := range []string{"a-b-0123456789abcdeg", "a.b-0123456789abcdef", "a--b-0123456789abcdef", "0123456789abcde", "x0123456789abcdef", "my-controller-1"} {
		if got := LeaseName(e); got != e {
			t.Errorf("LeaseName(%q) = %q; want itself: it does not have the mapped shape", e, got)
		}
	}
}
