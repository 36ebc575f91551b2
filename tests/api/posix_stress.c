/*
 * posix_stress.c - a randomized stress of every POSIX way of writing to and
 * reading from ri2n descriptors, all at once, every byte checked (stress.h
 * says what a stream and a record are).
 *
 *   posix_stress [--seconds N] [--seed S] [--conns N] [--rate KIB_S] [--hz N]
 *                [--skip NAME,...] [--tcp]
 *
 * Run by tests/api/run.sh in a namespace with two rails.  It opens --conns
 * ri2n connections (default 4, alternately to each rail) inside the process;
 * each carries a stream each way.  For --seconds (default 60) each stream's
 * two writer threads take turns writing records by write, writev, send,
 * sendmsg, ri2n_send, ri2n_writev, a dup, a kept dup, dup2, F_DUPFD, stdio,
 * dprintf, sendfile, splice, send(MSG_DONTWAIT) + poll and a number passed
 * by SCM_RIGHTS, at --rate KiB/s a stream (default 1024); now and then a
 * writer lends the stream to the handler of a timer signal (SIGUSR1, --hz a
 * second, SA_RESTART) that writes the next records from whichever thread it
 * interrupts, or forks a child, or posix_spawn()s this program, that writes
 * them.  A reader thread per stream reads by read, readv, recv, recvmsg,
 * ri2n_recv, ri2n_readv, MSG_WAITALL, MSG_DONTWAIT + poll, epoll and
 * FIONREAD, while SIGUSR2 (no SA_RESTART) is thrown at every thread.  One
 * more connection stays idle: its readers are cancelled (pthread_cancel) in
 * their reads and replaced.  Then each stream gets an end record and
 * shutdown(SHUT_WR); the reader must see it, then EOF.
 *
 * Fails (exit 1) at the first wrong byte or header, an EINTR that only
 * SA_RESTART handlers caused, FIONREAD 0 after POLLIN, any error, or no
 * progress on a stream for 20 s, printing the stream, offset, bytes expected
 * and got, the last writes (which path, thread, handler or child) and reads,
 * and the seed to run it again with.  The choices each thread makes follow
 * from the seed; how the threads interleave does not.
 * --skip leaves out write or read paths by name, or: sig (the handler's
 * writes), fork, usr2, restart (EINTR under SA_RESTART tolerated), fionread,
 * cancel.
 * POSIX_STRESS_GDB=1 in the environment adds every thread's stack (gdb) to a
 * failure's report.
 * --tcp runs the same on kernel TCP sockets (ri2n_send and the other fast
 * calls replaced by send and their other POSIX twins): the reference the
 * program holds ri2n to, so a failure there is the program's own.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ri2n.h>

#include "stress.h"

enum { HANG_MS = 20000, ACCEPT_MS = 10000 };

struct stress S;
__thread volatile sig_atomic_t usr2_hits;
__thread int my_rx_stream = -1;

const char *const wpath_name[W_N] = {
	"write", "writev", "send", "sendmsg", "ri2n_send", "ri2n_writev", "dup", "dupkeep",
	"dup2", "dupfd", "stdio", "dprintf", "sendfile", "splice", "send_nb", "scm",
	"sig_write", "sig_send", "sig_writev", "spawn", "child_write", "child_send",
	"child_writev", "end",
};
const char *const rpath_name[R_N] = {
	"read", "readv", "recv", "recvmsg", "ri2n_recv", "ri2n_readv", "waitall",
	"ri2n_waitall", "poll", "epoll", "fionread",
};
static const char *const feature_name[] = { "sig", "fork", "usr2", "restart", "fionread",
					    "cancel" };

static struct writer_arg writers[MAX_STREAMS * WRITERS];
static pthread_t readers[MAX_STREAMS], watchdog_th, pester_th;
static _Atomic int pester_stop, watchdog_stop;
static char skip_arg[256] = "";

/* ---- small things ---- */

uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t ms_run(void)
{
	return ms_now() - S.t0_ms;
}

uint32_t rnd(uint64_t *x) /* xorshift64* */
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return (uint32_t)((*x * UINT64_C(0x2545f4914f6cdd1d)) >> 32);
}

