package redlock

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

func init() {
	backendurl.Register("redis", backendurl.OpenerFunc(openURL))
	backendurl.Register("rediss", backendurl.OpenerFunc(openURL))
}

// openURL opens redis:// and rediss:// URLs for package backendurl: one
// client per host, a Redlock backend over them; the package documentation,
// section URLs, lists the parameters. Importing this package registers both
// schemes with backendurl.DefaultMux.
func openURL(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
	addrs, err := backendurl.Hosts(u, "6379")
	if err != nil {
		return nil, nil, err
	}
	if err := distinctHosts(addrs); err != nil {
		return nil, nil, err
	}
	db := 0
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return nil, nil, fmt.Errorf("path %q: want a database number such as /0, or no path", u.Path)
		}
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return nil, nil, err
	}
	opts := &Options{
		Prefix:         p.String("prefix"),
		NoPrefix:       p.Bool("no_prefix"),
		RequestTimeout: p.Duration("request_timeout"),
		DriftFactor:    p.Float("drift_factor"),
	}
	dial := p.Duration("dial_timeout")
	tlsCfg, err := p.TLS(u.Scheme == "rediss", "rediss")
	if err != nil {
		return nil, nil, err
	}
	if err := p.Finish(); err != nil {
		return nil, nil, err
	}
	password, _ := u.User.Password()
	clients := make([]redis.UniversalClient, len(addrs))
	cs := make(backendurl.Closers, len(addrs))
	dials := make([]*dialLog, len(addrs))
	for i, a := range addrs {
		dials[i] = new(dialLog)
		nodeTLS := tlsCfg
		if tlsCfg != nil && len(tlsCfg.Certificates) == 0 && tlsCfg.GetClientCertificate == nil {
			nodeTLS = dials[i].askedForCert(tlsCfg)
		}
		c := redis.NewClient(&redis.Options{
			Addr:                  a,
			Username:              u.User.Username(),
			Password:              password,
			DB:                    db,
			TLSConfig:             nodeTLS,
			DialTimeout:           dial,
			ContextTimeoutEnabled: true, // so that RequestTimeout bounds every request
			DisableIdentity:       true, // no CLIENT SETINFO round trip on each connection
		})
		c.AddHook(dials[i]) // before any use: AddHook is not safe for concurrent use
		clients[i], cs[i] = c, c
	}
	b, err := build(clients, opts, dials)
	if err != nil {
		_ = cs.Close()
		return nil, nil, err
	}
	return b, append(backendurl.Closers{b}, cs...), nil
}

// distinctHosts refuses a host list that names one server twice (after
// normalising each host:port as [New] does): each host must be a separate
// Redis master, or one server would count more than once toward a quorum.
func distinctHosts(addrs []string) error {
	seen := make(map[string]int, len(addrs))
	for i, a := range addrs {
		n := normalAddr("tcp", a)
		if j, dup := seen[n]; dup {
			return fmt.Errorf("%w: the host list names the Redis server %s twice (hosts %d and %d); want each master once", backend.ErrInvalid, n, j+1, i+1)
		}
		seen[n] = i
	}
	return nil
}
