package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestUnreachableClusterNamesTheCause: Campaign, Leader and Watch on a
// cluster that cannot be reached return a transient error naming the cause
// within a few seconds, instead of waiting for as long as their ctx lasts
// (the etcd client waits for a connection: gRPC's WaitForReady).
func TestUnreachableClusterNamesTheCause(t *testing.T) {
	t.Parallel()
	tlsEndpoint, _, _, _ := testenv.EtcdTLS(t)
	cases := []struct {
		name     string
		endpoint string
		tls      *tls.Config
		want     string
	}{
		{"refused", "127.0.0.1:1", nil, "connection refused"},
		{"dns", "no-such-host.invalid:2379", nil, "no-such-host.invalid"},
		{"silent", testenv.SilentListener(t), nil, "no connection is established"},
		// The TLS member's certificate is signed by a CA the client does
		// not trust (it uses the system's roots).
		{"x509", tlsEndpoint, &tls.Config{MinVersion: tls.VersionTLS12}, "x509"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cli, err := clientv3.New(clientv3.Config{
				Endpoints: []string{tc.endpoint}, TLS: tc.tls, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			})
			require.NoError(t, err)
			defer func() { _ = cli.Close() }()
			b := testBackend(t, cli, nil)
			ctx := testCtx(t) // a minute
			name := testName(t)
			calls := map[string]func() error{
				"Campaign": func() error { _, err := b.Campaign(ctx, cand(name, "a")); return err },
				"Leader":   func() error { _, err := b.Leader(ctx, name); return err },
				"Watch":    func() error { return b.Watch(ctx, name, func(backend.Holder) {}) },
			}
			for call, f := range calls {
				began := time.Now()
				err := f()
				took := time.Since(began)
				require.Error(t, err, call)
				t.Logf("%s: %v after %v", call, err, took.Round(time.Millisecond))
				// 5 s of slack for a loaded machine; ctx lasts a minute.
				assert.Less(t, took, DefaultRequestTimeout+2*probeTimeout+5*time.Second, "%s: the error comes within the request timeout", call)
				assert.False(t, errors.Is(err, context.DeadlineExceeded) || backend.IsPermanent(err), "%s: %v: want a transient error, not a context or permanent one", call, err)
				assert.Contains(t, err.Error(), tc.want, "%s: the error names the cause", call)
			}
		})
	}
}

// TestWaitBehindHolderIsNotBounded: a Campaign queued behind a holder
// waits for as long as the holder holds, far past RequestTimeout. Not
// t.Parallel: the waiter's requests, on 1 s each and a 2 s lease, must not
// time out, which leaves no room for other tests' load.
func TestWaitBehindHolderIsNotBounded(t *testing.T) {
	cli := testClient(t)
	// The waiter's requests, each bounded by 1 s, must not time out on a
	// loaded machine; the holder's, on the default bound, neither.
	a, b := testBackend(t, cli, nil), testBackend(t, cli, &Options{RequestTimeout: time.Second})
	name := testName(t)
	held := mustCampaign(t, a, backend.Candidate{Election: name, Identity: "a", TTL: 10 * time.Second})
	ch := campaignAsync(testCtx(t), b, backend.Candidate{Election: name, Identity: "b", TTL: 2 * time.Second})
	for range 6 { // 6 s: 6 × the request timeout, while the holder renews
		pending(t, ch, time.Second)
		require.NoError(t, held.Renew(testCtx(t)))
	}
	require.NoError(t, held.Release(testCtx(t)))
	r := await(t, ch, 5*time.Second)
	require.NoError(t, r.err)
	require.NoError(t, r.l.Release(testCtx(t)))
}

func TestRequestTimeoutValidated(t *testing.T) {
	t.Parallel()
	_, err := New(testClient(t), &Options{RequestTimeout: -time.Second})
	require.ErrorIs(t, err, backend.ErrInvalid)
	assert.Contains(t, err.Error(), "Options.RequestTimeout")
}

// TestUnreachableWithCredentialsNamesTheCause: a URL with credentials on a
// cluster that cannot be reached fails before ctx ends, naming the cause
// and neither user nor password, as a transient error (clientv3.New
// authenticates before it returns and said only "context deadline
// exceeded", after ctx had ended). Not t.Parallel (its subtests are): the
// answer is due 0.25 s before ctx ends (the dial bound, 1.75 s, then a 1 s
// probe), which leaves no room for other tests' load.
func TestUnreachableWithCredentialsNamesTheCause(t *testing.T) {
	for _, tc := range []struct{ name, endpoint, want string }{
		{"refused", "127.0.0.1:1", "connection refused"},
		{"silent", testenv.SilentListener(t), "no connection is established"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			u, err := url.Parse("etcd://someuser:s3cr3t@" + tc.endpoint)
			require.NoError(t, err)
			_, _, err = openURL(ctx, u)
			require.Error(t, err)
			t.Logf("%v", err)
			assert.NoError(t, ctx.Err(), "the error comes before ctx ends")
			assert.Contains(t, err.Error(), tc.want, "the error names the cause")
			assert.ErrorIs(t, err, context.DeadlineExceeded, "a transient error")
			assert.False(t, backend.IsPermanent(err))
			assert.NotContains(t, err.Error(), "someuser")
			assert.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}
