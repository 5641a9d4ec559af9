package backendurl_test

import (
	"testing"
)

// FuzzOpenRedactsNested: the credentials of a URL nested, percent-encoded,
// in a migrate+<phase>:// URL's query, in any parameter, never show in an
// error from Open (see the oracle in redact_test.go). The inner URLs are
// redis:// ones, whose Open makes no connection.
func FuzzOpenRedactsNested(f *testing.F) {
	for _, seed := range [][2]string{
		{":Sec/retPW", "127.0.0.1:7006"},
		{"admin:hunter22", "h1?request_timeout=nope"},
		{"u:p%2Fss", "h1:99999"},
		{"u:s3cret", "h1/x"},
		{"user:pa ss+word", "h1?prefix=a&b"},
		{"u:Sec#ret", "h1"},
		{"admin:k9?secret", "h:7706"},
		{"k", "h:99999"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, cred, tail string) {
		nested(t, openWith(t.Context(), nil), cred, tail)
	})
}
