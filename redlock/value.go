package redlock

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

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
// (redsync, node-redlock) or otherwise not in this Backend's format.
func parseValue(v string) (parsedValue, bool) {
	idEnd := strings.IndexByte(v, ' ')
	if idEnd < campaignIDLen+2 || v[campaignIDLen] != '.' {
		return parsedValue{}, false
	}
	if _, err := hex.DecodeString(v[:campaignIDLen]); err != nil {
		return parsedValue{}, false
	}
	if _, err := strconv.ParseUint(v[campaignIDLen+1:idEnd], 10, 32); err != nil {
		return parsedValue{}, false
	}
	rest := v[idEnd+1:]
	tokEnd := strings.IndexByte(rest, ' ')
	if tokEnd < 0 {
		return parsedValue{}, false
	}
	tok, err := strconv.ParseUint(rest[:tokEnd], 10, 64)
	if err != nil {
		return parsedValue{}, false
	}
	return parsedValue{id: v[:idEnd+1], token: tok, identity: rest[tokEnd+1:]}, true
}
