package kube

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLeaseName(t *testing.T) {
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
