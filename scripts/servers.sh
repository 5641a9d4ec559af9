#!/usr/bin/env bash
# servers.sh — start, stop and break the real servers the elector tests run on.
#
# Usage:
#   servers.sh install                 install the Debian packages if any is missing (root)
#   servers.sh build                   build the kube-apiserver into its cache if it is missing
#   servers.sh start [redis|etcd|zk|kube|all]  start (idempotent) and wait until ready
#   servers.sh stop  [redis|etcd|zk|kube|all]  stop what this script started; remove data
#   servers.sh env                     print `export` lines for the running kinds
#   servers.sh statedir                print the state directory (ELECTOR_STATE_DIR or the default)
#   servers.sh status                  one line per node: port, pid, state
#   servers.sh kill    KIND N          SIGKILL node N (1-based)
#   servers.sh pause   KIND N          SIGSTOP node N
#   servers.sh resume  KIND N          SIGCONT node N
#   servers.sh restart KIND N [--aof] [--no-wait]
#                                      stop node N if it runs, start it again on the same
#                                      port (etcd/zk keep their data; redis starts empty,
#                                      or with AOF fsync=always under --aof, reloading any
#                                      AOF an earlier --aof run left), wait until ready
#   servers.sh pid     KIND N          print node N's PID
#   servers.sh restart redis N --clockshim
#                                      restart Redis node N (1-5) under
#                                      scripts/clockshim.c (built with cc), whose
#                                      wall clock `clock` then moves
#   servers.sh clock   redis N STEP_MS [RATE_PPM]
#                                      step node N's wall clock by STEP_MS (may be
#                                      negative; 0: no step) and make it run
#                                      RATE_PPM parts per million fast (default 0)
#                                      from now on; the node must run --clockshim.
#                                      Redis expires keys by this clock.
#
# Nodes (one line per server kind; each start command is in its *_start function below):
#   redis 1-5  independent masters 127.0.0.1:7001-7005, no persistence
#   redis 6    127.0.0.1:7006, requirepass elector-secret, ACL user elector/elector-acl
#   redis 7    TLS only, 127.0.0.1:7007: mutual TLS (client certificate required),
#              requirepass elector-secret
#   etcd  1-3  cluster, client 127.0.0.1:23791-23793, peer 23801-23803, fast raft timing
#              (heartbeat 100 ms, election timeout 500 ms)
#   etcd  4    single member, client https://127.0.0.1:23794 (client-cert TLS),
#              peer 23804, auth enabled (user root, password elector-root)
#   etcd  5    single member, client https://127.0.0.1:23795 (client-cert TLS), peer
#              23805; its server certificate names only DNS:etcd.internal, so a
#              client must set the TLS server name
#   zk    1-3  ensemble, client 127.0.0.1:21811-21813, fast timing (tickTime 100 ms,
#              syncLimit 5; ELECTOR_ZK_* below), session timeouts 1-30 s
#   zk    4    standalone, TLS only (Netty secureClientPort) on 127.0.0.1:21814,
#              client certificate required
#   zk    5-7  ensemble, client 127.0.0.1:21815-21817, ZooKeeper's stock timing and
#              session timeouts (zoo_sample.cfg, as Debian ships it: tickTime 2000,
#              initLimit 10, syncLimit 5; sessions 4-40 s); four-letter words srvr
#              (the default whitelist) and wchp (the benchmarks count watches), not
#              conf, so clients cannot read the timing
#   kube  1    kube-apiserver, https://127.0.0.1:24431, storing in the etcd cluster
#              (etcd 1-3) under its own prefix; a static bearer token (system:masters).
#              Built from source (k8s.io/kubernetes, scripts/kube-apiserver/) on first
#              use into a cache outside the checkout; starting kube starts etcd too.
#
# TLS material (a CA, server and client certificates, EC P-256) is made with
# openssl into <state dir>/<kind>/tls when a TLS node first starts.
#
# Processes are tracked by PID files under $ELECTOR_STATE_DIR (default
# /dev/shm/elector-servers where /dev/shm is a writable directory, else
# /tmp/elector-servers) that also record the process start time, so a recycled
# PID is never signalled. Nothing is ever killed by name.
set -euo pipefail

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
# The state (data dirs, logs, PID files) lives in memory where it can: the
# servers' fsyncs (etcd's WAL, ZooKeeper's transaction log, Redis's AOF) then
# cost no disk flush, and a process killed by a test keeps what it wrote
# either way. A set takes about 0.6 GB there, most of it etcd's preallocated WAL.
STATE=${ELECTOR_STATE_DIR:-}
if [[ -z $STATE ]]; then
	if [[ -d /dev/shm && -w /dev/shm ]]; then STATE=/dev/shm/elector-servers; else STATE=/tmp/elector-servers; fi
fi
HOST=127.0.0.1
# OFF shifts every port below, so that a second set of servers (another
# ELECTOR_STATE_DIR) can run beside the first: ELECTOR_PORT_OFFSET=100 puts
# Redis on 7101-7107, etcd on 23891-23895, ZooKeeper on 21911-21917 and the
# kube-apiserver on 24531. Within each hundred the kinds use distinct last two
# digits (Redis 01-07, etcd 91-95 and 01-05 in 23xxx-25xxx, ZooKeeper 11-37,
# the apiserver 31 in 24xxx-26xxx), so offsets up to 1900 never collide, and
# every port stays below the kernel's ephemeral range (32768).
OFF=${ELECTOR_PORT_OFFSET:-0}
[[ $OFF =~ ^[0-9]+$ ]] && ((OFF % 100 == 0 && OFF < 2000)) || {
	printf 'servers.sh: error: ELECTOR_PORT_OFFSET must be a multiple of 100 below 2000, got %q\n' "$OFF" >&2
	exit 2
}
START_TIMEOUT=${ELECTOR_START_TIMEOUT:-60} # seconds a kind may take to become ready
STOP_GRACE=${ELECTOR_STOP_GRACE:-5}        # seconds between SIGTERM and SIGKILL
# The timing of ZooKeeper ensemble 1-3, read when a node (re)starts. The
# zookeeper driver refuses a TTL below 2.5 × ((syncLimit + 1) × tickTime +
# 100 ms) (zookeeper.MinSafeTTL; zookeeper/doc.go, # Safety): a follower
# keeps answering its clients for syncLimit × tickTime after its leader last
# counted them. The tests campaign with TTLs of 2 s, which needs (syncLimit
# + 1) × tickTime at most 0.7 s: 100 ms × 5 (1.75 s). The stock timing
# (2000 ms × 5) needs 30.25 s; ensemble 5-7 runs it, for the tests of what
# a stock ensemble allows.
ZK_TICK_MS=${ELECTOR_ZK_TICK_MS:-100}
ZK_SYNC_LIMIT=${ELECTOR_ZK_SYNC_LIMIT:-5}
ZK_INIT_LIMIT=${ELECTOR_ZK_INIT_LIMIT:-100}
for v in ZK_TICK_MS ZK_SYNC_LIMIT ZK_INIT_LIMIT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
		printf 'servers.sh: error: ELECTOR_%s must be a positive integer, got %q\n' "$v" "${!v}" >&2
		exit 2
	}
