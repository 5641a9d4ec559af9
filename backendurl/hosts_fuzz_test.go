package backendurl

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzHosts: whatever the host list, Hosts either refuses it or returns
// host:port addresses that are well formed (an IP address or a DNS name, a
// port in 1-65535), one per element, and that Hosts returns unchanged.
func FuzzHosts(f *testing.F) {
	for _, seed := range []string{
		"127.0.0.1", "127.0.0.1:7006", "h1:1,h2:2,h3", "[::1]", "[::1]:6379", "[::1",
		"127.0.0.1:7006:1", " h", "h,", ",h", "h:0", "h:65536", "h:+1", "h:01", "[h]:1",
		"::1", "[fe80::1%eth0]:1", "a..b", "-", "h_1.example.", "[[::1]]",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, hosts string) {
		addrs, err := Hosts(&url.URL{Host: hosts}, "6379")
		if err != nil {
			return
		}
		if want := strings.Count(hosts, ",") + 1; len(addrs) != want {
			t.Fatalf("Hosts(%q): got %d addresses %q, want %d: one per element", hosts, len(addrs), addrs, want)
		}
		for _, a := range addrs {
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				t.Fatalf("Hosts(%q): got address %q, which net.SplitHostPort refuses: %v", hosts, a, err)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
				t.Fatalf("Hosts(%q): got address %q, want a port in 1-65535", hosts, a)
			}
			if net.ParseIP(host) == nil && !validName(host) {
				t.Fatalf("Hosts(%q): got address %q, want an IP address or a DNS name", hosts, a)
			}
			again, err := hostPort(a, "1")
			if err != nil || again != a {
				t.Fatalf("Hosts(%q): got %q, which hostPort turns into %q, %v; want it unchanged", hosts, a, again, err)
			}
		}
	})
}
