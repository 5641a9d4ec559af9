package zookeeper

import (
	"crypto/rand"
	"encoding/hex"
)

// randomSuffix returns 8 random hex digits for unique election names.
func randomSuffix() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
