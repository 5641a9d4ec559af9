package testenv

import "testing"

// The kube-apiserver's variables, printed by `scripts/servers.sh env` when
// it runs (kind kube).
const (
	envKubeURL        = "ELECTOR_KUBE_URL"
	envKubeKubeconfig = "ELECTOR_KUBE_KUBECONFIG"
	envKubeNobodyURL  = "ELECTOR_KUBE_NOBODY_URL"
)

// KubeURL returns the kube:// URL of the test kube-apiserver (node 1 of
// kind kube for [Fault]): its host:port on 127.0.0.1 and the query
// parameters namespace (the namespace the tests use), ca (the PEM file of
// the CA that signed its certificate) and token_file (a file holding a
// bearer token of a user in system:masters). The apiserver stores its
// objects in the etcd cluster of [EtcdEndpoints], under its own prefix.
func KubeURL(t testing.TB) string {
	t.Helper()
	return lookup(t, envKubeURL)
}

// KubeKubeconfig returns the path of a kubeconfig file whose current
// context reaches the apiserver of [KubeURL] with the same CA, token and
// namespace.
func KubeKubeconfig(t testing.TB) string {
	t.Helper()
	return lookup(t, envKubeKubeconfig)
}

// KubeNobodyURL returns [KubeURL] with the bearer token of a user no Role
// binds: the apiserver authenticates it and forbids every request (403).
func KubeNobodyURL(t testing.TB) string {
	t.Helper()
	return lookup(t, envKubeNobodyURL)
}
