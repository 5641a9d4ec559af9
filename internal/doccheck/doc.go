// Package doccheck holds a test that every exported identifier in the
// module's packages has a doc comment, as go doc shows it.
package doccheck
