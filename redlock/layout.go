package redlock

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// The keys of election E, under the prefix P of Options.Prefix: the lock
// key P+E holds the lease's value; P+E+"//token" is the election's fencing
// counter; releases are announced on the pub/sub channel P+E+"//released".

// counterSuffix is appended to a lock key to name the election's fencing
// counter. No valid election name contains "//" (an empty segment), so the
// counter of one election never collides with the lock key of another under
// the same prefix.
const counterSuffix = "//token"

// channelSuffix is appended to a lock key to name the pub/sub channel on
// which its releases are announced. The payload is the lease id.
const channelSuffix = "//released"

// lockKey returns the lock key of an election.
func (b *Backend) lockKey(election string) string { return b.cfg.prefix + election }

// releaseChannel is the pub/sub channel on which releases of key are
// announced. It must match releaseScript.
func releaseChannel(key string) string { return key + channelSuffix }

// A lease id is 16 random bytes from crypto/rand in hex, followed by "." and
// the attempt number within one Campaign: "<32 hex>.<n>". Every value this
// Backend stores is "<lease id> <token> <identity>"; token 0 means the
// fencing write-back of that lease is still under way.

// campaignIDLen is the length of the random part of a lease id.
const campaignIDLen = 32

// newCampaignID returns a fresh random campaign id: one crypto/rand token
// per acquisition, as the Redis documentation asks of a lock value, so that
// no other client can own or delete a key that is ours.
func newCampaignID() string {
	var b [campaignIDLen / 2]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand doc)
	return hex.EncodeToString(b[:])
}

// leaseID returns the value prefix of attempt n of a campaign.
func leaseID(campaign string, n int) string {
	return campaign + "." + strconv.Itoa(n) + " "
}

// encodeValue returns the stored value of a lease.
func encodeValue(idPrefix string, token uint64, identity string) string {
	return idPrefix + strconv.FormatUint(token, 10) + " " + identity
}

// parsedValue is a lock value written by a Backend.
type parsedValue struct {
	id       string // "<32 hex>.<n> ", the prefix the scripts compare
	token    uint64
	identity string
}

// parseValue parses v, reporting false for values written by other clients
// (redsync, node-redlock) or otherwise not in this Backend's format. Only
// the canonical form that [encodeValue] writes is accepted (lowercase hex,
// decimals without sign or leading zeros), so a parsed value encodes back
// to v byte for byte.
func parseValue(v string) (parsedValue, bool) {
	idEnd := strings.IndexByte(v, ' ')
	if idEnd < campaignIDLen+2 || v[campaignIDLen] != '.' || !lowerHex(v[:campaignIDLen]) {
		return parsedValue{}, false
	}
	if _, ok := canonicalUint(v[campaignIDLen+1:idEnd], 32); !ok {
		return parsedValue{}, false
	}
	rest := v[idEnd+1:]
	tokEnd := strings.IndexByte(rest, ' ')
	if tokEnd < 0 {
		return parsedValue{}, false
	}
	tok, ok := canonicalUint(rest[:tokEnd], 64)
	if !ok {
		return parsedValue{}, false
	}
	return parsedValue{id: v[:idEnd+1], token: tok, identity: rest[tokEnd+1:]}, true
}

// lowerHex reports whether s is lowercase hexadecimal digits only.
func lowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// canonicalUint parses s as strconv.FormatUint writes a number of at most
// bits bits: decimal digits, no sign, no leading zero but in "0".
func canonicalUint(s string, bits int) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return 0, false
	}
	return n, true
}
