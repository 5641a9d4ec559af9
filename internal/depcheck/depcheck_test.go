// Package depcheck checks the module's import graph: a program pays only for
// the drivers it imports.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// deps returns the packages `go list -deps` reports for pkgs.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	return strings.Fields(string(out))
}

// forbid fails for every dependency of pkgs under one of the prefixes.
func forbid(t *testing.T, pkgs []string, prefixes ...string) {
	t.Helper()
	for _, d := range deps(t, pkgs...) {
		for _, p := range prefixes {
			if strings.HasPrefix(d, p) {
				t.Errorf("go list -deps %v: got %s, want no package under %s", pkgs, d, p)
			}
		}
	}
}

const (
	mod      = "github.com/leaderkit/elector"
	goRedis  = "github.com/redis/go-redis/"
	etcdPkgs = "go.etcd.io/"
	zkPkgs   = "github.com/go-zookeeper/"
	etcdDrv  = mod + "/etcd"
	redisDrv = mod + "/redlock"
	zkDrv    = mod + "/zookeeper"
	promPkgs = "github.com/prometheus/"
)

func TestPortableLayerImportsNoDriver(t *testing.T) {
	forbid(t, []string{mod, mod + "/backend", mod + "/backendurl"}, goRedis, etcdPkgs, zkPkgs, etcdDrv, redisDrv, zkDrv, promPkgs)
}

func TestEachDriverBringsOnlyItsClient(t *testing.T) {
	forbid(t, []string{mod, redisDrv}, etcdPkgs, zkPkgs, etcdDrv, zkDrv)
	forbid(t, []string{mod, etcdDrv}, goRedis, zkPkgs, redisDrv, zkDrv)
	forbid(t, []string{mod, zkDrv}, goRedis, etcdPkgs, redisDrv, etcdDrv)
}
