// Command elect runs a command on one replica at a time: the replicas
// campaign in an election kept by any store elector has a driver for
// (Redis, etcd, ZooKeeper, Kubernetes Leases), and only the leader runs the
// command. It is what `consul lock` and `etcdctl lock` are for one store,
// over every one, and it stops the command when leadership is lost — before
// the lease can expire, so that two replicas never run it at once. The
// manual, with recipes for cron, Kubernetes, systemd and containers:
// docs/elect.md in the repository.
//
// Usage:
//
//	elect run    [flags] -- COMMAND [ARGS...]   run COMMAND while leading
//	elect status [flags]                        print the current leader
//	elect watch  [flags]                        print each change of leader
//	elect partitions [flags]                    print who owns each partition of a group
//	elect compare --backend URL --backend URL…  measure backends side by side
//	elect migrate url|cleanup [flags]           move an election between backends
//	elect help   [run|status|watch|partitions|compare|migrate]  show help
//	elect version                               print the version and build information
//
// Every flag has an environment variable: --backend is ELECT_BACKEND,
// --metrics-addr is ELECT_METRICS_ADDR, and so on; a flag given on the
// command line wins. The backend is a URL: package
// github.com/leaderkit/elector/backendurl states the rules every scheme
// shares, and the section URLs of each driver package (redlock, etcd,
// zookeeper, kube) lists its parameters:
//
//	redis://h1:6379,h2:6379,h3:6379   etcd://h1:2379,h2:2379   zk://h1:2181,h2:2181
//	kube://?namespace=billing         (in a pod, or with a kubeconfig)
//
// # elect run
//
// elect run campaigns and, while leading, runs COMMAND with the term in its
// environment: ELECT_TERM_ELECTION, ELECT_TERM_IDENTITY, ELECT_TERM_TOKEN
// (the fencing token: pass it with every write, and have the store refuse
// lower tokens) and ELECT_TERM_START. Every other ELECT_* variable, any of
// which may hold credentials, is removed from it.
//
// When the term ends, each process of COMMAND's tree gets one SIGTERM, then
// SIGKILL after --grace. When elect gives the lease up (it was stopped, or
// COMMAND exited) the lease is kept renewed meanwhile and released
// afterwards, so another replica takes over at once. When the lease is lost
// the term ends --safety-margin before the lease's deadline and the grace
// is cut to half of the safety margin: the command is dead before any other
// replica can be elected. SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH are
// forwarded to COMMAND; SIGINT and SIGTERM stop elect, a second one kills
// COMMAND at once. --on-exit decides what follows COMMAND's own exit: exit,
// restart (after --restart-delay, in the same term) or resign. With --once,
// for cron, COMMAND runs at most once across the replicas for one firing,
// and the winner holds the lease --hold longer (at least --wait).
//
// COMMAND runs under a watchdog, elect's own binary in a hidden mode, that
// kills what is left of COMMAND's tree when COMMAND exits, and the whole
// tree within milliseconds if elect dies, even of SIGKILL. On Linux it is a
// child subreaper, so it also reaches processes that left COMMAND's process
// group or session; on other Unix systems only the process group. A process
// started for COMMAND by another service (systemd-run, at, a container
// runtime) is not in the tree. How, and why not a cgroup: docs/elect.md.
//
// # Other subcommands
//
// status prints the leader's identity, token and remaining lease; watch
// prints the leader and then each change; both print one JSON object per
// line with --json. partitions prints who owns what in a group of package
// github.com/leaderkit/elector/partition, and exits 1 when some partition
// has no owner. compare runs the same workloads on every --backend given
// and prints a table, --json, --markdown or an HTML page (--html FILE),
// removing its elections before it exits. migrate url prints the
// migrate+PHASE:// URL of a step of package
// github.com/leaderkit/elector/migrate's runbook (docs/migration.md);
// migrate cleanup is its last step. version prints the module version, VCS
// revision and Go version from the embedded build information. With
// --metrics-addr, elect run serves Prometheus metrics on /metrics (package
// github.com/leaderkit/elector/promelector) and /healthz (503 when the
// elector is stuck, see elector.Elector.Check).
//
// # Exit codes
//
//	0    success; with --once, also when another replica ran (or runs) the command;
//	     elect run stopped by SIGINT or SIGTERM (with --once, once COMMAND
//	     has run: COMMAND's status)
//	1    status: the election has no leader
//	2    usage: bad flags, environment variables or backend URL
//	3    the backend failed for good; --once: not elected within --wait and no
//	     leader seen; status: the backend could not be reached
//	4    --once: leadership was lost while COMMAND ran; it was stopped
//	125  elect itself failed
//	126  COMMAND could not be started; 127 COMMAND was not found
//	any other  COMMAND's own exit status (128+N when signal N killed it)
package main
