package compare

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/redlock"
)

// counterSuffix names an election's fencing counter: the redlock package
// documents the counter key as the lock key + "//token".
const counterSuffix = "//token"

// redisCleanup deletes the keys of elections on every node of the redis://
// or rediss:// URL u, and nothing else: each fencing counter, which never
// expires, and each lock key, which holds a lease of a cut-off holder that
// has not lapsed yet, a lease whose release did not reach the node, or a
// migrated marker (package migrate), which never expires either. It runs
// once every client of the run is closed, so no lease of the run is still in
// use.
func redisCleanup(ctx context.Context, u *url.URL, elections []string) error {
	addrs, err := backendurl.Hosts(u, "6379")
	if err != nil {
		return err
	}
	p, err := backendurl.NewParams(u)
	if err != nil {
		return err
	}
	prefix := p.String("prefix")
	if prefix == "" && !p.Bool("no_prefix") {
		prefix = redlock.DefaultPrefix
	}
	tlsCfg, err := p.TLS(u.Scheme == "rediss", "rediss")
	if err != nil {
		return err
	}
	db := 0
	if s := strings.TrimPrefix(u.Path, "/"); s != "" {
		if db, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("path %q: want a database number", u.Path)
		}
	}
	keys := make([]string, 0, 2*len(elections))
	for _, e := range elections {
		keys = append(keys, prefix+e, prefix+e+counterSuffix)
	}
	password, _ := u.User.Password()
	var errs []error
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, Username: u.User.Username(), Password: password, DB: db,
			TLSConfig: tlsCfg, DisableIdentity: true})
		for i := 0; i < len(keys); i += 500 {
			if err := c.Del(ctx, keys[i:min(i+500, len(keys))]...).Err(); err != nil {
				errs = append(errs, fmt.Errorf("%s: DEL: %w", a, err))
				break
			}
		}
		_ = c.Close()
	}
	return errors.Join(errs...)
}