void us_sleep(uint64_t us)
{
	struct timespec t = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_hits++;
}

int eintr_legit(sig_atomic_t before)
{
	struct timespec t = { 0, 1000 };

	if (usr2_hits != before || (S.skip_f & F_RESTART))
		return 1;
	/* under TSan a handler may still wait to run until the next call it intercepts */
	nanosleep(&t, NULL);
	return usr2_hits != before;
}

/* ---- failure reports ---- */

void print_wlog(FILE *f, struct stream *st, uint64_t off)
{
	uint32_t n = atomic_load(&st->wlog_n);

	fprintf(f, "  stream %d's last writes (> holds offset %" PRIu64 "):\n", st->id, off);
	for (uint32_t i = n > WLOG_N ? n - WLOG_N : 0; i < n; i++) {
		struct wlog *l = &st->wlog[i % WLOG_N];
		uint64_t o = atomic_load(&l->off);
		uint32_t len = atomic_load(&l->len), who = atomic_load(&l->who);
		int32_t r = atomic_load(&l->result);
		char by[16];

		if (who < 90)
			snprintf(by, sizeof(by), "writer %u", who);
		else
			snprintf(by, sizeof(by), "%s", who == 90 ? "handler" : who == 91 ? "child" : "main");
		fprintf(f, "  %c record %u at %" PRIu64 "+%u by %s (%s) @%" PRIu64 " ms: %s%s\n",
			off >= o && off < o + len ? '>' : ' ', atomic_load(&l->seq), o, len,
			wpath_name[atomic_load(&l->path)], by, atomic_load(&l->ms),
			r == 1 ? "done" : r == 0 ? "in flight" : "failed: ", r < 0 ? strerror(-r) : "");
	}
}

/* A stream's writes not finished yet (the handler's too: a hang shows who is stuck). */
static void print_in_flight(FILE *f, struct stream *st, uint64_t now)
{
	uint32_t n = atomic_load(&st->wlog_n);

	for (uint32_t i = n > 4 ? n - 4 : 0; i < n; i++) {
		struct wlog *l = &st->wlog[i % WLOG_N];
		uint32_t who = atomic_load(&l->who);

		if (atomic_load(&l->result) == 0)
			fprintf(f, "      in flight for %" PRIu64 " ms: record %u at %" PRIu64 "+%u "
				"by %s (%s)\n", now - atomic_load(&l->ms), atomic_load(&l->seq),
				atomic_load(&l->off), atomic_load(&l->len),
				wpath_name[atomic_load(&l->path)],
				who == 90 ? "the signal handler" : who == 91 ? "a child" : "a thread");
	}
}

static void print_status(FILE *f)
{
	uint64_t now = ms_run();

	fprintf(f, "  streams (written / verified bytes; what each side is doing):\n");
	for (int i = 0; i < S.nstreams; i++) {
		struct stream *st = &S.st[i];
		int wp = atomic_load(&st->w_path), rp = atomic_load(&st->r_path);

		fprintf(f, "   %d%s (fd %d -> fd %d): %" PRIu64 " / %" PRIu64 "; writer %s%s for %"
			PRIu64 " ms; reader %s for %" PRIu64 " ms; token %d%s%s\n", i,
			st->quiet ? " (idle)" : "", st->tx,
			st->rx, atomic_load(&st->written), atomic_load(&st->verified),
			wp < 0 ? "idle" : "in ", wp < 0 ? "" : wpath_name[wp],
			now - atomic_load(&st->w_since), rp < 0 ? "idle" : rpath_name[rp],
			now - atomic_load(&st->r_since), atomic_load(&st->token),
			atomic_load(&st->end_seen) ? ", end record seen" : "",
			atomic_load(&st->eof) ? ", EOF" : "");
		print_in_flight(f, st, now);
	}
}

static void print_rerun(FILE *f)
{
	fprintf(f, "posix_stress: rerun with: posix_stress --seed %" PRIu64 " --seconds %d "
		"--conns %d --rate %d --hz %d%s%s%s\n", S.seed, S.seconds, S.nconns, S.rate_kib,
		S.hz, skip_arg[0] ? " --skip " : "", skip_arg, S.tcp ? " --tcp" : "");
}

