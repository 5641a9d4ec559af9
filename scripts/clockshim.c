// clockshim.c — an LD_PRELOAD library that moves a process's wall clock, for
// the chaos campaign's clock nemesis (scripts/servers.sh builds it with cc
// and runs Redis nodes under it when ELECTOR_CLOCKSHIM=1).
//
// Why not libfaketime: Debian's libfaketime 0.9.10 hangs redis-server at
// start ("Unexpected recursive calls to clock_gettime()",
// https://github.com/wolfcw/libfaketime/issues/130): its initialisation
// allocates, the jemalloc that redis-server links calls clock_gettime while
// initialising, and that re-enters libfaketime. FAKETIME_DONT_FAKE_MONOTONIC,
// FAKETIME_NO_CACHE, FAKETIME_FORCE_MONOTONIC_FIX=0, FAKETIME_DONT_RESET,
// libfaketimeMT and FAKETIME_TIMESTAMP_FILE all hang the same way.
//
// This shim allocates nothing, calls no libc function that could allocate,
// and reaches the kernel by raw system calls, so it cannot recurse. It fakes
// only the wall clock (CLOCK_REALTIME, CLOCK_REALTIME_COARSE, gettimeofday,
// time), which is what Redis expires keys by (mstime() and ustime() in
// server.c read gettimeofday); CLOCK_MONOTONIC stays true.
//
// The file named by CLOCKSHIM_FILE holds three integers, "OFFSET_US RATE_PPM
// SINCE_US": the faked wall clock is real + OFFSET_US + (real − SINCE_US) ×
// RATE_PPM / 10^6 (a step of OFFSET_US, then a clock running RATE_PPM
// parts per million fast from SINCE_US, a real wall-clock time in µs). A
// missing or unreadable file means no change. The file is read again at most
// every millisecond (of CLOCK_MONOTONIC), so a writer should replace it
// atomically (write a temporary file, then rename it).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int64_t offset_us, rate_ppm, since_us;
static int64_t next_read_ns; // CLOCK_MONOTONIC, ns
static int reading;

static long raw_clock_gettime(clockid_t id, struct timespec *ts) {
	return syscall(SYS_clock_gettime, id, ts);
}

// parse reads up to three signed decimal integers from buf.
static void parse(const char *buf, long n) {
	int64_t v[3] = {0, 0, 0};
	int k = 0, neg = 0, digits = 0;
	for (long i = 0; i <= n && k < 3; i++) {
		char c = i < n ? buf[i] : ' ';
		if (c == '-' && !digits) {
			neg = 1;
		} else if (c >= '0' && c <= '9') {
			v[k] = v[k] * 10 + (c - '0');
			digits = 1;
		} else if (digits) {
			v[k] = neg ? -v[k] : v[k];
			k++;
			neg = digits = 0;
		}
	}
	__atomic_store_n(&rate_ppm, v[1], __ATOMIC_RELAXED);
	__atomic_store_n(&since_us, v[2], __ATOMIC_RELAXED);
	__atomic_store_n(&offset_us, v[0], __ATOMIC_RELAXED);
}

// refresh re-reads the control file if a millisecond has passed.
static void refresh(void) {
	struct timespec m;
	if (raw_clock_gettime(CLOCK_MONOTONIC, &m) != 0)
		return;
	int64_t now = (int64_t)m.tv_sec * 1000000000 + m.tv_nsec;
	if (now < __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED))
		return;
	if (__atomic_exchange_n(&reading, 1, __ATOMIC_ACQUIRE))
		return; // another thread reads it
	__atomic_store_n(&next_read_ns, now + 1000000, __ATOMIC_RELAXED);
	static char path[4096];
	static int have_path = -1;
	if (have_path < 0) {
		have_path = 0;
		// getenv does not allocate.
		extern char **environ;
		for (char **e = environ; e && *e; e++) {
			const char *p = *e, *k = "CLOCKSHIM_FILE=";
			while (*k && *p == *k) p++, k++;
			if (*k == 0) {
				int i = 0;
				while (p[i] && i < (int)sizeof path - 1) path[i] = p[i], i++;
				path[i] = 0;
				have_path = i > 0;
				break;
			}
		}
	}
	if (have_path) {
		char buf[128];
		long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			long n = syscall(SYS_read, fd, buf, sizeof buf);
			syscall(SYS_close, fd);
			if (n >= 0)
				parse(buf, n);
		} else {
			parse("", 0);
		}
	}
	__atomic_store_n(&reading, 0, __ATOMIC_RELEASE);
}

// shift returns the faked wall clock for the real one, in µs.
static int64_t shift(int64_t real_us) {
	refresh();
	int64_t off = __atomic_load_n(&offset_us, __ATOMIC_RELAXED);
	int64_t rate = __atomic_load_n(&rate_ppm, __ATOMIC_RELAXED);
	int64_t since = __atomic_load_n(&since_us, __ATOMIC_RELAXED);
	int64_t faked = real_us + off;
	if (rate != 0 && real_us > since)
		faked += (real_us - since) * rate / 1000000;
	return faked;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	long r = raw_clock_gettime(id, ts);
	if (r != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
		return (int)r;
	int64_t ns_frac = ts->tv_nsec % 1000;
	int64_t us = shift((int64_t)ts->tv_sec * 1000000 + ts->tv_nsec / 1000);
	ts->tv_sec = us / 1000000;
	ts->tv_nsec = (us % 1000000) * 1000 + ns_frac;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	if (raw_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	int64_t us = shift((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	struct timeval *volatile p = tv; // glibc declares tv nonnull; callers pass NULL anyway
	if (p) {
		tv->tv_sec = us / 1000000;
		tv->tv_usec = us % 1000000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timeval tv;
	gettimeofday(&tv, 0);
	if (t)
		*t = tv.tv_sec;
	return tv.tv_sec;
}
