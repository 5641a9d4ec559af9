package backendurl_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/migrate" // migrate+<phase>://
)

// FuzzOpenRedactsNested: the credentials of a URL nested, percent-encoded,
// in a migrate+<phase>:// URL's query never show in an error from Open,
// neither as typed nor encoded. The inner URLs are redis:// ones, whose
// Open makes no connection.
func FuzzOpenRedactsNested(f *testing.F) {
	for _, seed := range [][3]string{
		{"both", ":Sec/retPW", "127.0.0.1:7006"},
		{"new", "admin:hunter22", "h1?node_timeout=nope"},
		{"old", "u:p%2Fss", "h1:99999"},
		{"done", "u:s3cret", "h1/x"},
		{"both", "user:pa ss+word", "h1?prefix=a&b"},
		{"bogus", "u:Sec#ret", "h1"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, phase, userinfo, tail string) {
		if strings.Contains(userinfo, "@") || strings.Contains(userinfo, "//") || strings.HasPrefix(userinfo, "/") {
			return // the userinfo ends at its '@' and starts after the "//"
		}
		inner := "redis://" + userinfo + "@" + tail
		for _, raw := range []string{
			"migrate+" + phase + "://?old=" + url.QueryEscape(inner) + "&new=redis%3A%2F%2Fh2",
			"migrate+" + phase + "://?new=" + url.QueryEscape(inner) + "&old=" + url.QueryEscape(inner) + "&bogus=1",
			"migrate+" + phase + "://h?old=" + url.QueryEscape(inner),
		} {
			_, c, err := backendurl.Open(t.Context(), raw)
			if err != nil {
				for _, form := range []string{userinfo, url.QueryEscape(userinfo), url.PathEscape(userinfo)} {
					if leak := secretRun(err.Error(), form); leak != "" {
						t.Fatalf("Open(%q): got %q, which shows %q of the credentials %q", raw, err, leak, form)
					}
				}
				continue
			}
			_ = c.Close()
		}
	})
}
