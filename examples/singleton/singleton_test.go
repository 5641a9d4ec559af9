package main

import (
	"errors"
	"testing"
)

// TestStaleWriteRefused runs the example: the paused ex-leader's write is
// refused, and the store ends with the new leader's token.
func TestStaleWriteRefused(t *testing.T) {
	db, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if db.highest != 2 || !errors.Is(db.refused, errStale) {
		t.Errorf("store: highest token %d, refused %v; want 2 and a stale-token refusal", db.highest, db.refused)
	}
}