static void print_summary(FILE *f)
{
	uint64_t total = 0, secs = ms_run() / 1000 ? ms_run() / 1000 : 1;

	fprintf(f, "  %-14s %10s %14s\n", "write path", "records", "bytes");
	for (int p = 0; p < W_N; p++)
		fprintf(f, "  %-14s %10" PRIu64 " %14" PRIu64 "\n", wpath_name[p],
			atomic_load(&S.w_recs[p]), atomic_load(&S.w_bytes[p]));
	fprintf(f, "  %-14s %10s %14s\n", "read path", "calls", "bytes");
	for (int p = 0; p < R_N; p++)
		fprintf(f, "  %-14s %10" PRIu64 " %14" PRIu64 "\n", rpath_name[p],
			atomic_load(&S.r_calls[p]), atomic_load(&S.r_bytes[p]));
	for (int i = 0; i < S.nstreams; i++) {
		uint64_t v = atomic_load(&S.st[i].verified);

		fprintf(f, "  stream %d: %" PRIu64 " bytes verified\n", i, v);
		total += v;
	}
	fprintf(f, "  %" PRIu64 " bytes verified in %" PRIu64 " s (%.1f MB/s); %" PRIu64
		" records written by the signal handler, %" PRIu64 " forked or spawned writers, %" PRIu64
		" EINTRs after SIGUSR2 retried, %" PRIu64 " readers cancelled in a read\n", total,
		secs, (double)total / 1e6 / (double)secs, atomic_load(&S.sig_records),
		atomic_load(&S.forks), atomic_load(&S.eintr_usr2), atomic_load(&S.cancels));
}

void gdb_stacks(pid_t pid)
{
	char cmd[128];

	if (!getenv("POSIX_STRESS_GDB"))
		return;
	snprintf(cmd, sizeof(cmd), "gdb -p %d -batch -ex 'thread apply all bt 30' 1>&2", (int)pid);
	if (system(cmd) != 0)
		fprintf(stderr, "posix_stress: %s failed\n", cmd);
}

