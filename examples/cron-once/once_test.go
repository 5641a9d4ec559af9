package main

import "testing"

// TestInvoicesSentOnce runs the example on the in-memory backend: run
// fails unless every firing sent the invoices exactly once.
func TestInvoicesSentOnce(t *testing.T) {
	if err := run("", 5, 2); err != nil {
		t.Fatal(err)
	}
}
