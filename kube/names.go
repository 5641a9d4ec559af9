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
// election and a client-go LeaseLock of the same name share one Lease.
// Any other name (with '/', spaces, capitals or other characters) maps to
// its lowercased letters and digits, other runs of characters replaced by
// '-', then '-' and the first 16 hex digits of the SHA-256 of the name: so
// "jobs/EU" is stored in the Lease "jobs-eu-" + 16 hex digits, and names
// that differ only in the characters replaced stay distinct elections.
func LeaseName(election string) string {
	if len(validation.IsDNS1123Subdomain(election)) == 0 {
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

// leaseName validates election and returns its Lease name.
func leaseName(election string) (string, error) {
	if err := backend.ValidateElection(election); err != nil {
		return "", fmt.Errorf("kube: %w", err)
	}
	return LeaseName(election), nil
}
