package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/leaderkit/elector/backend"
)

// hashLen is the number of hex digits of SHA-256 that [LeaseName] appends to
// a name it had to change.
const hashLen = 16

// maxReadable is the longest readable part [LeaseName] keeps of a name it
// had to change, leaving room for the hash within a Lease name's 253
// characters.
const maxReadable = validation.DNS1123SubdomainMaxLength - 1 - hashLen

// LeaseName returns the name of the Lease that stores election.
//
// An election name that is a valid Lease name (a DNS-1123 subdomain: at
// most 253 characters of lowercase letters, digits, '-' and '.', starting
// and ending with a letter or digit) is the Lease's name as it is, so an
// election and a client-go LeaseLock of the same name share one Lease —
// unless it has the shape of a mapped name (below), which no plain name
// keeps. Any other name (with '/', spaces, capitals or other characters)
// maps to its lowercased letters and digits, other runs of characters
// replaced by '-', then '-' and the first 16 hex digits of the SHA-256 of
// the name: so "jobs/EU" is stored in the Lease "jobs-eu-" + 16 hex
// digits, and names that differ only in the characters replaced stay
// distinct elections. A valid name of that shape (letters and digits in
// runs joined by single '-', then '-' and 16 lowercase hex digits, or the
// 16 hex digits alone, such as the name of the Lease of "Jobs/EU") is
// mapped the same way, to itself, '-' and the hash of itself: so no two
// election names share a Lease (but for a collision of 64 bits of SHA-256).
func LeaseName(election string) string {
	if len(validation.IsDNS1123Subdomain(election)) == 0 && !looksMapped(election) {
		return election
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(election) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	readable := strings.TrimRight(b.String(), "-")
	if len(readable) > maxReadable {
		readable = strings.TrimRight(readable[:maxReadable], "-")
	}
	sum := sha256.Sum256([]byte(election))
	h := hex.EncodeToString(sum[:])[:hashLen]
	if readable == "" {
		return h
	}
	return readable + "-" + h
}

// looksMapped reports whether name has the shape of a name LeaseName
// maps: hashLen lowercase hex digits, alone or after a readable part (runs
// of lowercase letters and digits joined by single '-', at most
// maxReadable long) and '-'.
func looksMapped(name string) bool {
	if len(name) < hashLen || strings.Trim(name[len(name)-hashLen:], "0123456789abcdef") != "" {
		return false
	}
	if len(name) == hashLen {
		return true
	}
	readable, ok := strings.CutSuffix(name[:len(name)-hashLen], "-")
	if !ok || readable == "" || len(readable) > maxReadable {
		return false
	}
	for run := range strings.SplitSeq(readable, "-") {
		if run == "" || strings.Trim(run, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return false
		}
	}
	return true
}

// leaseName validates election and returns its Lease name.
func leaseName(election string) (string, error) {
	if err := backend.ValidateElection(election); err != nil {
		return "", fmt.Errorf("kube: %w", err)
	}
	return LeaseName(election), nil
}