done

REDIS_PASSWORD=elector-secret
REDIS_ACL_USER=elector
REDIS_ACL_PASSWORD=elector-acl
ETCD_ROOT_PASSWORD=elector-root
ZK_CLASSPATH=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
# slf4j-simple's log lines carry no time unless asked: a chaos run's server
# logs are read beside the candidates' histories.
ZK_LOG_FLAGS=(-Dorg.slf4j.simpleLogger.showDateTime=true '-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS')
# The TLS server's Netty SSL handler needs netty-codec, which zookeeper.jar's
# manifest class path leaves out.
ZK_TLS_CLASSPATH=$ZK_CLASSPATH:/usr/share/java/netty-codec.jar
ETCD_TLS_SERVER_NAME=etcd.internal
# The Go servers (etcd, the kube-apiserver) run on one P (GOMAXPROCS=1), as
# they would in a container limited to one CPU: three sets of them share two
# cores with the tests, and with a P per core each member's runtime spins
# for work on both. An idle etcd set of five used 5.0 CPU-s a minute with
# two Ps, 2.2 with one. Their configuration is unchanged.
SERVER_ENV=(GOMAXPROCS=1)

KINDS=(redis etcd zk kube)
# chromium is not a server: the compare package's test opens its HTML report
# in it (headless), and under CI a missing tool must be installed, not skipped.
# gcc provides cc, which builds scripts/clockshim.c for the chaos clock mode.
PACKAGES=(redis-server etcd-server etcd-client zookeeper libcurator-recipes-java libnetty-java openssl chromium gcc)

