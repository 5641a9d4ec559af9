// Package testenv tells tests where the real test servers are and lets them
// inject faults into those servers.
//
// The servers are started by scripts/servers.sh (see its header for the node
// layout; CONTRIBUTING.md says how to run tests by hand), which `make test`
// runs for the whole suite.
//
// Each accessor reads one ELECTOR_* variable printed by `servers.sh env`.
// When the variable is missing, the test is skipped with a message saying how
// to start the servers, except under CI=true, where a missing server is a
// failure: CI must never pass by skipping the tests that matter.
//
// # Servers
//
// Redis: five independent masters ([RedisAddrs]), one requiring a password
// ([RedisAuthAddr]), one mutual TLS and a password ([RedisTLS]). etcd: a
// three-member cluster ([EtcdEndpoints]), a member behind client-certificate
// TLS and password auth ([EtcdTLS]), one whose certificate names only
// [EtcdTLSServerName] ([EtcdTLSNamed]). ZooKeeper: a fast ensemble
// ([ZKServers]), one on the sample timing ([ZKStockServers]), a server
// requiring mutual TLS ([ZKTLS]). Kubernetes: a kube-apiserver on the etcd
// cluster ([KubeURL], [KubeKubeconfig]). All on 127.0.0.1 only.
//
// # Faults
//
// [Fault] kills, pauses, resumes and restarts single nodes through the
// script. The servers are shared by every package, so `make test` runs one
// package's tests at a time (go test -p 1); a test that injects a fault must
// restore the node before it ends.
package testenv
