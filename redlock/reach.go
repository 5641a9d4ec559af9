package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis dials in the background and, while the dial retries, lets the
// request wait until its context ends: a refused connection, an unknown
// host or a certificate error all reach the round as "context deadline
// exceeded". The clients a redis:// URL creates therefore carry a dialLog
// hook that keeps each node's last dial error, and a failed node is
// described with it.

// dialLog keeps the last dial error of one client (nil after a dial
// succeeds). It is a go-redis hook that changes nothing but watches dials.
type dialLog struct {
	last atomic.Pointer[error]
	// certAsked is set when a TLS server asked the client, which has no
	// certificate, for one: TLS 1.3 refuses such a client after its
	// handshake, and the refusal often reaches it as a reset connection.
	certAsked atomic.Bool
}

// askedForCert returns a copy of cfg that sends no client certificate, as
// cfg does, and records in d when a server asks for one.
func (d *dialLog) askedForCert(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		d.certAsked.Store(true)
		return new(tls.Certificate), nil // an empty one: send none
	}
	return c
}

var _ redis.Hook = (*dialLog)(nil)

// DialHook records the outcome of every dial.
func (d *dialLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			d.last.Store(&err)
		} else {
			d.last.Store(nil)
		}
		return c, err
	}
}

// ProcessHook passes commands through.
func (d *dialLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (d *dialLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// lastErr returns the last dial error, or nil.
func (d *dialLog) lastErr() error {
	if d == nil {
		return nil
	}
	if p := d.last.Load(); p != nil {
		return *p
	}
	return nil
}

// nodeName returns how messages name node i: its address for a
// *redis.Client, else its index.
func nodeName(c redis.UniversalClient, i int) string {
	if c, ok := c.(*redis.Client); ok && c.Options().Addr != failoverAddr {
		return c.Options().Addr
	}
	return "node " + strconv.Itoa(i)
}

// failure describes the failed request of node i, "<address>: <cause>",
// in a round whose requests were bounded by bound. A connection that
// failed after a server asked for a client certificate the client does not
// have says so. A request that ran out of time is described by the node's
// last dial error when one is known (the real cause), else as a node too
// slow for the bound, with the hint to raise RequestTimeout when that was
// the bound.
func (b *Backend) failure(i int, err error, bound time.Duration) string {
	name := nodeName(b.clients[i], i)
	var d *dialLog
	if i < len(b.dials) {
		d = b.dials[i]
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		var reply redis.Error
		if d != nil && d.certAsked.Load() && !errors.As(err, &reply) {
			return name + ": " + err.Error() + " (the server asked for a client certificate, and none is configured: query parameters cert and key)"
		}
		return name + ": " + err.Error()
	}
	if dialErr := d.lastErr(); dialErr != nil {
		return fmt.Sprintf("%s: %v", name, dialErr)
	}
	if bound > b.cfg.requestTimeout {
		return fmt.Sprintf("%s: no reply within %v, before the lease's deadline", name, bound.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: no reply within RequestTimeout %v (raise RequestTimeout, request_timeout in a URL, if the node is reachable but slow)", name, b.cfg.requestTimeout)
}
