package zookeeper

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backend"
)

// FuzzElectionPath: a name validateElection accepts is a name every driver
// accepts (backend.ValidateElection), makes a path ZooKeeper's
// PathUtils.validatePath accepts under any valid root, and has no segment a
// candidate znode could be taken for; every refusal wraps ErrInvalid.
func FuzzElectionPath(f *testing.F) {
	for _, seed := range []string{
		"a", "a/b", "zookeeper", "with space", "ünïcode-名前", "_c_x", "a/_c_x-latch-1", "x_c_",
		"emoji-😀", "c1-\u0085", "private-\ue000", "special-\ufff0", "a/./b", "a\x00", "\xed\xa0\x80",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := validateElection(name)
		if err != nil {
			if !errors.Is(err, backend.ErrInvalid) {
				t.Fatalf("validateElection(%q): got %v, want an error wrapping ErrInvalid", name, err)
			}
			return
		}
		if err := backend.ValidateElection(name); err != nil {
			t.Fatalf("validateElection(%q): got nil, but backend.ValidateElection refuses it: %v", name, err)
		}
		path := "/elector/" + name
		if why := zkPathProblem(path); why != "" {
			t.Fatalf("validateElection(%q): got nil, but ZooKeeper refuses the path %q: %s", name, path, why)
		}
		for _, seg := range strings.Split(name, "/") {
			if _, ok := parseCandidate(seg); ok {
				t.Fatalf("validateElection(%q): got nil, but its segment %q reads as a candidate znode", name, seg)
			}
		}
		if err := validatePrefix("/" + name); err != nil && name != "zookeeper" && !strings.HasPrefix(name, "zookeeper/") {
			t.Fatalf("validatePrefix(%q): got %v, want nil: %q is a valid election name", "/"+name, err, name)
		}
	})
}

// zkPathProblem restates ZooKeeper's PathUtils.validatePath
// (https://github.com/apache/zookeeper/blob/master/zookeeper-server/src/main/java/org/apache/zookeeper/common/PathUtils.java)
// over the UTF-16 code units the Java server sees, and returns why it
// refuses path, or "".
func zkPathProblem(path string) string {
	if path == "" || path[0] != '/' {
		return "not absolute"
	}
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		return "trailing '/'"
	}
	for _, seg := range strings.Split(path[1:], "/") {
		switch seg {
		case "":
			return "empty segment"
		case ".", "..":
			return "relative segment"
		}
	}
	for _, r := range path {
		units := []rune{r}
		if r > 0xffff { // a surrogate pair in Java
			units = []rune{0xd800 + (r-0x10000)>>10, 0xdc00 + (r-0x10000)&0x3ff}
		}
		for _, c := range units {
			if c == 0 || (c > 0 && c <= 0x1f) || (c >= 0x7f && c <= 0x9f) || (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff0 && c <= 0xffff) {
				return fmt.Sprintf("character %U", c)
			}
		}
	}
	return ""
}

// FuzzParseCandidate: parseCandidate takes a child for a candidate only in
// the Curator LeaderLatch form, and always takes the names this driver
// creates, with the sequence number ZooKeeper appends as the sort key.
func FuzzParseCandidate(f *testing.F) {
	for _, seed := range []string{
		"_c_6f1c0e58-7b44-4b8e-9a3e-0c1f2d3e4f50-latch-0000000003", "_c_-latch-1", "latch-1", "_c_x-latch-",
		"_c_x-latch-12a", "b", "_c_latch-", "_c_x-latch-0000000001-latch-2", "_c_x-latch--1",
	} {
		f.Add(seed, make([]byte, 16), uint32(3))
	}
	f.Fuzz(func(t *testing.T, child string, random []byte, seq uint32) {
		if c, ok := parseCandidate(child); ok {
			i := strings.LastIndex(child, latchLock)
			if !strings.HasPrefix(child, protectedPrefix) || c.name != child || c.seq == "" || c.seq != child[i+len(latchLock):] || strings.Trim(c.seq, "0123456789-") != "" {
				t.Fatalf("parseCandidate(%q): got %+v, want \"_c_<id>latch-<sequence>\" with the sequence as key", child, c)
			}
		}
		if len(random) != 16 {
			return
		}
		var b [16]byte
		copy(b[:], random)
		name := fmt.Sprintf("%s%s-%s%010d", protectedPrefix, uuid4(b), latchLock, seq)
		if c, ok := parseCandidate(name); !ok || c.seq != fmt.Sprintf("%010d", seq) {
			t.Fatalf("parseCandidate(%q): got %+v, %v; want the sequence %010d", name, c, ok, seq)
		}
	})
}
