package migrate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
)

// storeOf is where an inner URL keeps an election's records: the store's
// kind, its servers and the key space within them. Two inner URLs that
// share a kind, a server and a key space name the same records.
type storeOf struct {
	kind  string          // "redis", "etcd", "zk", or the scheme of another driver
	hosts map[string]bool // host:port, lower-case (another driver's: its host list)
	space string          // key prefix and database, or prefix znode
}

// The key spaces the drivers use when a URL sets none (redlock's
// DefaultPrefix, etcd's empty Prefix, zookeeper's DefaultPrefix).
const (
	redisDefaultPrefix = "elector:"
	zkDefaultPrefix    = "/elector"
)

// parseInner reads the inner URL raw, named name ("old" or "new"), far
// enough to refuse a nested migrate URL and to tell which store it names.
// Its errors never show raw: they name the scheme at most, which holds no
// credentials.
func parseInner(name, raw string) (storeOf, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	scheme = strings.ToLower(scheme)
	switch {
	case !ok:
		return storeOf{}, fmt.Errorf("%w: %s: not a backend URL (no \"://\"); want scheme://host:port[,host:port...], such as redis://, etcd:// or zk://", backend.ErrInvalid, name)
	case strings.HasPrefix(scheme, SchemePrefix):
		return storeOf{}, fmt.Errorf("%w: %s: %w; want the %s store's own URL (redis://, etcd://, zk://...): one migration runs at a time", backend.ErrInvalid, name, errNested, name)
	case !backendurl.DefaultMux().ValidScheme(scheme):
		shown := "the scheme"
		if isScheme(scheme) {
			shown = fmt.Sprintf("scheme %q", scheme)
		}
		return storeOf{}, fmt.Errorf("%w: %s: %s is not registered; want one of %s", backend.ErrInvalid, name, shown, strings.Join(innerSchemes(), ", "))
	}
	// The grammar Open reads it with: an inner URL and the store opened
	// for it cannot disagree, and errors show no credentials.
	u, err := backendurl.Parse(raw)
	if err != nil {
		return storeOf{}, fmt.Errorf("%w: %s: %w", backend.ErrInvalid, name, err)
	}
	hostList := u.Host
	s := storeOf{kind: scheme, hosts: map[string]bool{}}
	var port string
	switch scheme {
	case "redis", "rediss":
		s.kind, port = "redis", "6379"
	case "etcd", "etcds":
		s.kind, port = "etcd", "2379"
	case "zk", "zks":
		s.kind, port = "zk", "2181"
	}
	if port == "" { // another driver's scheme: as its Opener names the store, else as written
		store, ok, err := backendurl.DefaultMux().StoreName(raw)
		switch {
		case err != nil:
			return storeOf{}, fmt.Errorf("%w: %s: %w", backend.ErrInvalid, name, err)
		case ok:
			s.hosts[store] = true
		default:
			s.hosts[strings.ToLower(hostList)] = true
			s.space = u.Path + "?" + u.RawQuery
		}
		return s, nil
	}
	hosts, err := backendurl.Hosts(u, port)
	if err != nil {
		return storeOf{}, fmt.Errorf("%w: %s: %v", backend.ErrInvalid, name, err)
	}
	for _, h := range hosts {
		s.hosts[strings.ToLower(h)] = true
	}
	q := u.Query()
	switch s.kind {
	case "redis":
		s.space = strings.TrimPrefix(u.Path, "/") + " " + redisDefaultPrefix
		if q.Has("prefix") {
			s.space = strings.TrimPrefix(u.Path, "/") + " " + q.Get("prefix")
		}
		if noPrefix, err := strconv.ParseBool(q.Get("no_prefix")); q.Has("no_prefix") && (q.Get("no_prefix") == "" || err == nil && noPrefix) {
			s.space = strings.TrimPrefix(u.Path, "/") + " "
		}
	case "etcd":
		s.space = q.Get("prefix")
	case "zk":
		s.space = q.Get("prefix")
		if s.space == "" {
			s.space = zkDefaultPrefix
		}
	}
	return s, nil
}

// isScheme reports whether s is shaped like a URL scheme.
func isScheme(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-')) {
			return false
		}
	}
	return s != ""
}

// innerSchemes lists the registered schemes an inner URL may have.
func innerSchemes() []string {
	var out []string
	for _, s := range backendurl.DefaultMux().Schemes() {
		if !strings.HasPrefix(s, SchemePrefix) {
			out = append(out, s)
		}
	}
	return out
}

// checkSides refuses inner URLs that nest a migrate URL or name the same
// store's records as old and new: a candidate would hold the old lease and
// then wait for ever behind its own key on the new side. strict also
// refuses an inner URL that parseInner cannot read; otherwise that is left
// to the driver's opener, whose errors say more.
func checkSides(oldURL, newURL string, strict bool) error {
	var stores []storeOf
	for _, side := range [][2]string{{"old", oldURL}, {"new", newURL}} {
		if side[1] == "" {
			continue
		}
		s, err := parseInner(side[0], side[1])
		switch {
		case err == nil:
			stores = append(stores, s)
		case strict || errors.Is(err, errNested):
			return err
		}
	}
	if len(stores) == 2 && stores[0].kind == stores[1].kind && stores[0].space == stores[1].space {
		// In order: the same URLs give the same message.
		for _, h := range slices.Sorted(maps.Keys(stores[0].hosts)) {
			if stores[1].hosts[h] {
				return fmt.Errorf("%w: old and new name the same store (%s server %s, the same key space): a candidate would hold the old lease and wait for ever behind it on the new side; want the new store's URL", backend.ErrInvalid, stores[0].kind, h)
			}
		}
	}
	return nil
}

// errNested is the cause of an inner URL refused for being a migrate URL.
var errNested = errors.New("a migrate URL nested in a migrate URL")