void fail_stream(struct stream *st, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	if (atomic_exchange(&S.failed, 1))
		for (;;) /* another thread reports and exits */
			pause();
	fprintf(stderr, "\nposix_stress: FAILED at %" PRIu64 " ms (seed %" PRIu64 "): ", ms_run(),
		S.seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (st)
		print_wlog(stderr, st, off);
	print_status(stderr);
	print_summary(stderr);
	print_rerun(stderr);
	fflush(stderr);
	gdb_stacks(getpid());
	_exit(1); /* the other threads may be stuck inside the library */
}

/* ---- the watchdog and the SIGUSR2 thrower ---- */

static void *watchdog_main(void *arg)
{
	uint64_t deadline = ms_now() + (uint64_t)S.seconds * 1000 + 60000;

	(void)arg;
	while (!atomic_load(&watchdog_stop)) {
		uint64_t now;

		us_sleep(200000);
		now = ms_now();
		for (int i = 0; i < S.nstreams; i++) {
			struct stream *st = &S.st[i];
			uint64_t stamp = atomic_load(&st->stamp_ms);

			if (st->quiet && atomic_load(&st->written) == 0)
				continue; /* idle till its end record */
			if (!atomic_load(&st->eof) && now > stamp + HANG_MS)
				fail_stream(st, atomic_load(&st->verified), "stream %d: no progress "
					    "for %d s (a hang)", i, HANG_MS / 1000);
		}
		if (now > deadline)
			fail_stream(NULL, 0, "the run did not end 60 s after its time");
	}
	return NULL;
}

/* Cancels quiet stream i's reader if it is in a read call, and starts another in its place. */
static void cancel_reader(int i)
{
	struct timespec end;
	void *ret = NULL;
	int p = atomic_load(&S.st[i].r_path);

	if (p < 0)
		return;
	pthread_cancel(readers[i]);
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 10;
	if (pthread_timedjoin_np(readers[i], &ret, &end))
		fail_stream(&S.st[i], 0, "stream %d: its reader, in %s, was still there 10 s "
			    "after pthread_cancel", i, rpath_name[p]);
	if (ret == PTHREAD_CANCELED)
		atomic_fetch_add(&S.cancels, 1);
	if (atomic_load(&S.st[i].eof))
		return; /* it had finished meanwhile */
	if (pthread_create(&readers[i], NULL, reader_main, &S.st[i]))
		fail_stream(&S.st[i], 0, "pthread_create");
}

/* SIGUSR2 at a random worker every 2-10 ms; a reader cancelled every 250 ms or so. */
static void *pester_main(void *arg)
{
	uint64_t x = S.seed ^ 0x5eed;
	uint32_t n = (uint32_t)(S.nstreams + S.nwriters);

	(void)arg;
	while (!atomic_load(&pester_stop)) {
		uint32_t k = rnd(&x) % n;

		if (!(S.skip_f & F_USR2))
			pthread_kill(k < (uint32_t)S.nstreams ? readers[k] :
				     writers[k - (uint32_t)S.nstreams].th, SIGUSR2);
		if (!(S.skip_f & F_CANCEL) && rnd(&x) % 40 == 0)
			cancel_reader(2 * S.nconns + (int)(rnd(&x) % 2));
		us_sleep(2000 + rnd(&x) % 8000);
	}
	return NULL;
}

/* ---- options ---- */

static int name_in(const char *n, const char *const *names, int count)
{
	for (int i = 0; i < count; i++)
		if (strcmp(n, names[i]) == 0)
			return i;
	return -1;
}

static int parse_skip(char *list)
{
	snprintf(skip_arg, sizeof(skip_arg), "%s", list);
	for (char *save = NULL, *n = strtok_r(list, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		int i;

		if ((i = name_in(n, wpath_name, W_CHILD_WRITE)) >= 0)
			S.skip_w |= 1u << i;
		else if ((i = name_in(n, rpath_name, R_N)) >= 0)
			S.skip_r |= 1u << i;
		else if ((i = name_in(n, feature_name, 6)) >= 0)
			S.skip_f |= 1u << i;
		else
			return -1;
	}
	/* a thread writer and a reader need a path left; the handler falls back to write */
	return (S.skip_w & ((1u << (W_LAST_THREAD + 1)) - 1)) == (1u << (W_LAST_THREAD + 1)) - 1 ||
	       S.skip_r == (1u << R_N) - 1 ? -1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: posix_stress [--seconds N] [--seed S] [--conns 1-%d] [--rate KIB_S] "
		"[--hz N] [--skip NAME,...] [--tcp]\n", MAX_CONNS);
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	S.seconds = 60;
	S.nconns = 4;
	S.rate_kib = 1024;
	S.hz = 2000;
	S.seed = (uint64_t)time(NULL) * 1000003 ^ (uint64_t)getpid();
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v && strcmp(argv[i], "--tcp") != 0)
			usage();
		if (strcmp(argv[i], "--seconds") == 0)
			S.seconds = atoi(v);
		else if (strcmp(argv[i], "--seed") == 0)
			S.seed = strtoull(v, NULL, 0);
		else if (strcmp(argv[i], "--conns") == 0)
			S.nconns = atoi(v);
		else if (strcmp(argv[i], "--rate") == 0)
			S.rate_kib = atoi(v);
		else if (strcmp(argv[i], "--hz") == 0)
			S.hz = atoi(v);
		else if (strcmp(argv[i], "--tcp") == 0) {
			S.tcp = 1;
			i--; /* no value */
		} else if (strcmp(argv[i], "--skip") == 0) {
			if (parse_skip(argv[i + 1]) < 0)
				usage();
		} else
			usage();
		i++;
	}
	if (S.seconds < 1 || S.nconns < 1 || S.nconns > MAX_CONNS || S.rate_kib < 1 || S.hz < 1)
		usage();
	S.nstreams = 2 * S.nconns + 2;
	S.nwriters = 2 * S.nconns * WRITERS;
}

/* ---- set-up and the end ---- */

