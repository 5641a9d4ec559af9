package backend

import (
	"fmt"
	"strconv"
	"strings"
)

// Entry is one candidate as a [Registry] lists it.
type Entry struct {
	// ID tells the entry apart from the others of its election (a key, a
	// znode name); the driver chooses it.
	ID string
	// Identity is the candidate's [Candidate.Identity].
	Identity string
	// Priority is the candidate's [Candidate.Priority].
	Priority int
	// Aside reports that the candidate stands aside: it does not campaign,
	// and holds no place in a queue, because a candidate of a higher
	// priority is live.
	Aside bool
}

// entryVersion starts every encoded Entry.
const entryVersion = "elector-candidate/1"

// EncodeEntry returns the value under which drivers store an entry, the same
// on every store: "elector-candidate/1 <priority> <aside|campaigning>
// <identity>". The ID is not encoded; it is the driver's key.
func EncodeEntry(e Entry) string {
	state := "campaigning"
	if e.Aside {
		state = "aside"
	}
	return fmt.Sprintf("%s %d %s %s", entryVersion, e.Priority, state, e.Identity)
}

// DecodeEntry parses a value written by [EncodeEntry]; the ID is left
// empty. It returns an error naming what is wrong with a value that is not
// one.
func DecodeEntry(s string) (Entry, error) {
	f := strings.SplitN(s, " ", 4)
	if len(f) != 4 || f[0] != entryVersion {
		return Entry{}, fmt.Errorf("candidate entry %.40q: want %q <priority> <state> <identity>", s, entryVersion)
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return Entry{}, fmt.Errorf("candidate entry %.40q: priority %q is not an integer", s, f[1])
	}
	var aside bool
	switch f[2] {
	case "aside":
		aside = true
	case "campaigning":
	default:
		return Entry{}, fmt.Errorf("candidate entry %.40q: state %q is neither aside nor campaigning", s, f[2])
	}
	return Entry{Identity: f[3], Priority: p, Aside: aside}, nil
}
