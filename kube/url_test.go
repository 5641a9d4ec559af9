package kube

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/migrate"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	u := mustURL(t, "kube://10.0.0.1?namespace=team-a&ca=/ca.pem&token_file=/tok&qps=7&burst=9&drift_factor=0.02&request_timeout=1s&cleanup_timeout=3s&elector_only=true")
	cfg, ns, opts, err := parseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" || ns != "team-a" || cfg.TLSClientConfig.CAFile != "/ca.pem" ||
		cfg.BearerTokenFile != "/tok" || cfg.QPS != 7 || cfg.Burst != 9 {
		t.Errorf("parseURL: got host %q namespace %q CA %q token file %q QPS %v burst %d", cfg.Host, ns, cfg.TLSClientConfig.CAFile, cfg.BearerTokenFile, cfg.QPS, cfg.Burst)
	}
	if *opts != (Options{DriftFactor: 0.02, RequestTimeout: time.Second, CleanupTimeout: 3 * time.Second, ElectorOnly: true}) {
		t.Errorf("parseURL: got options %+v", *opts)
	}
	cfg, ns, _, err = parseURL(mustURL(t, "kube://h:1234"))
	if err != nil || cfg.Host != "https://h:1234" || ns != "default" || cfg.QPS != defaultQPS || cfg.Burst != defaultBurst {
		t.Errorf("parseURL(kube://h:1234): got (%v, %q, %v), want https://h:1234 in namespace default with the default rate limit", cfg, ns, err)
	}
}

func TestParseURLKubeconfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config")
	const config = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.2:7443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret}
contexts:
- name: one
  context: {cluster: c, user: u, namespace: ns-one}
- name: two
  context: {cluster: c, user: u}
current-context: one
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, ns string }{
		{"kube://?kubeconfig=" + path, "ns-one"},
		{"kube://?kubeconfig=" + path + "&context=two", "default"},
		{"kube://?kubeconfig=" + path + "&context=two&namespace=x", "x"},
	} {
		cfg, ns, _, err := parseURL(mustURL(t, tc.url))
		if err != nil {
			t.Errorf("parseURL(%q): %v", tc.url, err)
			continue
		}
		if cfg.Host != "https://127.0.0.2:7443" || cfg.BearerToken != "secret" || ns != tc.ns {
			t.Errorf("parseURL(%q): got host %q token %q namespace %q, want the kubeconfig's server and token in namespace %q", tc.url, cfg.Host, cfg.BearerToken, ns, tc.ns)
		}
	}
}

func TestParseURLRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"kube://u:p@h", "no user or password"},
		{"kube://h/ns", "namespace="},
		{"kube://h?nope=1", "unknown query parameter"},
		{"kube://h?kubeconfig=/x", "no kubeconfig or context"},
		{"kube://?token_file=/x", "need a host"},
		{"kube://?ca=/x", "need a host"},
		{"kube://h1,h2", "one apiserver"},
		{"kube://h?cert=/c", "cert and key go together"},
		{"kube://h?qps=-1", "qps"},
		{"kube://h?qps=NaN", "query parameter qps is NaN"},
		{"kube://h?qps=1e40", "query parameter qps is 1e+40"},
		{"kube://h?qps=Inf", "query parameter qps is +Inf"},
		{"kube://h?burst=1.5", "burst"},
		{"kube://?kubeconfig=/does/not/exist", "kubeconfig"},
	} {
		_, _, _, err := parseURL(mustURL(t, tc.url))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseURL(%q): got %v, want an error mentioning %q", tc.url, err, tc.want)
		}
	}
}

// TestNoKubeconfig: with no kubeconfig anywhere and no service account,
// the error says how to give one, and does not send the user to
// KUBERNETES_MASTER, which nothing reads. It runs alone: it sets
// environment variables.
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, _, _, err := parseURL(mustURL(t, "kube://?namespace=x"))
	if err == nil || strings.Contains(err.Error(), "KUBERNETES_MASTER") || !strings.Contains(err.Error(), "kubeconfig=FILE") {
		t.Errorf("parseURL without any kubeconfig: got %v, want an error naming kubeconfig=FILE and not KUBERNETES_MASTER", err)
	}
}

func TestOpenURLValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, raw := range []string{"kube://h?namespace=Not_A_Label", "kube://h?drift_factor=0.9", "kube://h?request_timeout=-1s"} {
		_, _, err := backendurl.Open(ctx, raw)
		if !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("Open(%q): got %v, want an error wrapping ErrInvalid", raw, err)
		}
	}
}

// The kube:// URL that servers.sh exports opens a working Backend, and so
// does its kubeconfig.
func TestOpenURLRealServer(t *testing.T) {
	t.Parallel() // elections of its own
	for _, raw := range []string{testenvKubeURL(t), "kube://?kubeconfig=" + testenvKubeconfig(t)} {
		b, closer, err := backendurl.Open(testCtx(t), raw)
		if err != nil {
			t.Fatalf("Open(%q): %v", raw, err)
		}
		name := testName(t)
		l, err := b.Campaign(testCtx(t), cand(name, "alice"))
		if err != nil {
			t.Fatalf("Campaign through %q: %v", raw, err)
		}
		if h, err := b.Leader(testCtx(t), name); err != nil || h.Identity != "alice" {
			t.Errorf("Leader through %q: got (%+v, %v), want alice", raw, h, err)
		}
		if err := l.Release(testCtx(t)); err != nil {
			t.Errorf("Release: %v", err)
		}
		if err := closer.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// TestMigrateURLSameLeases: a migrate URL whose old and new kube:// URLs
// reach the same Leases, written differently (a client parameter more, or
// the kubeconfig form of the same apiserver and namespace), is refused: a
// candidate would hold the old lease and wait for ever behind its own
// Lease on the new side. Another namespace is another store.
func TestMigrateURLSameLeases(t *testing.T) {
	t.Parallel()
	host := testenvKubeURL(t)
	kc := "kube://?kubeconfig=" + url.QueryEscape(testenvKubeconfig(t))
	check := func(old, new string) error {
		return migrate.CheckURL("migrate+both://?old=" + url.QueryEscape(old) + "&new=" + url.QueryEscape(new))
	}
	for _, pair := range [][2]string{{host, host + "&qps=60"}, {kc, host}, {host + "&burst=7", kc + "&namespace=default"}} {
		if err := check(pair[0], pair[1]); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "same store") {
			t.Errorf("old %s, new %s: got %v; want them refused as the same store", pair[0], pair[1], err)
		}
	}
	if !strings.Contains(host, "namespace=default") {
		t.Fatalf("ELECTOR_KUBE_URL %q: want namespace=default in it", host)
	}
	if err := check(host, strings.Replace(host, "namespace=default", "namespace=elector-other", 1)); err != nil {
		t.Errorf("two namespaces of one apiserver: got %v; want them accepted", err)
	}
}