static void signals(void)
{
	struct sigaction a = { .sa_handler = on_timer_signal, .sa_flags = SA_RESTART };
	sigset_t m;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, SIGUSR1);
	sigaddset(&a.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &a, NULL);
	a = (struct sigaction){ .sa_handler = on_usr2 }; /* no SA_RESTART */
	sigemptyset(&a.sa_mask);
	sigaction(SIGUSR2, &a, NULL);
	/* only the workers take them (they unblock): the watchdog must stay free */
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigaddset(&m, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &m, NULL);
}

static void stream_init(struct stream *st, int id, int tx, int rx)
{
	st->id = id;
	st->tx = tx;
	st->rx = rx;
	st->seed = S.seed * 31 + (uint64_t)id * 0x9e3779b9u + 1;
	pthread_mutex_init(&st->mu, NULL);
	st->keep_dup = dup(tx);
	st->memfd = memfd_create("posix_stress", MFD_CLOEXEC);
	atomic_store(&st->w_path, -1);
	atomic_store(&st->r_path, -1);
	atomic_store(&st->stamp_ms, ms_now());
	if (st->keep_dup < 0 || st->memfd < 0 || pipe2(st->pipe, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st->scm) < 0)
		fail_stream(NULL, 0, "stream %d set-up: %s", id, strerror(errno));
}

/* ri2n's socket calls, or with --tcp the kernel's */
static int sk_socket(void)
{
	return S.tcp ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : ri2n_socket();
}

static int sk_close(int fd)
{
	return S.tcp ? close(fd) : ri2n_close(fd);
}

/* A listener on every rail, port 0: its port in a. */
static int sk_listen(struct sockaddr_in *a)
{
	socklen_t al = sizeof(*a);
	int l = sk_socket();

	if (l < 0 ||
	    (S.tcp ? bind : ri2n_bind)(l, (struct sockaddr *)a, sizeof(*a)) < 0 ||
	    (S.tcp ? listen : ri2n_listen)(l, 16) < 0 ||
	    (S.tcp ? getsockname : ri2n_getsockname)(l, (struct sockaddr *)a, &al) < 0)
		fail_stream(NULL, 0, "listener: %s", strerror(errno));
	return l;
}

/* The connections, alternately to each rail, accepted in the same order. */
static void connect_all(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int l = sk_listen(&a);

	for (int k = 0; k <= S.nconns; k++) { /* the last: the idle one */
		struct pollfd p = { .fd = l, .events = POLLIN };
		int c = sk_socket(), s;

		inet_pton(AF_INET, k % 2 ? "198.18.2.1" : "198.18.1.1", &a.sin_addr);
		if (c < 0 || (S.tcp ? connect : ri2n_connect)(c, (struct sockaddr *)&a, sizeof(a)) < 0)
			fail_stream(NULL, 0, "connection %d: connect: %s", k, strerror(errno));
		if (poll(&p, 1, ACCEPT_MS) != 1 ||
		    (s = (S.tcp ? accept : ri2n_accept)(l, NULL, NULL)) < 0)
			fail_stream(NULL, 0, "connection %d: accept: %s", k, strerror(errno));
		stream_init(&S.st[2 * k], 2 * k, c, s);
		stream_init(&S.st[2 * k + 1], 2 * k + 1, s, c);
		S.st[2 * k].quiet = S.st[2 * k + 1].quiet = k == S.nconns;
	}
	sk_close(l);
}

static void start_threads(void)
{
	for (int i = 0; i < S.nstreams; i++)
		if (pthread_create(&readers[i], NULL, reader_main, &S.st[i]))
			fail_stream(NULL, 0, "pthread_create");
	for (int i = 0; i < S.nwriters; i++) {
		writers[i] = (struct writer_arg){ .st = &S.st[i / WRITERS], .who = i % WRITERS };
		if (pthread_create(&writers[i].th, NULL, writer_main, &writers[i]))
			fail_stream(NULL, 0, "pthread_create");
	}
	if (pthread_create(&watchdog_th, NULL, watchdog_main, NULL) ||
	    pthread_create(&pester_th, NULL, pester_main, NULL))
		fail_stream(NULL, 0, "pthread_create");
}

