package backendurl

import (
	"strings"
	"testing"
)

// TestUnregisteredDriverSchemeNamesTheImport: a program that did not import
// a driver is told which import registers its scheme.
func TestUnregisteredDriverSchemeNamesTheImport(t *testing.T) {
	saved := defaultMux
	defer func() { defaultMux = saved }()
	defaultMux = new(Mux)
	for scheme, pkg := range map[string]string{
		"etcd":  "github.com/leaderkit/elector/etcd",
		"redis": "github.com/leaderkit/elector/redlock",
		"zk":    "github.com/leaderkit/elector/zookeeper",
	} {
		_, _, err := Open(t.Context(), scheme+"://u:s3cret@h1")
		want := `import _ "` + pkg + `" to register it`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s://…) with no driver imported: got %v, want an error containing %q", scheme, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%s://…): got %q, want the password redacted", scheme, err)
		}
	}
}
