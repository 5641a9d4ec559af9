// Command kube-apiserver is the Kubernetes API server of the release named in
// go.mod, built from its published module so that the kube driver's tests run
// against the real server. scripts/servers.sh builds it (kind kube) into a
// cache outside the checkout; it is never committed as a binary. Of the
// modules it shares with cmd/elect and kube it requires their versions
// (scripts/apiserver-deps.sh, checked by make lint), so that the packages
// the first build compiles serve make installcheck too.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
