package elector

import "github.com/leaderkit/elector/backend"

// Holder describes the holder of an election as the backend reports it:
// its Election, Identity, fencing Token, and TTL (the time its lease had
// left when read, or 0 when the backend cannot tell cheaply). The zero
// Holder means no leader; [Holder.IsZero] tests for it. It is the same type
// as the driver contract's, so values pass between the two unchanged.
type Holder = backend.Holder

// ValidateElection checks an election name against the rules every backend
// shares, so that one name means the same election on every store: 1 to
// 256 bytes of valid UTF-8, no control characters and no Unicode space
// other than the ASCII space; '/' separates segments, the name neither
// starts nor ends with '/', and no segment is empty, "." or "..".
// Names that prefix one another ("jobs" and "jobs/eu") are distinct
// elections. The error names the rule broken; [New] returns the same one.
func ValidateElection(name string) error { return backend.ValidateElection(name) }

// ValidateIdentity checks an [Options.Identity]: 1 to 256 bytes of valid
// UTF-8 without control characters. [New] returns the same error.
func ValidateIdentity(id string) error { return backend.ValidateIdentity(id) }
