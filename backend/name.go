package backend

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxElectionLen is the longest election name, in bytes, that
// [ValidateElection] accepts.
const MaxElectionLen = 256

// ValidateElection checks an election name against the rules every backend
// shares, so that one name means the same election on every store:
//
//   - 1 to [MaxElectionLen] bytes of valid UTF-8;
//   - no control characters (including NUL), and no Unicode space other than
//     the ASCII space;
//   - '/' separates segments: the name neither starts nor ends with '/', and no
//     segment is empty, "." or "..".
//
// Names that prefix one another ("jobs" and "jobs/eu") are distinct
// elections. The returned error wraps [ErrInvalid] and names the rule broken.
func ValidateElection(name string) error {
	if name == "" {
		return fmt.Errorf("%w: election name is empty", ErrInvalid)
	}
	if len(name) > MaxElectionLen {
		return fmt.Errorf("%w: election name is %d bytes; want at most %d", ErrInvalid, len(name), MaxElectionLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: election name %q is not valid UTF-8", ErrInvalid, name)
	}
	for i, r := range name {
		if unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ') || r == utf8.RuneError {
			return fmt.Errorf("%w: election name %q has a control or space character %U at byte %d", ErrInvalid, name, r, i)
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: election name %q has an empty segment (leading, trailing or doubled '/')", ErrInvalid, name)
		case ".", "..":
			return fmt.Errorf("%w: election name %q has a %q segment", ErrInvalid, name, seg)
		}
	}
	return nil
}

// ValidateIdentity checks a candidate identity: at most [MaxElectionLen]
// bytes of valid UTF-8 without control characters. The empty identity is
// refused. The returned error wraps [ErrInvalid].
func ValidateIdentity(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: identity is empty", ErrInvalid)
	case len(id) > MaxElectionLen:
		return fmt.Errorf("%w: identity is %d bytes; want at most %d", ErrInvalid, len(id), MaxElectionLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: identity %q is not valid UTF-8", ErrInvalid, id)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: identity %q has a control character %U at byte %d", ErrInvalid, id, r, i)
		}
	}
	return nil
}
