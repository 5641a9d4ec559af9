package compare_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leaderkit/elector/cmd/elect/internal/compare"
	"github.com/leaderkit/elector/internal/testenv"
	_ "github.com/leaderkit/elector/kube"
)

// TestCompareWithinRateLimit runs compare on the test apiserver through a
// kube:// URL whose client is limited to 40 requests per second, asking
// for 100 held elections renewed every 500ms (200 updates per second):
// the Renew workload holds as many as half the limit renews per interval (10)
// and every workload runs without error; the report states the limit and
// the held count; and the run leaves no Lease of its elections in the
// namespace. It runs in parallel with TestRunLeavesNoRedisKeys (main_test.go).
func TestCompareWithinRateLimit(t *testing.T) {
	t.Parallel()
	const qps = 40
	tg, err := compare.URLTarget(testenv.KubeURL(t)+"&elector_only=true&qps=40&burst=40", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := compare.Short()
	o.TTL = 1500 * time.Millisecond
	o.Held, o.RenewRounds = 100, 3
	o.FloorTTLs = []time.Duration{time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := compare.Run(ctx, []compare.Target{tg}, o)
	if err != nil {
		t.Fatal(err)
	}
	b := rep.Backends[0]
	if err := rep.Failed(); err != nil {
		t.Errorf("compare on kube with qps %d: %v", qps, err)
	}
	if b.RequestRate != qps {
		t.Errorf("report: RequestRate %v; want the URL's qps %d", b.RequestRate, qps)
	}
	if got, want := b.Result(compare.Renew).Held, int(qps/2*(o.TTL/3).Seconds()); got != want {
		t.Errorf("renew held %d elections; want %d, what half of %d requests/s renews every %v", got, want, qps, o.TTL/3)
	}
	// One update per held election per round, and little else: the
	// Backend's watch of the namespace's Leases, started before the rounds.
	if req := b.Result(compare.Renew).Requests; req == nil || req.PerHeld < 1 || req.PerHeld > 1.1 {
		t.Errorf("renew requests: got %+v; want about 1 per held election per round, counted by the Backend", req)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "(10 held: client limit 40 req/s)"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown table does not say %q:\n%s", want, md.String())
	}
	assertNoLeases(t, rep.Prefix)
}

// assertNoLeases fails t if a Lease of an election under prefix is left
// in the test namespace.
func assertNoLeases(t *testing.T, prefix string) {
	t.Helper()
	u, err := url.Parse(testenv.KubeURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := u.Query().Get("namespace")
	cfg, err := clientcmd.BuildConfigFromFlags("", testenv.KubeKubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections() // its connection's goroutines end with it (goleak)
	cli, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := cli.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := strings.ReplaceAll(prefix, "/", "-") + "-"
	var left []string
	for _, l := range list.Items {
		if strings.HasPrefix(l.Name, start) {
			left = append(left, l.Name)
		}
	}
	if len(left) > 0 {
		t.Errorf("%d Leases of the run (%s…) left in namespace %s: %q", len(left), start, ns, left)
	}
}
