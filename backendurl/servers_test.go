package backendurl_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/etcd"
	_ "github.com/leaderkit/elector/redlock"
	_ "github.com/leaderkit/elector/zookeeper"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestOpenRealServers opens every scheme against the real servers, wins an
// election through it, sees the holder with Leader, and closes: goleak in
// TestMain then proves the closer closed the clients backendurl.Open created.
func TestOpenRealServers(t *testing.T) {
	ep, ca, cert, key := testenv.EtcdTLS(t)
	tlsQuery := url.Values{"ca": {ca}, "cert": {cert}, "key": {key}}.Encode()
	redisTLS, rca, rcert, rkey := testenv.RedisTLS(t)
	zkTLS, zca, zcert, zkey := testenv.ZKTLS(t)
	// request_timeout=1s: this test checks what Open builds, not latency, and
	// a loaded test machine can take more than the default 100 ms.
	urls := map[string]string{
		"redis":      "redis://" + strings.Join(testenv.RedisAddrs(t), ",") + "?prefix=backendurl-test:&request_timeout=1s",
		"redis-auth": fmt.Sprintf("redis://%s:%s@%s/0?request_timeout=1s", testenv.RedisACLUser, testenv.RedisACLPassword, testenv.RedisAuthAddr(t)),
		"etcd":       "etcd://" + strings.Join(testenv.EtcdEndpoints(t), ",") + "?prefix=/backendurl-test/",
		"etcds-auth": fmt.Sprintf("etcds://%s:%s@%s?%s", testenv.EtcdUser, testenv.EtcdPassword, ep, tlsQuery),
		"zk":         "zk://" + strings.Join(testenv.ZKServers(t), ",") + "?prefix=/backendurl-test",
		"rediss-mtls": fmt.Sprintf("rediss://:%s@%s?request_timeout=1s&%s", testenv.RedisPassword, redisTLS,
			url.Values{"ca": {rca}, "cert": {rcert}, "key": {rkey}}.Encode()),
		"zks-mtls": "zks://" + zkTLS + "?" + url.Values{"prefix": {"/backendurl-test"}, "ca": {zca}, "cert": {zcert}, "key": {zkey}}.Encode(),
	}
	for name, raw := range urls {
		t.Run(name, func(t *testing.T) {
			b, closer, err := backendurl.Open(t.Context(), raw)
			if err != nil {
				t.Fatalf("backendurl.Open(%q): %v", raw, err)
			}
			defer func() {
				if err := closer.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			election := fmt.Sprintf("open-%s-%d", name, time.Now().UnixNano())
			l, err := b.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "tester", TTL: 5 * time.Second})
			if err != nil {
				t.Fatalf("Campaign through %s: %v", name, err)
			}
			h, err := b.Leader(t.Context(), election)
			if err != nil || h.Identity != "tester" || h.Token != l.Token() {
				t.Errorf("Leader: got %+v, %v; want tester with token %d", h, err, l.Token())
			}
			if err := l.Release(t.Context()); err != nil {
				t.Errorf("Release: %v", err)
			}
			if _, err := b.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
				t.Errorf("Leader after Release: got %v, want ErrNoLeader", err)
			}
		})
	}
}

// TestOpenWrongCredentials shows that wrong credentials surface as errors
// from the backend's calls, without the password.
func TestOpenWrongCredentials(t *testing.T) {
	raw := fmt.Sprintf("redis://%s:wrong-pw@%s", testenv.RedisACLUser, testenv.RedisAuthAddr(t))
	b, closer, err := backendurl.Open(t.Context(), raw)
	if err != nil {
		t.Fatalf("backendurl.Open(%q): %v", raw, err)
	}
	defer closer.Close()
	_, err = b.Leader(t.Context(), "x")
	if err == nil || errors.Is(err, backend.ErrNoLeader) || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("Leader with a wrong password: got %v, want an authentication error without the password", err)
	}
}
