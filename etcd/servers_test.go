package etcd

import "testing"

func TestRevokesEarly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"3.4.23", true}, {"3.4.30", true}, {"3.4.31", false}, {"3.4.40", false},
		{"3.5.12", true}, {"3.5.13", false}, {"3.5.21", false},
		{"3.6.0", false}, {"3.6.0-rc.1", false}, {"3.7.3", false}, {"4.0.0", false},
		{"3.3.27", true}, {"2.3.8", true}, {"", true}, {"dev", true},
	} {
		if got := revokesEarly(tc.version); got != tc.want {
			t.Errorf("revokesEarly(%q): got %v, want %v: etcd-io/etcd#16822 is in 3.4.31, 3.5.13 and 3.6.0", tc.version, got, tc.want)
		}
	}
}

// The test servers' members are all asked once, and the answer is kept.
// Not t.Parallel: the answer is kept only if every member's Status came
// within statusTimeout (2 s), on a fresh connection.
func TestServersRevokeEarlyCached(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	st, err := cli.Status(testCtx(t), cli.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	early, err := b.serversRevokeEarly(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := revokesEarly(st.Version); early != want {
		t.Errorf("serversRevokeEarly on etcd %s: got %v, want %v", st.Version, early, want)
	}
	if !b.servers.done {
		t.Errorf("serversRevokeEarly: answer not kept although every member answered")
	}
}
