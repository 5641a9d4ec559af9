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
// lower tokens) and ELECT_TERM_START; every other ELECT_* variable, which
// may hold credentials, is removed. When the term ends, COMMAND's tree gets
// SIGTERM, then SIGKILL after --grace. A lease elect gives up (stopped, or
// COMMAND exited) is kept renewed meanwhile and then released, so another
// replica takes over at once; a lost lease ends the term --safety-margin
// before its deadline with half that as grace, so the command is dead
// before another replica can be elected. SIGHUP, SIGUSR1, SIGUSR2 and
// SIGWINCH are forwarded; SIGINT and SIGTERM stop elect, a second one kills
// COMMAND. --on-exit (exit, restart or resign) decides what follows
// COMMAND's own exit. With --once, for cron, COMMAND runs at most once
// across the replicas for one firing.
//
// COMMAND runs under a watchdog, elect's own binary in a hidden mode, that
// kills what is left of its tree when it exits, and the whole tree within
// milliseconds if elect dies, even of SIGKILL. On Linux it is a child
// subreaper and also reaches processes that left COMMAND's process group
// or session; elsewhere only the group. How, what it cannot reach, and why
// not a cgroup: docs/elect.md.
//
// # Other subcommands
//
// status prints the leader's identity, token and remaining lease; watch
// the leader and each change (--json: one object per line). partitions
// prints who owns what in a group of package partition, exiting 1 when a
// partition has no owner. compare runs the same workloads on every
// --backend and prints a table, --json, --markdown or --html FILE. migrate
// url prints the migrate+PHASE:// URL of a step of package migrate's
// runbook; migrate cleanup is its last step. version prints the module
// version, VCS revision and Go version. With --metrics-addr, elect run
// serves Prometheus metrics on /metrics (package promelector) and /healthz
// (503 when the elector is stuck, see elector.Elector.Check).
//
// # Exit codes
//
//	0    success; with --once, also when another replica ran (or runs) the command;
//	     elect run stopped by SIGINT or SIGTERM (with --once, once COMMAND
//	     has run: COMMAND's status)
//	1    no leader: status finds none, partitions an unowned partition;
//	     --once: not elected within --wait while no replica leads
//	2    what the user must change: bad flags, environment variables or
//	     backend URL, a TTL the backend refuses, credentials or permissions
//	     the server refuses at the first request
//	3    the backend cannot be reached, or did not answer within --timeout
//	     (or --wait)
//	4    --once: leadership was lost while COMMAND ran; it was stopped
//	125  elect itself failed
//	126  COMMAND could not be started; 127 COMMAND was not found
//	any other  COMMAND's own exit status (128+N when signal N killed it)
package main