log() { printf 'servers.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
now() { printf '%s' "${EPOCHREALTIME/./}"; } # microseconds
since() { # since START_US → "1.234s"
	local us=$(($(now) - $1))
	printf '%d.%03ds' $((us / 1000000)) $((us % 1000000 / 1000))
}

# lock NAME takes an exclusive lock on NAME under the user's cache (the
# descriptor stays open until this script exits, or unlock), waiting for the
# servers.sh that holds it: concurrent starts (test.sh's shards, .ci/run's
# background build) install the packages and build the apiserver once.
LOCKS=${XDG_CACHE_HOME:-$HOME/.cache}/elector
lock() {
	mkdir -p "$LOCKS"
	exec {lock_fd}>"$LOCKS/$1.lock"
	if ! flock -n "$lock_fd"; then
		log "waiting for another servers.sh to finish: $1"
		flock "$lock_fd"
	fi
}
unlock() { exec {lock_fd}>&-; }

# ---------------------------------------------------------------- install

missing_tools() {
	local c f
	for c in redis-server redis-cli etcd etcdctl java openssl chromium cc; do
		command -v "$c" >/dev/null 2>&1 || printf '%s ' "$c"
	done
	for f in /usr/share/java/zookeeper.jar /usr/share/java/slf4j-simple.jar \
		/usr/share/java/curator-recipes.jar /usr/share/java/netty-codec.jar; do
		[[ -e $f ]] || printf '%s ' "$f"
	done
}

cmd_install() {
	local missing lock_fd
	missing=$(missing_tools)
	[[ -z $missing ]] && return 0
	[[ $(id -u) -eq 0 ]] || die "missing: $missing; run as root to install: apt-get install -y ${PACKAGES[*]}"
	lock install
	missing=$(missing_tools) # another servers.sh may have installed them
	[[ -z $missing ]] && { unlock; return 0; }
	log "missing: $missing— installing ${PACKAGES[*]}"
	local t0
	t0=$(now)
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y "${PACKAGES[@]}"
	missing=$(missing_tools)
	[[ -z $missing ]] || die "still missing after install: $missing"
	log "installed in $(since "$t0")"
	unlock
}

# ---------------------------------------------------------------- processes

node_dir() { printf '%s/%s/%s' "$STATE" "$1" "$2"; }

# start_time PID prints field 22 of /proc/PID/stat (jiffies since boot), or
# fails if there is no such live process. A zombie counts as gone once its
# other threads are gone too: a JVM's main thread turns zombie while the
# threads that still hold its sockets are exiting.
start_time() {
	local stat rest f tasks
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	rest=${stat##*) } # the command name may hold spaces; fields resume after ')'
	read -r -a f <<<"$rest"
	if [[ ${f[0]} == Z || ${f[0]} == X ]]; then
		tasks=(/proc/"$1"/task/*)
		((${#tasks[@]} > 1)) || return 1
	fi
	printf '%s' "${f[19]}"
}

proc_state() { # proc_state PID → R, S, T (stopped), ...
	local stat rest
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	rest=${stat##*) }
	printf '%s' "${rest%% *}"
}

# node_pid KIND N prints the PID of node N if the process recorded in its PID
# file is still the one this script started; fails otherwise.
node_pid() {
	local file pid recorded actual
	file="$(node_dir "$1" "$2")/pid"
	[[ -r $file ]] || return 1
	read -r pid recorded <"$file" || return 1
	actual=$(start_time "$pid") || return 1
	[[ $actual == "$recorded" ]] || return 1
	printf '%s' "$pid"
}

# spawn KIND N CMD... starts CMD in its own session, logging to the node's
# log, and records its PID and start time.
spawn() {
	local kind=$1 n=$2 dir pid st
	shift 2
	dir=$(node_dir "$kind" "$n")
	mkdir -p "$dir"
	{
		printf '\n=== %s start:' "$(date -u +%FT%TZ)"
		printf ' %q' "$@"
		printf '\n'
	} >>"$dir/log"
	# In a non-interactive shell the background child is not a process-group
	# leader, so setsid execs in place and $! is the server's own PID.
	setsid "$@" </dev/null >>"$dir/log" 2>&1 &
	pid=$!
	st=$(start_time "$pid") || die "$kind $n exited at once; log tail:$(tail_log "$kind" "$n")"
	printf '%s %s\n' "$pid" "$st" >"$dir/pid"
}

tail_log() { printf '\n'; tail -n 25 "$(node_dir "$1" "$2")/log" 2>/dev/null | sed 's/^/    | /'; }

signal_node() { # signal_node KIND N SIG...
	local kind=$1 n=$2 pid sig
	shift 2
	pid=$(node_pid "$kind" "$n") || return 0
	for sig in "$@"; do kill "-$sig" "$pid" 2>/dev/null || true; done
}

# wait_gone DEADLINE_US KIND N... waits until none of the nodes runs; fails
# at the deadline.
wait_gone() {
	local deadline=$1 kind=$2 n left
	shift 2
	while :; do
		left=0
		for n in "$@"; do node_pid "$kind" "$n" >/dev/null && left=1; done
		((left)) || return 0
		(($(now) < deadline)) || return 1
		sleep 0.05
	done
}

# stop_nodes KIND N... stops the nodes: SIGCONT with SIGTERM (a stopped
# process ignores TERM until continued), SIGKILL after STOP_GRACE seconds.
stop_nodes() {
	local kind=$1 n
	shift
	for n in "$@"; do signal_node "$kind" "$n" CONT TERM; done
	wait_gone $(($(now) + STOP_GRACE * 1000000)) "$kind" "$@" && return 0
	for n in "$@"; do
		node_pid "$kind" "$n" >/dev/null && log "$kind $n ignored SIGTERM for ${STOP_GRACE}s; SIGKILL"
		signal_node "$kind" "$n" KILL
	done
	wait_gone $(($(now) + 5000000)) "$kind" "$@" || die "$kind: a node survived SIGKILL"
}

# port_busy PORT succeeds if something accepts connections on HOST:PORT.
port_busy() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# wait_ready KIND N waits until KIND_ready N succeeds. It fails loudly, with
# the node's log tail, if the node exits or START_TIMEOUT seconds pass.
wait_ready() {
	local kind=$1 n=$2 deadline=$(($(now) + START_TIMEOUT * 1000000))
	until "${kind}_ready" "$n" >/dev/null 2>&1; do
		node_pid "$kind" "$n" >/dev/null ||
			die "$kind $n ($("${kind}_addr" "$n")) exited while starting; log tail:$(tail_log "$kind" "$n")"
		(($(now) < deadline)) ||
			die "$kind $n ($("${kind}_addr" "$n")) not ready after ${START_TIMEOUT}s; log tail:$(tail_log "$kind" "$n")"
		sleep 0.1
	done
}

nodes_of() { # all node numbers of a kind
	case $1 in
	redis) echo 1 2 3 4 5 6 7 ;;
	etcd) echo 1 2 3 4 5 ;;
	zk) echo 1 2 3 4 5 6 7 ;;
	kube) echo 1 ;;
	esac
}

kind_running() { # succeeds if any node of the kind runs
	local n
	for n in $(nodes_of "$1"); do node_pid "$1" "$n" >/dev/null && return 0; done
	return 1
}

# ---------------------------------------------------------------- TLS material

EC_KEY=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

# openssl_in DIR ARGS... runs openssl in DIR, logging to DIR/openssl.log; it
# dies with the log on failure.
openssl_in() {
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && openssl "$@") >>"$dir/openssl.log" 2>&1 ||
		die "openssl $1 failed in $dir:$(tail -n 25 "$dir/openssl.log" | sed 's/^/    | /')"
}

# tls_ca DIR writes a CA (ca.key, ca.crt) into DIR, unless one is there.
tls_ca() {
	[[ -s $1/ca.crt ]] && return 0
	openssl_in "$1" req -x509 "${EC_KEY[@]}" -keyout ca.key -out ca.crt -days 3650 \
		-subj /CN=elector-test-ca \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign
	chmod 600 "$1/ca.key"
}

# tls_cert DIR NAME EKU [SAN] writes NAME.key and NAME.crt (CN elector-NAME),
# signed by DIR's CA, for the extended key usages EKU and, if given, the
# subjectAltName SAN, unless they are there. (One openssl call: req -x509
# -CA, OpenSSL 3.0 or later.)
tls_cert() {
	local dir=$1 name=$2 eku=$3 san=${4:-} ext
	[[ -s $dir/$name.crt ]] && return 0
	ext=(-addext basicConstraints=CA:FALSE -addext keyUsage=critical,digitalSignature,keyEncipherment
		-addext "extendedKeyUsage=$eku")
	if [[ -n $san ]]; then ext+=(-addext "subjectAltName=$san"); fi
	openssl_in "$dir" req -x509 "${EC_KEY[@]}" -keyout "$name.key" -out "$name.crt" -days 3650 \
		-subj "/CN=elector-$name" -CA ca.crt -CAkey ca.key "${ext[@]}"
	chmod 600 "$dir/$name.key"
}

# tls_set DIR makes a CA, a server certificate for 127.0.0.1 and localhost and
# a client certificate in DIR, unless they are there.
tls_set() {
	tls_ca "$1"
	tls_cert "$1" server serverAuth,clientAuth IP:127.0.0.1,DNS:localhost
	tls_cert "$1" client clientAuth
}

# ---------------------------------------------------------------- redis

redis_port() { echo $((7000 + OFF + $1)); }
redis_tls_dir() { printf '%s/redis/tls' "$STATE"; }

# redis_cli N ARGS... runs redis-cli against node N, giving up after 2 s: a
# paused node accepts the connection but never answers.
redis_cli() {
	local n=$1 auth=() tls
	shift
	((n == 6 || n == 7)) && auth=(--no-auth-warning -a "$REDIS_PASSWORD")
	if ((n == 7)); then
		tls=$(redis_tls_dir)
		auth+=(--tls --cacert "$tls/ca.crt" --cert "$tls/client.crt" --key "$tls/client.key")
	fi
	timeout 2 redis-cli -h "$HOST" -p "$(redis_port "$n")" "${auth[@]}" "$@"
}

# clockshim_lib prints the path of the clock shim library, building it
# from scripts/clockshim.c with cc when the source is newer. libfaketime
# cannot be used: it hangs redis-server at start (see clockshim.c).
clockshim_lib() {
	local src lib
	src=$(dirname "$SCRIPT")/clockshim.c
	lib=$STATE/clockshim.so
	mkdir -p "$STATE"
	if [[ ! -e $lib || $src -nt $lib ]]; then
		command -v cc >/dev/null 2>&1 || die "clockshim: no C compiler: apt-get install -y gcc"
		cc -O2 -Wall -shared -fPIC -o "$lib.tmp" "$src" || die "clockshim: cc failed"
		mv "$lib.tmp" "$lib"
	fi
	printf '%s' "$lib"
}

redis_launch() { # redis_launch N [aof] [clockshim]
	local n=$1 aof=${2:-} shim=${3:-} dir port args tls pre=()
	dir=$(node_dir redis "$n")
	port=$(redis_port "$n")
	port_busy "$port" && die "redis $n: port $port is already in use by a process this script did not start"
	mkdir -p "$dir/data"
	if ((n == 7)); then # TLS only, client certificate and password required
		tls=$(redis_tls_dir)
		tls_set "$tls" # made by cmd_start already, unless restarting without it
		args=(--port 0 --tls-port "$port" --tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key"
			--tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients yes --requirepass "$REDIS_PASSWORD")
	else
		args=(--port "$port")
	fi
	args+=(--bind "$HOST" --dir "$dir/data" --daemonize no --save '')
	if [[ $aof == aof ]]; then
		args+=(--appendonly yes --appendfsync always)
	else
		rm -rf "$dir/data/appendonlydir" # a plain start never reloads an old AOF
		args+=(--appendonly no)
	fi
	if ((n == 6)); then
		args+=(--requirepass "$REDIS_PASSWORD"
			--user "$REDIS_ACL_USER" on ">$REDIS_ACL_PASSWORD" '~*' '&*' +@all)
	fi
	rm -f "$dir/clockshim"
	if [[ $shim == clockshim ]]; then
		((n <= 5)) || die "--clockshim is for redis nodes 1-5"
		pre=(env LD_PRELOAD="$(clockshim_lib)" CLOCKSHIM_FILE="$dir/clock")
		rm -f "$dir/clock" # a new process starts with the true time
		touch "$dir/clockshim"
	fi
	spawn redis "$n" "${pre[@]}" redis-server "${args[@]}"
}

# cmd_clock redis N STEP_MS [RATE_PPM]: see the usage. The control file
# holds "OFFSET_US RATE_PPM SINCE_US"; the offset carries what the previous
# rate added, so the clock only steps by STEP_MS.
cmd_clock() {
	local kind=${1:-} n=${2:-} step=${3:-} rate=${4:-0} dir off=0 r=0 since=0 now
	check_node "$kind" "$n"
	[[ $kind == redis ]] || die "clock: redis only"
	[[ $step =~ ^-?[0-9]+$ && $rate =~ ^-?[0-9]+$ ]] || die "clock: want STEP_MS [RATE_PPM] as integers, got '$step' '$rate'"
	dir=$(node_dir redis "$n")
	[[ -e $dir/clockshim ]] || die "clock: redis $n does not run under the clock shim (restart redis $n --clockshim)"
	[[ -e $dir/clock ]] && read -r off r since <"$dir/clock"
	now=${EPOCHREALTIME/./}
	((r != 0 && now > since)) && off=$((off + (now - since) * r / 1000000))
	printf '%d %d %d\n' $((off + step * 1000)) "$rate" "$now" >"$dir/clock.tmp"
	mv "$dir/clock.tmp" "$dir/clock"
}

redis_ready() { [[ $(redis_cli "$1" ping 2>/dev/null) == PONG ]]; }

redis_addr() { printf '%s:%s' "$HOST" "$(redis_port "$1")"; }

redis_wait() { # redis_wait N...
	local n
	for n in "$@"; do wait_ready redis "$n"; done
}

redis_env() {
	local addrs=() n
	for n in 1 2 3 4 5; do addrs+=("$HOST:$(redis_port "$n")"); done
	env_line ELECTOR_REDIS_ADDRS "$(
		IFS=,
		echo "${addrs[*]}"
	)"
	env_line ELECTOR_REDIS_AUTH_ADDR "$HOST:$(redis_port 6)"
	local tls
	tls=$(redis_tls_dir)
	env_line ELECTOR_REDIS_TLS_ADDR "$HOST:$(redis_port 7)"
	env_line ELECTOR_REDIS_TLS_CA "$tls/ca.crt"
	env_line ELECTOR_REDIS_TLS_CERT "$tls/client.crt"
	env_line ELECTOR_REDIS_TLS_KEY "$tls/client.key"
}

# ---------------------------------------------------------------- etcd

etcd_client_port() { echo $((23790 + OFF + $1)); }
etcd_peer_port() { echo $((23800 + OFF + $1)); }
etcd_tls_dir() { printf '%s/etcd/tls' "$STATE"; }

etcd_client_url() {
	local scheme=http
	(($1 >= 4)) && scheme=https
	printf '%s://%s:%s' "$scheme" "$HOST" "$(etcd_client_port "$1")"
}

etcd_cluster_endpoints() { printf '%s,%s,%s' "$(etcd_client_url 1)" "$(etcd_client_url 2)" "$(etcd_client_url 3)"; }

etcdctl_node() { # etcdctl_node N ARGS... (TLS and, once enabled, auth for node 4)
	local n=$1 tls
	shift
	local flags=(--endpoints "$(etcd_client_url "$n")" --dial-timeout 1s --command-timeout 3s)
	if ((n >= 4)); then
		tls=$(etcd_tls_dir)
		flags+=(--cacert "$tls/ca.crt" --cert "$tls/client.crt" --key "$tls/client.key")
		if ((n == 4)) && [[ -e $(node_dir etcd 4)/auth-enabled ]]; then
			flags+=(--user "root:$ETCD_ROOT_PASSWORD")
		fi
		# etcdctl 3.4 cannot set a TLS server name; member 5's certificate
		# names only etcd.internal, so its probe skips verification.
		if ((n == 5)); then flags+=(--insecure-skip-tls-verify); fi
	fi
	ETCDCTL_API=3 etcdctl "${flags[@]}" "$@"
}

# etcd_certs writes a CA, a server certificate for 127.0.0.1/localhost, a
# client certificate (CN elector-client, not an etcd user, so a client must
# still authenticate with a password) and member 5's server certificate, whose
# only name is DNS:etcd.internal, into the TLS dir, once.
etcd_certs() {
	local tls
	tls=$(etcd_tls_dir)
	tls_set "$tls"
	tls_cert "$tls" named serverAuth "DNS:$ETCD_TLS_SERVER_NAME"
}

etcd_launch() { # etcd_launch N
	local n=$1 dir port peer args cluster i tls
	dir=$(node_dir etcd "$n")
	port=$(etcd_client_port "$n")
	peer="http://$HOST:$(etcd_peer_port "$n")"
	port_busy "$port" && die "etcd $n: port $port is already in use by a process this script did not start"
	mkdir -p "$dir"
	if ((n == 4)); then
		etcd_certs
		tls=$(etcd_tls_dir)
		cluster="tls=$peer"
		args=(--name tls --initial-cluster-token elector-tls
			--cert-file "$tls/server.crt" --key-file "$tls/server.key"
			--client-cert-auth --trusted-ca-file "$tls/ca.crt")
	elif ((n == 5)); then
		etcd_certs
		tls=$(etcd_tls_dir)
		cluster="named=$peer"
		args=(--name named --initial-cluster-token elector-named
			--cert-file "$tls/named.crt" --key-file "$tls/named.key"
			--client-cert-auth --trusted-ca-file "$tls/ca.crt")
	else
		cluster=""
		for i in 1 2 3; do cluster+="${cluster:+,}m$i=http://$HOST:$(etcd_peer_port "$i")"; done
		args=(--name "m$n" --initial-cluster-token elector-test)
	fi
	# With a data dir already there (a restart), etcd ignores the initial-* flags.
	# Raft timing: a new raft leader within about 1 s of losing one, and a
	# smallest lease TTL of ceil(1.5 × 500 ms) = 1 s. Each member's idle CPU
	# grows with the heartbeat rate: a set of five idles at 10% of a core with
	# a 50 ms heartbeat, at 6% with 100 ms. Each member runs on one P
	# (SERVER_ENV): see there.
	args+=(--data-dir "$dir/data" --logger zap
		--listen-client-urls "$(etcd_client_url "$n")" --advertise-client-urls "$(etcd_client_url "$n")"
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer"
		--initial-cluster "$cluster" --initial-cluster-state new
		--heartbeat-interval 100 --election-timeout 500)
	spawn etcd "$n" env "${SERVER_ENV[@]}" etcd "${args[@]}"
}

etcd_addr() { etcd_client_url "$1"; }

etcd_ready() { etcdctl_node "$1" endpoint health; }

# etcd_enable_auth turns on auth on the TLS member: user root with the root
# role, once per data dir.
etcd_enable_auth() {
	local marker
	marker="$(node_dir etcd 4)/auth-enabled"
	[[ -e $marker ]] && return 0
	{
		etcdctl_node 4 user add "root:$ETCD_ROOT_PASSWORD" &&
			etcdctl_node 4 role add root &&
			etcdctl_node 4 user grant-role root root &&
			etcdctl_node 4 auth enable
	} >>"$(node_dir etcd 4)/log" 2>&1 || die "etcd 4: enabling auth failed; log tail:$(tail_log etcd 4)"
	touch "$marker"
}

etcd_wait() { # etcd_wait N...
	local n
	for n in "$@"; do
		wait_ready etcd "$n"
		if ((n == 4)); then etcd_enable_auth; fi
	done
}

# etcd_stop stops the members one at a time, after resuming any paused one: a
# leader told to stop waits up to 5 s to hand its leadership over to a peer,
# which must be running and not itself stopping.
etcd_stop() {
	local n
	for n in $(nodes_of etcd); do signal_node etcd "$n" CONT; done
	for n in $(nodes_of etcd); do stop_nodes etcd "$n"; done
}

etcd_env() {
	local tls
	tls=$(etcd_tls_dir)
	env_line ELECTOR_ETCD_ENDPOINTS "$HOST:$(etcd_client_port 1),$HOST:$(etcd_client_port 2),$HOST:$(etcd_client_port 3)"
	env_line ELECTOR_ETCD_TLS_ENDPOINT "$HOST:$(etcd_client_port 4)"
	env_line ELECTOR_ETCD_TLS_CA "$tls/ca.crt"
	env_line ELECTOR_ETCD_TLS_CERT "$tls/client.crt"
	env_line ELECTOR_ETCD_TLS_KEY "$tls/client.key"
	env_line ELECTOR_ETCD_TLS_NAMED_ENDPOINT "$HOST:$(etcd_client_port 5)"
}

# ---------------------------------------------------------------- zookeeper

zk_client_port() { echo $((21810 + OFF + $1)); }
zk_tls_dir() { printf '%s/zk/tls' "$STATE"; }

# zk_certs makes the TLS server's CA, certificates and its PEM key store (key
# then certificate), unless they are there.
zk_certs() {
	local tls
	tls=$(zk_tls_dir)
	tls_set "$tls"
	[[ -s $tls/server.pem ]] || cat "$tls/server.key" "$tls/server.crt" >"$tls/server.pem"
	chmod 600 "$tls/server.pem"
}

zk_launch() { # zk_launch N
	local n=$1 dir port i
	dir=$(node_dir zk "$n")
	port=$(zk_client_port "$n")
	port_busy "$port" && die "zk $n: port $port is already in use by a process this script did not start"
	mkdir -p "$dir/data"
	if ((n == 4)); then
		zk_tls_launch "$dir" "$port"
		return
	fi
	[[ -e $dir/data/myid ]] || echo "$n" >"$dir/data/myid"
	{
		if ((n <= 3)); then
			printf '%s\n' "tickTime=$ZK_TICK_MS" "initLimit=$ZK_INIT_LIMIT" "syncLimit=$ZK_SYNC_LIMIT" \
				minSessionTimeout=1000 maxSessionTimeout=30000 '4lw.commands.whitelist=*'
		else # stock: zoo_sample.cfg's timing and ZooKeeper's default session range
			printf '%s\n' tickTime=2000 initLimit=10 syncLimit=5 4lw.commands.whitelist=srvr,wchp
		fi
		printf '%s\n' "dataDir=$dir/data" "clientPortAddress=$HOST" "clientPort=$port" admin.enableServer=false
		for i in $(zk_members "$n"); do printf 'server.%d=%s:%d:%d\n' "$i" "$HOST" $((21820 + OFF + i)) $((21830 + OFF + i)); done
	} >"$dir/zoo.cfg"
	spawn zk "$n" java -Xms128m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Djava.net.preferIPv4Stack=true "${ZK_LOG_FLAGS[@]}" -cp "$ZK_CLASSPATH" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}

# zk_tls_launch DIR PORT starts the standalone TLS server, node 4: Netty,
# secureClientPort only, a client certificate signed by the CA required
# (ZooKeeper's default ssl.clientAuth=need), and the client's certificate
# identity added to its session by the x509 auth provider. Key stores are PEM
# files (ZooKeeper 3.6+); the key store holds the key and its certificate.
zk_tls_launch() {
	local dir=$1 port=$2 tls
	tls=$(zk_tls_dir)
	zk_certs
	printf '%s\n' tickTime=500 minSessionTimeout=1000 maxSessionTimeout=30000 \
		"dataDir=$dir/data" "secureClientPortAddress=$HOST" "secureClientPort=$port" \
		serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory \
		"ssl.keyStore.location=$tls/server.pem" ssl.keyStore.type=PEM \
		"ssl.trustStore.location=$tls/ca.crt" ssl.trustStore.type=PEM \
		authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider \
		'4lw.commands.whitelist=*' admin.enableServer=false >"$dir/zoo.cfg"
	spawn zk 4 java -Xms64m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Djava.net.preferIPv4Stack=true "${ZK_LOG_FLAGS[@]}" -cp "$ZK_TLS_CLASSPATH" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}

zk_members() { # zk_members N prints the nodes of N's ensemble
	if (($1 <= 3)); then echo 1 2 3; else echo 5 6 7; fi
}

zk_4lw() { # zk_4lw N WORD prints the server's answer
	local tls
	if (($1 == 4)); then # TLS only; -quiet waits for the server to close
		tls=$(zk_tls_dir)
		printf %s "$2" | timeout 2 openssl s_client -quiet -verify_return_error -connect "$HOST:$(zk_client_port 4)" \
			-CAfile "$tls/ca.crt" -cert "$tls/client.crt" -key "$tls/client.key" 2>/dev/null
		return
	fi
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"; printf %s "$3" >&3; cat <&3' _ "$HOST" "$(zk_client_port "$1")" "$2"
}

zk_mode() { zk_4lw "$1" srvr 2>/dev/null | sed -n 's/^Mode: //p'; }

# ruok answers imok even without a quorum; srvr's Mode is the readiness test.
zk_ready() {
	local want='^(leader|follower)$'
	if (($1 == 4)); then want="^standalone$"; fi
	[[ $(zk_mode "$1") =~ $want ]]
}

zk_addr() { printf '%s:%s' "$HOST" "$(zk_client_port "$1")"; }

zk_wait() { # zk_wait N...
	local n
	for n in "$@"; do wait_ready zk "$n"; done
}

zk_env() {
	local tls
	tls=$(zk_tls_dir)
	env_line ELECTOR_ZK_SERVERS "$HOST:$(zk_client_port 1),$HOST:$(zk_client_port 2),$HOST:$(zk_client_port 3)"
	env_line ELECTOR_ZK_TLS_SERVER "$HOST:$(zk_client_port 4)"
	env_line ELECTOR_ZK_TLS_CA "$tls/ca.crt"
	env_line ELECTOR_ZK_TLS_CERT "$tls/client.crt"
	env_line ELECTOR_ZK_TLS_KEY "$tls/client.key"
	env_line ELECTOR_ZK_STOCK_SERVERS "$HOST:$(zk_client_port 5),$HOST:$(zk_client_port 6),$HOST:$(zk_client_port 7)"
}

# ---------------------------------------------------------------- kube (kube-apiserver)

# The apiserver is built from the k8s.io/kubernetes module of this release by
# the wrapper module in scripts/kube-apiserver (its go.mod pins the staging
# modules); the binary is cached under KUBE_CACHE, named for the release and
# a hash of the wrapper's files, so only the first start pays for the build.
KUBE_VERSION=v1.37.2
KUBE_CACHE=${ELECTOR_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/elector}
KUBE_TOKEN=elector-kube-token
KUBE_NOBODY_TOKEN=elector-kube-nobody # a user no Role binds: every request is refused (403)
KUBE_NAMESPACE=default
KUBE_START_TIMEOUT=${ELECTOR_KUBE_START_TIMEOUT:-180} # a cold apiserver on a busy machine is slow

kube_port() { echo $((24430 + OFF + $1)); }
kube_tls_dir() { printf '%s/kube/tls' "$STATE"; }
kube_url() { printf 'https://%s:%s' "$HOST" "$(kube_port "$1")"; }

# kube_needs_etcd KIND... prints the kinds, with etcd before kube when kube is
# among them and etcd neither is nor runs: the apiserver stores in it.
kube_needs_etcd() {
	local kinds=" $* "
	if [[ $kinds == *" kube "* && $kinds != *" etcd "* ]] && ! kind_running etcd; then
		kinds=" etcd${kinds}"
	fi
	echo $kinds
}

# kube_binary prints the path of the cached kube-apiserver, building it first
# when it is missing.
kube_binary() {
	local src hash bin t0 lock_fd
	src=$(dirname "$SCRIPT")/kube-apiserver
	hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)
	bin=$KUBE_CACHE/kube-apiserver-$KUBE_VERSION-$hash
	[[ -x $bin ]] || lock kube-apiserver-build # and look again: another may have built it
	if [[ ! -x $bin ]]; then
		command -v go >/dev/null 2>&1 || die "kube: building kube-apiserver needs the go command"
		mkdir -p "$KUBE_CACHE"
		log "kube: building kube-apiserver $KUBE_VERSION into $bin (minutes on a cold cache)"
		t0=$(now)
		# shellcheck disable=SC2046 # compilegc.sh: the compiler's GC settings, a word list
		(cd "$src" && env GOWORK=off $("$(dirname "$SCRIPT")/compilegc.sh") go build -trimpath -ldflags "-s -w
			-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION
			-X k8s.io/component-base/version.gitMajor=1
			-X k8s.io/component-base/version.gitMinor=${KUBE_VERSION#v1.}" -o "$bin.tmp.$$" .) >&2 ||
			die "kube: building kube-apiserver failed (see the go output above)"
		mv "$bin.tmp.$$" "$bin"
		log "kube: built kube-apiserver in $(since "$t0")"
	fi
	[[ -z ${lock_fd:-} ]] || unlock
	printf '%s' "$bin"
}

# kube_certs writes into the TLS dir, once (the tokens at every start): a CA, the serving certificate for
# 127.0.0.1/localhost and a client certificate (tls_set), the service-account
# signing key pair, the static token file (the token's user is in
# system:masters; a second token's user has no permission at all) and a
# kubeconfig holding the server, the CA and the first token.
kube_certs() {
	local tls
	tls=$(kube_tls_dir)
	tls_set "$tls"
	if [[ ! -s $tls/sa.pub ]]; then
		openssl_in "$tls" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key
		chmod 600 "$tls/sa.key"
		openssl_in "$tls" pkey -in sa.key -pubout -out sa.pub
	fi
	printf '%s\n' "$KUBE_TOKEN" >"$tls/token"
	printf '%s\n' "$KUBE_NOBODY_TOKEN" >"$tls/nobody-token"
	printf '%s,elector-admin,elector-admin,"system:masters"\n%s,elector-nobody,elector-nobody\n' \
		"$KUBE_TOKEN" "$KUBE_NOBODY_TOKEN" >"$tls/tokens.csv"
	chmod 600 "$tls/token" "$tls/nobody-token" "$tls/tokens.csv"
	cat >"$tls/kubeconfig" <<-KUBECONFIG
		apiVersion: v1
		kind: Config
		clusters:
		- name: elector-test
		  cluster:
		    server: $(kube_url 1)
		    certificate-authority: $tls/ca.crt
		users:
		- name: elector-admin
		  user:
		    tokenFile: $tls/token
		contexts:
		- name: elector-test
		  context:
		    cluster: elector-test
		    user: elector-admin
		    namespace: $KUBE_NAMESPACE
		current-context: elector-test
	KUBECONFIG
}

kube_launch() { # kube_launch 1
	local n=$1 dir port bin tls etcds i
	dir=$(node_dir kube "$n")
	port=$(kube_port "$n")
	port_busy "$port" && die "kube $n: port $port is already in use by a process this script did not start"
	# The apiserver waits for its storage: the cluster must run, not yet answer.
	for i in 1 2 3; do node_pid etcd "$i" >/dev/null && break; done ||
		die "kube $n: the etcd cluster does not run; start it first (servers.sh start etcd)"
	bin=$(kube_binary)
	kube_certs
	tls=$(kube_tls_dir)
	etcds="$(etcd_client_url 1),$(etcd_client_url 2),$(etcd_client_url 3)"
	mkdir -p "$dir/certs"
	# Loopback only (so no endpoint reconciler: it refuses a loopback
	# address); its own etcd prefix, so that nothing else in the test
	# cluster is read as Kubernetes objects; no priority and fairness, whose
	# queueing would throttle a test's bursts of Lease updates. Coordinated
	# Leader Election (KEP-4355) and the LeaseCandidate API it uses, for the
	# kube driver's registry of candidates and its interop tests.
	spawn kube "$n" env "${SERVER_ENV[@]}" "$bin" --bind-address "$HOST" --advertise-address "$HOST" --secure-port "$port" \
		--endpoint-reconciler-type none \
		--cert-dir "$dir/certs" --tls-cert-file "$tls/server.crt" --tls-private-key-file "$tls/server.key" \
		--client-ca-file "$tls/ca.crt" --token-auth-file "$tls/tokens.csv" --anonymous-auth=false \
		--authorization-mode RBAC \
		--service-account-issuer "$(kube_url "$n")" --service-account-key-file "$tls/sa.pub" \
		--service-account-signing-key-file "$tls/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
		--etcd-servers "$etcds" --etcd-prefix /elector-kube \
		--enable-priority-and-fairness=false --profiling=false \
		--feature-gates=CoordinatedLeaderElection=true --runtime-config=coordination.k8s.io/v1beta1=true
}

# kube_get PATH prints what the apiserver answers to GET PATH (2 s at most).
kube_get() {
	local tls
	tls=$(kube_tls_dir)
	curl -sf --max-time 2 --cacert "$tls/ca.crt" -H "Authorization: Bearer $KUBE_TOKEN" "$(kube_url 1)$1"
}

# Ready: /readyz answers ok, and the namespace the tests use exists (the
# apiserver's bootstrap controller creates it shortly after it starts).
kube_ready() { [[ $(kube_get /readyz) == ok ]] && kube_get "/api/v1/namespaces/$KUBE_NAMESPACE" >/dev/null; }

kube_addr() { kube_url "$1"; }

kube_wait() { # kube_wait N...
	local n START_TIMEOUT=$KUBE_START_TIMEOUT # read by wait_ready
	for n in "$@"; do wait_ready kube "$n"; done
}

# kube_env exports the kube:// URL of the apiserver: its address, the CA that
# signed its certificate, the file holding the bearer token and the
# namespace; the same URL with the token of a user without permissions; and
# the kubeconfig file holding the first.
kube_env() {
	local tls
	tls=$(kube_tls_dir)
	env_line ELECTOR_KUBE_URL "kube://$HOST:$(kube_port 1)?namespace=$KUBE_NAMESPACE&ca=$tls/ca.crt&token_file=$tls/token"
	env_line ELECTOR_KUBE_NOBODY_URL "kube://$HOST:$(kube_port 1)?namespace=$KUBE_NAMESPACE&ca=$tls/ca.crt&token_file=$tls/nobody-token"
	env_line ELECTOR_KUBE_KUBECONFIG "$tls/kubeconfig"
}

# ---------------------------------------------------------------- commands

env_line() { printf "export %s='%s'\n" "$1" "$2"; } # values hold no single quotes

parse_kinds() { # parse_kinds [KIND|all] → kind names
	case ${1:-all} in
	all) echo "${KINDS[@]}" ;;
	redis | etcd | zk | kube) echo "$1" ;;
	*) die "unknown server kind '$1' (want redis, etcd, zk, kube or all)" ;;
	esac
}

ports_of() { # every port a kind listens on
	case $1 in
	redis) for n in $(nodes_of redis); do redis_port "$n"; done ;;
	etcd) for n in 1 2 3 4 5; do etcd_client_port "$n" && etcd_peer_port "$n"; done ;;
	zk)
		for n in 1 2 3 5 6 7; do zk_client_port "$n" && echo $((21820 + OFF + n)) $((21830 + OFF + n)); done
		zk_client_port 4
		;;
	kube) kube_port 1 ;;
	esac
}

# preflight KIND fails, before anything starts, if a port of a kind none of
# whose nodes runs is taken by someone else.
preflight() {
	local port busy=()
	kind_running "$1" && return 0
	for port in $(ports_of "$1"); do
		if port_busy "$port"; then busy+=("$port"); fi
	done
	((${#busy[@]} == 0)) || die "$1: port(s) ${busy[*]} already in use by processes this script did not start (state dir $STATE)"
}

# launch_kind KIND starts the nodes of KIND that are not running and resumes
# paused ones.
launch_kind() {
	local kind=$1 n
	for n in $(nodes_of "$kind"); do
		if node_pid "$kind" "$n" >/dev/null; then
			signal_node "$kind" "$n" CONT
		else
			"${kind}_launch" "$n"
		fi
	done
}

# make_tls KIND... makes the TLS material of the kinds, one process per kind,
# before any server starts: openssl is slow on a CPU the JVMs are starting on.
make_tls() {
	local kind pids=() pid failed=0
	for kind in "$@"; do
		case $kind in
		redis) tls_set "$(redis_tls_dir)" & ;;
		etcd) etcd_certs & ;;
		zk) zk_certs & ;;
		kube) kube_certs & ;;
		esac
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
	((failed == 0)) || die "making TLS material failed; see the messages above"
}

cmd_start() {
	local kinds kind t0 nodes
	kinds=$(parse_kinds "${1:-all}")
	kinds=$(kube_needs_etcd $kinds)
	cmd_install
	if [[ " $kinds " == *" kube "* ]]; then kube_binary >/dev/null; fi
	mkdir -p "$STATE"
	t0=$(now)
	for kind in $kinds; do preflight "$kind"; done
	# If no node of a kind runs, remove leftovers of an earlier run for a
	# clean start.
	for kind in $kinds; do kind_running "$kind" || rm -rf "${STATE:?}/$kind"; done
	# shellcheck disable=SC2086 # a word list
	make_tls $kinds
	# Launch everything first (the JVMs are slowest; the apiserver after its
	# etcd, whose answer it waits for), then wait for each kind.
	for kind in zk etcd redis kube; do
		if [[ " $kinds " == *" $kind "* ]]; then launch_kind "$kind"; fi
	done
	for kind in $kinds; do
		read -r -a nodes <<<"$(nodes_of "$kind")"
		"${kind}_wait" "${nodes[@]}"
		log "$kind ready ($(since "$t0") since start)"
	done
}

cmd_stop() {
	local kind t0 pids=() n nodes
	t0=$(now)
	for kind in $(parse_kinds "${1:-all}"); do
		# Stop every kind's nodes concurrently; each stop is bounded.
		(
			read -r -a nodes <<<"$(nodes_of "$kind")"
			if [[ $kind == etcd ]]; then etcd_stop; else stop_nodes "$kind" "${nodes[@]}"; fi
			rm -rf "${STATE:?}/$kind"
		) &
		pids+=($!)
	done
	local failed=0
	for n in "${pids[@]}"; do wait "$n" || failed=1; done
	((failed == 0)) || die "stop failed; see the messages above"
	rmdir "$STATE" 2>/dev/null || true
	log "stopped ${1:-all} in $(since "$t0")"
}

cmd_env() {
	local kind header=0
	for kind in "${KINDS[@]}"; do
		kind_running "$kind" || continue
		if ((!header)); then
			env_line ELECTOR_STATE_DIR "$STATE"
			env_line ELECTOR_SCRIPTS "$SCRIPT"
			env_line ELECTOR_PORT_OFFSET "$OFF"
			header=1
		fi
		"${kind}_env"
	done
}

cmd_status() {
	local kind n pid state port
	printf '%-6s %-4s %-6s %-8s %s\n' KIND NODE PORT PID STATE
	for kind in "${KINDS[@]}"; do
		for n in $(nodes_of "$kind"); do
			case $kind in
			redis) port=$(redis_port "$n") ;;
			etcd) port=$(etcd_client_port "$n") ;;
			zk) port=$(zk_client_port "$n") ;;
			kube) port=$(kube_port "$n") ;;
			esac
			if pid=$(node_pid "$kind" "$n"); then
				state=running
				[[ $(proc_state "$pid") == T ]] && state=paused
				[[ $kind == zk && $state == running ]] && state="running ($(zk_mode "$n" || true))"
			elif [[ -e $(node_dir "$kind" "$n")/pid ]]; then
				pid=- state=dead
			else
				pid=- state=stopped
			fi
			printf '%-6s %-4s %-6s %-8s %s\n' "$kind" "$n" "$port" "$pid" "$state"
		done
	done
}

check_node() { # check_node KIND N: valid kind and node number
	local kind=$1 n=${2:-}
	parse_kinds "$kind" >/dev/null
	[[ $kind != all ]] || die "name one kind"
	[[ " $(nodes_of "$kind") " == *" $n "* ]] || die "$kind has no node '$n' (want one of: $(nodes_of "$kind"))"
}

cmd_kill() {
	check_node "$@"
	node_pid "$1" "$2" >/dev/null || die "$1 $2 is not running"
	signal_node "$1" "$2" KILL
	wait_gone $(($(now) + 5000000)) "$1" "$2" || die "$1 $2 survived SIGKILL"
}

cmd_pause() {
	check_node "$@"
	node_pid "$1" "$2" >/dev/null || die "$1 $2 is not running"
	signal_node "$1" "$2" STOP
}

cmd_resume() {
	check_node "$@"
	node_pid "$1" "$2" >/dev/null || die "$1 $2 is not running"
	signal_node "$1" "$2" CONT
}

cmd_restart() {
	local kind=${1:-} n=${2:-} aof="" shim="" wait=1 t0 opt
	check_node "$kind" "$n"
	shift 2
	for opt in "$@"; do
		case $opt in
		--aof) [[ $kind == redis ]] || die "--aof is for redis only"; aof=aof ;;
		--no-wait) wait=0 ;;
		--clockshim) [[ $kind == redis ]] || die "--clockshim is for redis only"; shim=clockshim ;;
		*) die "restart: unknown option '$opt'" ;;
		esac
	done
	t0=$(now)
	stop_nodes "$kind" "$n"
	if [[ $kind == redis ]]; then redis_launch "$n" "$aof" "$shim"; else "${kind}_launch" "$n"; fi
	if ((wait)); then "${kind}_wait" "$n"; fi
	log "$kind $n restarted in $(since "$t0")"
}

cmd_pid() {
	check_node "$@"
	node_pid "$1" "$2" || die "$1 $2 is not running"
	echo
}

usage() { sed -n '2,/^set -euo/p' "$SCRIPT" | sed '$d; s/^# \{0,1\}//' >&2; }

main() {
	local cmd=${1:-}
	[[ $# -gt 0 ]] && shift
	case $cmd in
	install) cmd_install ;;
	build) kube_binary >/dev/null ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop "$@" ;;
	env) cmd_env ;;
	statedir) printf '%s\n' "$STATE" ;;
	status) cmd_status ;;
	kill) cmd_kill "$@" ;;
	pause) cmd_pause "$@" ;;
	resume) cmd_resume "$@" ;;
	restart) cmd_restart "$@" ;;
	pid) cmd_pid "$@" ;;
	clock) cmd_clock "$@" ;;
	-h | --help | help) usage ;;
	*)
		usage
		exit 2
		;;
	esac
}

main "$@"
