package depcheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The Kubernetes driver is a module of its own (kube/go.mod): the root
// module's graph, whose go.mod files every importer of the library
// downloads, holds no Kubernetes module, so a program that uses Redis alone
// neither downloads nor compiles client-go.
func TestNoKubernetesModuleInTheGraph(t *testing.T) {
	// GOWORK=off: the root module's own graph, not the workspace's, which
	// holds kube's.
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		// k8s.io/ holds client-go, api, apimachinery and the rest of
		// Kubernetes; sigs.k8s.io/yaml, which etcd's client brings, is a
		// plain YAML library.
		if m := strings.Fields(line); len(m) > 0 && strings.HasPrefix(m[0], "k8s.io/") {
			t.Errorf("go list -m all: got %s, want no Kubernetes module in the root module's graph (the kube driver has its own go.mod)", m[0])
		}
	}
}

// elect carries every driver, the kube driver with client-go among them, so
// it is a module of its own (cmd/elect/go.mod): the root module's graph
// stays free of Kubernetes (above) while elect opens kube:// URLs.
func TestElectIsAModuleWithTheKubeDriver(t *testing.T) {
	dir := "../../cmd/elect"
	cmd := exec.Command("go", "list", "-m") // GOWORK=off: the module of dir alone
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m in %s: %v", dir, err)
	}
	if got, want := strings.TrimSpace(string(out)), mod+"/cmd/elect"; got != want {
		t.Errorf("go list -m in %s: got %s, want %s (elect is a module of its own)", dir, got, want)
	}
	cmd = exec.Command("go", "list", "-deps", ".")
	cmd.Dir = dir
	if out, err = cmd.Output(); err != nil {
		t.Fatalf("go list -deps in %s: %v", dir, err)
	}
	if !strings.Contains("\n"+string(out), "\n"+mod+"/kube\n") {
		t.Errorf("go list -deps in %s: no %s/kube; want elect to import the kube driver (kube:// URLs)", dir, mod)
	}
}