static timer_t start_timer(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	long ns = 1000000000L / S.hz;
	struct itimerspec it = { { ns / 1000000000L, ns % 1000000000L },
				 { ns / 1000000000L, ns % 1000000000L } };
	timer_t t;

	if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0 || timer_settime(t, 0, &it, NULL) < 0)
		fail_stream(NULL, 0, "timer: %s", strerror(errno));
	return t;
}

/* Writers stop, each stream ends with its end record and SHUT_WR, readers see EOF. */
static void finish(timer_t t)
{
	atomic_store(&S.stop, 1);
	atomic_store(&pester_stop, 1);
	pthread_join(pester_th, NULL);
	for (int i = 0; i < S.nwriters; i++)
		pthread_join(writers[i].th, NULL);
	timer_delete(t); /* no token is out once the writers are gone */
	for (int i = 0; i < S.nstreams; i++)
		write_end(&S.st[i]);
	for (int i = 0; i < S.nstreams; i++)
		pthread_join(readers[i], NULL);
	atomic_store(&watchdog_stop, 1);
	pthread_join(watchdog_th, NULL);
	for (int i = 0; i < S.nstreams; i++) {
		struct stream *st = &S.st[i];

		if (atomic_load(&st->verified) != atomic_load(&st->written))
			fail_stream(st, atomic_load(&st->verified), "stream %d: %" PRIu64 " bytes "
				    "written, %" PRIu64 " verified", i, atomic_load(&st->written),
				    atomic_load(&st->verified));
		close(st->keep_dup);
		close(st->memfd);
		close(st->pipe[0]);
		close(st->pipe[1]);
		close(st->scm[0]);
		close(st->scm[1]);
		pthread_mutex_destroy(&st->mu);
	}
	/* one end by close(), the other by ri2n_close(), alternately */
	for (int k = 0; k <= S.nconns; k++) {
		int a = S.st[2 * k].tx, b = S.st[2 * k].rx;

		if ((k % 2 ? sk_close(a) : close(a)) < 0 || (k % 2 ? close(b) : sk_close(b)) < 0)
			fail_stream(NULL, 0, "connection %d: closing: %s", k, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	timer_t t;

	if (argc > 1 && strcmp(argv[1], "--spawn-write") == 0)
		return spawn_write_main(argv + 2);
	parse_args(argc, argv);
	S.pid = getpid();
#if defined(__SANITIZE_THREAD__)
	/*
	 * TSan runs a handler later, at its own safe point inside an intercepted
	 * call and outside ri2n's trampoline, so a handler's write is an ordinary
	 * one there, which TSan then reports as signal-unsafe: the handler's
	 * writes are checked by the release and ASan runs (as posix_signal does).
	 */
	if (!S.tcp && !(S.skip_f & F_SIG)) {
		S.skip_f |= F_SIG;
		printf("posix_stress: under TSan: the signal handler's writes are left out\n");
	}
#endif
#if defined(__SANITIZE_ADDRESS__)
	/*
	 * GCC 12's ASan allocator takes no lock around fork(): a child forked
	 * while another thread refills a size class from the shared allocator
	 * waits for that lock forever at its own first malloc of that class (a
	 * plain program with malloc threads and a forking one shows it within
	 * a fork or two).  The spawned writers (an exec'd image) stay; forked
	 * ones are checked by the release and TSan runs.
	 */
	if (!S.tcp && !(S.skip_f & F_FORK)) {
		S.skip_f |= F_FORK;
		printf("posix_stress: under ASan: forked writers are left out (spawned ones stay)\n");
	}
#endif
	S.t0_ms = ms_now();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("posix_stress: seed %" PRIu64 ", %d s, %d %s connections, %d KiB/s a stream, "
	       "timer signal %d/s\n", S.seed, S.seconds, S.nconns, S.tcp ? "TCP" : "ri2n",
	       S.rate_kib, S.hz);
	print_rerun(stdout);
	signals();
	connect_all();
	start_threads();
	t = start_timer();
	for (uint64_t end = ms_now() + (uint64_t)S.seconds * 1000; ms_now() < end;)
		us_sleep(100000);
	finish(t);
	printf("posix_stress: PASSED: every byte verified, every stream ended cleanly\n");
	print_summary(stdout);
	return 0;
}
