package zookeeper

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/leaderkit/elector/backend"
)

// Curator LeaderLatch's node format (LeaderLatch.java, LOCK_NAME, and
// LockInternals.standardFixForSorting in
// https://github.com/apache/curator/tree/master/curator-recipes):
// <latchPath>/_c_<uuid36>-latch-<seq>, sorted by the text after the last
// "latch-".
const (
	protectedPrefix = "_c_"
	latchLock       = "latch-"
)

// validateElection applies [backend.ValidateElection], then ZooKeeper's path
// rules (PathUtils.validatePath: no U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF;
// the Java server also refuses characters outside the BMP, which it sees as
// surrogates), then this driver's own: no segment may start with "_c_", which
// is reserved for candidate znodes.
func validateElection(name string) error {
	if err := backend.ValidateElection(name); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	for i, r := range name {
		if (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || r > 0xffff {
			return fmt.Errorf("zookeeper: %w: election name %q has character %U at byte %d, which ZooKeeper paths cannot hold", backend.ErrInvalid, name, r, i)
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(seg, protectedPrefix) {
			return fmt.Errorf("zookeeper: %w: election name %q has segment %q; the prefix %q is reserved for candidate znodes", backend.ErrInvalid, name, seg, protectedPrefix)
		}
	}
	return nil
}

// validatePrefix checks Options.Prefix: an absolute ZooKeeper path of at
// least one segment, outside /zookeeper.
func validatePrefix(prefix string) error {
	if prefix == "" || prefix[0] != '/' || prefix == "/" || strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("zookeeper: %w: Options.Prefix is %q; want an absolute path such as \"/elector\", not \"/\" and without a trailing '/'", backend.ErrInvalid, prefix)
	}
	if prefix == "/zookeeper" || strings.HasPrefix(prefix, "/zookeeper/") {
		return fmt.Errorf("zookeeper: %w: Options.Prefix is %q; want a path outside /zookeeper, which the server reserves", backend.ErrInvalid, prefix)
	}
	if err := validateElection(prefix[1:]); err != nil {
		return fmt.Errorf("zookeeper: Options.Prefix is %q; want a valid ZooKeeper path: %w", prefix, err)
	}
	return nil
}

// candidate is one child of an election znode that takes part in it.
type candidate struct {
	name string // child name, e.g. _c_<uuid>-latch-0000000003
	seq  string // sort key: the text after the last "latch-"
}

// parseCandidate reports whether child is a candidate znode: "_c_", a
// protection id, then "latch-" and ZooKeeper's decimal sequence suffix.
// Other children (child elections such as "b" of "a/b") are ignored.
func parseCandidate(child string) (candidate, bool) {
	if !strings.HasPrefix(child, protectedPrefix) {
		return candidate{}, false
	}
	i := strings.LastIndex(child, latchLock)
	if i < len(protectedPrefix) {
		return candidate{}, false
	}
	seq := child[i+len(latchLock):]
	if seq == "" {
		return candidate{}, false
	}
	for _, c := range []byte(seq) {
		if (c < '0' || c > '9') && c != '-' {
			return candidate{}, false
		}
	}
	return candidate{name: child, seq: seq}, true
}

// sortCandidates filters children to candidates in Curator's order: by the
// sequence suffix compared as text (standardFixForSorting), ties by name.
func sortCandidates(children []string) []candidate {
	cs := make([]candidate, 0, len(children))
	for _, ch := range children {
		if c, ok := parseCandidate(ch); ok {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(a, b candidate) int {
		if c := strings.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return cs
}

// newUUID returns a random version 4 UUID, the prefix of a protected create.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return uuid4(b)
}

// uuid4 formats 16 random bytes as a version-4 UUID, as Java's
// UUID.randomUUID().toString() does: 36 lowercase characters with dashes.
func uuid4(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, v := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[v>>4], hex[v&0x0f])
	}
	return string(out)
}
