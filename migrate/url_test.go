package migrate_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/migrate"
)

// murl is a migrate URL of phase over old and new.
func murl(phase, old, new string) string {
	q := url.Values{}
	if old != "" {
		q.Set("old", old)
	}
	q.Set("new", new)
	return "migrate+" + phase + "://?" + q.Encode()
}

// TestURLRefusesOneStoreTwice: old and new naming the same store's records,
// or a migrate URL inside another, are refused both by CheckURL and when
// opened, with a message saying why; two key spaces on one server are two
// stores.
func TestURLRefusesOneStoreTwice(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, mentions string
	}{
		{"same redis", "redis://h1:7001,h2:7002,h3:7003", "redis://h1:7001,h2:7002,h3:7003", "same store"},
		{"one redis node shared", "redis://h1:7001,h2:7002,h3:7003", "rediss://H3:7003,h4:7004,h5:7005", "same store"},
		{"redis default prefix spelled out", "redis://h1?prefix=elector:", "redis://h1:6379", "same store"},
		{"redis without a prefix", "redis://h1?no_prefix", "redis://h1:6379?no_prefix=T", "same store"},
		{"same etcd", "etcd://e1:2379,e2:2379", "etcd://e2", "same store"},
		{"same zk prefix", "zk://z1:2181/", "zk://z1?prefix=/elector", "same store"},
		{"nested old", murl("both", "redis://h1", "etcd://e1"), "zk://z1", "nested"},
		{"nested new", "redis://h1", murl("new", "redis://h2", "etcd://e1"), "nested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, phase := range []string{"old", "both", "new", "done"} {
				raw := murl(phase, tc.old, tc.new)
				if err := migrate.CheckURL(raw); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), tc.mentions) {
					t.Errorf("CheckURL(%s): got %v; want ErrInvalid saying %q", raw, err, tc.mentions)
				}
				if _, c, err := backendurl.Open(t.Context(), raw); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), tc.mentions) {
					if c != nil {
						_ = c.Close()
					}
					t.Errorf("Open(%s): got %v; want ErrInvalid saying %q", raw, err, tc.mentions)
				}
			}
		})
	}
	for _, tc := range [][2]string{
		{"redis://h1:7001?prefix=a:", "redis://h1:7001?prefix=b:"},
		{"redis://h1:7001/0", "redis://h1:7001/1"},
		{"redis://h1:7001", "etcd://h1:2379"},
		{"etcd://e1?prefix=/a/", "etcd://e1"},
		{"zk://z1?prefix=/a", "zk://z1?prefix=/b"},
		{"redis://h1,h2,h3", "redis://h4,h5,h6"},
	} {
		if err := migrate.CheckURL(murl("both", tc[0], tc[1])); err != nil {
			t.Errorf("CheckURL(old %s, new %s): got %v; want two stores accepted", tc[0], tc[1], err)
		}
	}
}

// TestCheckURL: CheckURL checks the inner URLs without opening them,
// accepts a phase in any case, and never shows a password.
func TestCheckURL(t *testing.T) {
	if err := migrate.CheckURL(murl("Both", "redis://h1", "etcd://e1")); err != nil {
		t.Errorf("phase Both: got %v; want accepted (schemes ignore case)", err)
	}
	for _, tc := range []struct {
		name, raw, mentions string
	}{
		{"no scheme", murl("both", "bogus", "etcd://e1"), "old: not a backend URL"},
		{"unknown scheme", murl("both", "redis://h1", "consul://c1"), `new: scheme "consul" is not registered`},
		{"bad port", murl("both", "redis://h1:99999", "etcd://e1"), "old: host"},
		{"empty host", murl("new", "redis://h1,,h2", "etcd://e1"), "old: empty host"},
		{"unknown phase", murl("dual", "redis://h1", "etcd://e1"), "phase"},
		{"old missing", murl("both", "", "etcd://e1"), "old is missing"},
		{"unescaped '?' in a password", murl("both", "redis://admin:k9?secret@h:7706", "etcd://e1"), "'@' after the host"},
		{"not a migrate URL", "redis://h1", "want a migrate+"},
	} {
		err := migrate.CheckURL(tc.raw)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("%s: CheckURL(%s): got %v; want ErrInvalid saying %q", tc.name, tc.raw, err, tc.mentions)
		}
		if err != nil && (strings.Contains(err.Error(), "k9") || strings.Contains(err.Error(), "secret")) {
			t.Errorf("%s: CheckURL's error shows the password: %v", tc.name, err)
		}
	}
	if err := migrate.CheckURL(murl("done", "", "etcd://e1")); err != nil {
		t.Errorf("phase done without old: got %v; want accepted", err)
	}
}

// FuzzCheckURLRedacts: CheckURL's errors never show four bytes in a row of
// an inner URL's password, however malformed the URL around it. The
// password carries a distinctive run, so that a match cannot come from the
// URL's other parts, which errors may name.
func FuzzCheckURLRedacts(f *testing.F) {
	for _, seed := range [][5]string{
		{"redis", "admin", "k9?", "", "h:7706"},
		{"redis", "admin", "", "?x", "h:7706"},
		{"etcd", "u", "pa#", "ss", "h1,h2"},
		{"zk", "user", "pa/", "ss", "z1/root"},
		{"redis", "u", "", "", "h1:99999"},
		{"consul", "u", "", "x", "h"},
		{"migrate+both", "u", "", "", "?old=x"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], seed[4])
	}
	const secret = "Pw7Qx9Zk"
	f.Fuzz(func(t *testing.T, scheme, user, pre, post, tail string) {
		password := pre + secret + post
		userinfo := user + ":" + password
		if strings.Contains(userinfo, "@") || strings.Contains(userinfo, "//") || strings.HasPrefix(userinfo, "/") {
			return // the userinfo ends at its '@' and starts after the "//"
		}
		others := scheme + user + tail
		inner := scheme + "://" + userinfo + "@" + tail
		for _, raw := range []string{murl("both", inner, "etcd://e1"), murl("new", "redis://h1", inner)} {
			err := migrate.CheckURL(raw)
			if err == nil {
				continue
			}
			for i := 0; i+4 <= len(secret); i++ {
				if run := secret[i : i+4]; strings.Contains(err.Error(), run) && !strings.Contains(others, run) {
					t.Fatalf("CheckURL(%q): got %q, which shows %q of the password", raw, err, run)
				}
			}
		}
	})
}
