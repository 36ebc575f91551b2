/*
 * rn_publish.c - each process's live connection state, for ri2n-stat.
 *
 * Every RI2N_STAT_MS (250 ms; 0 turns it off) the engine thread writes a
 * small text snapshot of its connections and rails to <dir>/<pid>.stat, by
 * writing a temporary file and renaming it, so a reader never sees half of
 * one.  <dir> is RI2N_RUN_DIR, else /run/ri2n for root, else
 * /run/user/<uid>/ri2n when the session directory exists, else
 * /tmp/ri2n-<uid>.  A directory another user can reach is trusted only as
 * far as it must be (rn_statfile_dir_open): it must be a real directory (no
 * symlink), owned by us, writable by nobody else; ours with a wider mode
 * is narrowed to 0700 (0755 for root's /run/ri2n, which other users'
 * ri2n-stat reads); anything else is refused with a warning and nothing is
 * published.  Files are then opened relative to the directory's descriptor,
 * never by path, and never through a symlink.  The file is removed at exit; ri2n-stat ignores files of
 * processes that are gone (or whose pid was reused: the process start time
 * is in the file).  Nothing is added to the per-packet path: the counters
 * are read from the core in the engine thread, off the timer, and a
 * snapshot takes at most 1 % of that thread (0.25 % with thousands of
 * connections: the snapshots thin out, see due()).
 *
 * Format (docs/OPERATIONS.md): one record per line, "kind key=value ...",
 * string values in double quotes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rn_sys.h"
#include "rn_ev.h"
#include "rn_engine.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_publish.h"
#include "rn_sandbox.h"
#include "rn_statfile.h"
#include "rn_stream.h"
#include "rn_sys.h"

static struct {
	struct event *ev;
	struct timeval period;    /* RI2N_STAT_MS: the timer's tick */
	uint64_t last_ns;         /* the last snapshot's end (rn_now_ns) */
	uint64_t fixed_ns, per_conn_ns; /* what it cost: with no connection; per connection */
	char path[256], tmp[264];
	int dirfd;                /* the run directory, checked once (rn_statfile_dir_open) */
	char name[32], tmpname[40]; /* <pid>.stat and its temporary, relative to dirfd */
	unsigned long long start; /* this process's start time, /proc/self/stat field 22 */
	FILE *f;
	int nconn;
	uint64_t now;
	/* the connections' state, copied under the host lock and written after it */
	rn_stream_info *info;
	size_t ninfo, cap;
	/* exit removes the file while the engine thread may still be writing one */
	pthread_mutex_t mu;
	int closed;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .dirfd = -1 };

/* "198.18.1.1:7000", "[2001:2:0:1::1]:7000" (rn_addrport_str). */
static const char *ipport(const rn_hsa *a, char *buf, size_t len)
{
	return rn_addrport_str(rn_hsock_sa_addr(a), buf, len);
}

/*
 * Copies a connection's state (host lock).  Formatting ten thousand of them
 * takes tens of ms, which the host lock must not be held for: inline
 * threads would stall behind it every RI2N_STAT_MS.
 */
static void copy_conn(struct rn_stream *st, void *ctx)
{
	(void)ctx;
	RN_OWNS_HOST();
	if (g.ninfo == g.cap) {
		size_t cap = g.cap ? 2 * g.cap : 64;
		rn_stream_info *n = realloc(g.info, cap * sizeof(*n));

		if (!n)
			return; /* this snapshot lists fewer */
		g.info = n;
		g.cap = cap;
	}
	rn_stream_get_info(st, &g.info[g.ninfo]);
	g.info[g.ninfo++].name = NULL; /* the stream's own string: not kept */
}

static void write_conn(const rn_stream_info *in)
{
	char l[RN_ADDR_STRLEN], p[RN_ADDR_STRLEN];

	rn_statfile_write_conn(g.f, ++g.nconn, in->fd, in->server, ipport(&in->local, l, sizeof(l)),
			       ipport(&in->peer, p, sizeof(p)), g.now - in->created_ns, &in->cs, g.now);
}

/* ctx: the snapshot being written */
static void write_listener(rn_port *p, void *ctx)
{
	FILE *f = ctx;
	uint64_t drops = p->drops_unknown + p->drops_backlog;
	int queued = 0;
	uint64_t idle_wakes = 0;

	for (int d = 0; d < RN_DROP__COUNT; d++)
		drops += p->lis->drops[d];
	if (p->lsock) { /* accq_len is shared with ri2n_accept: under the socket's mutex */
		pthread_mutex_lock(&p->lsock->mu);
		queued = p->lsock->accq_len;
		pthread_mutex_unlock(&p->lsock->mu);
		idle_wakes = __atomic_load_n(&p->lsock->acc_idle_wakes, __ATOMIC_RELAXED);
	}
	fprintf(f, "listener port=%u rails=%d queued=%d inits=%llu accepts=%llu drops=%llu "
		     "drops_backlog=%llu drops_auth=%llu drops_rate=%llu keyed=%d refused=%llu "
		     "resets=%llu accept_idle_wakes=%llu drops_early=%llu\n",
		p->number, p->nsock, queued,
		(unsigned long long)p->lis->inits, (unsigned long long)p->lis->accepts,
		(unsigned long long)drops, (unsigned long long)p->drops_backlog,
		(unsigned long long)p->lis->drops[RN_DROP_AUTH],
		(unsigned long long)p->lis->drops[RN_DROP_RATE], p->lis->cfg.keyed,
		(unsigned long long)p->refused, (unsigned long long)p->lis->resets,
		(unsigned long long)idle_wakes, (unsigned long long)p->lis->early_dropped);
}

/*
 * A snapshot may take at most 1/RN_PUBLISH_SHARE of the engine thread: with
 * thousands of connections formatting them takes milliseconds (about 12 us
 * each).  The timer ticks every RI2N_STAT_MS, and a tick writes a snapshot
 * only when the time since the last one is RN_PUBLISH_SHARE times what a
 * snapshot of the connections there are now would cost: the last one's cost
 * per connection times the count the ports' tables hold, which a tick reads
 * for next to nothing.  With thousands of connections the share is a quarter
 * of a percent: at 1 % the snapshots alone were most of the 1.1-1.3 % of a
 * core a server with 9,000 idle connections used, over the 1 % an idle
 * process may (about 10 s between snapshots of 9,000 connections).  A
 * process with a few keeps 1 % and fresher snapshots (a sanitizer build's
 * take milliseconds).  Because the count is read at every tick, a server
 * whose connections closed is fresh again at the next one; a period fixed
 * from the last snapshot's cost once left ri2n-stat 7 s behind after a
 * churn of 1,400 connections had ended.
 */
#define RN_PUBLISH_SHARE 100
#define RN_PUBLISH_SHARE_MANY 400
#define RN_PUBLISH_MANY 1000

static void count_port(rn_port *p, void *ctx)
{
	*(size_t *)ctx += p->tab.n;
}

/* whether a tick at NOW writes a snapshot */
static int due(uint64_t now)
{
	size_t n = 0;
	uint64_t cost;

	rn_host_lock();
	rn_port_each_port(count_port, &n);
	rn_host_unlock();
	cost = g.fixed_ns + g.per_conn_ns * n;
	return now - g.last_ns >= cost * (n >= RN_PUBLISH_MANY ? RN_PUBLISH_SHARE_MANY : RN_PUBLISH_SHARE);
}

/* the engine thread's own CPU time: waiting for the host lock, which threads
 * connecting inline may hold a while, is not the snapshot's cost */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return rn_now_ns();
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void snapshot(evutil_socket_t fd, short what, void *arg)
{
	uint64_t t0, took;

	(void)fd;
	(void)arg;
	if ((what & EV_TIMEOUT) && !due(rn_now_ns())) /* a tick; the first snapshot is called directly */
		return;
	t0 = thread_cpu_ns();
	{
		int tfd = openat(g.dirfd, g.tmpname,
				 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

		g.f = tfd < 0 ? NULL : rn_sys_fdopen(tfd, "w");
		if (!g.f) {
			if (tfd >= 0)
				rn_sys_close(tfd);
			return;
		}
	}
	g.now = rn_now_ns();
	g.nconn = 0;
	{
		unsigned long long all, in;
		char extra[64];

		rn_engine_connects(&all, &in);
		snprintf(extra, sizeof(extra), "connects=%llu connects_inline=%llu", all, in);
		rn_statfile_write_process(g.f, g.start, g.now, extra);
	}
	g.ninfo = 0;
	rn_host_lock(); /* the connections' state: inline threads change it too */
	rn_port_each_listener(write_listener, g.f);
	rn_port_each_all(copy_conn, NULL);
	rn_host_unlock();
	for (size_t i = 0; i < g.ninfo; i++)
		write_conn(&g.info[i]);
	if (g.cap > 256) { /* 1.7 KB a connection: a big copy is not kept between snapshots */
		free(g.info);
		g.info = NULL;
		g.cap = 0;
	}
	pthread_mutex_lock(&g.mu);
	if (rn_sys_fclose(g.f) == 0 && !g.closed)
		renameat(g.dirfd, g.tmpname, g.dirfd, g.name);
	else
		unlinkat(g.dirfd, g.tmpname, 0);
	pthread_mutex_unlock(&g.mu);
	g.f = NULL;
	took = thread_cpu_ns() - t0;
	/* a snapshot of none costs the file's own lines; each connection adds its share */
	if (g.nconn)
		g.per_conn_ns = took / (uint64_t)g.nconn;
	else
		g.fixed_ns = took;
	g.last_ns = rn_now_ns();
}

static void remove_at_exit(void)
{
	if (rn_sandbox_on())
		return; /* no call of ours under seccomp: ri2n-stat removes the file of a dead pid */
	pthread_mutex_lock(&g.mu);
	g.closed = 1; /* no snapshot after this one: the engine thread outlives exit handlers */
	if (g.path[0] && g.dirfd >= 0 && getpid() == atoi(g.name))
		unlinkat(g.dirfd, g.name, 0);
	pthread_mutex_unlock(&g.mu);
}

void rn_publish_start(void)
{
	const char *why;
	char dir[200];
	long period = rn_statfile_period_ms();
	static int registered;

	if (period <= 0)
		return;
	if (g.dirfd >= 0)
		rn_sys_close(g.dirfd);
	g.dirfd = rn_sys_fd_high(rn_statfile_dir(dir, sizeof(dir), &why));
	if (g.dirfd < 0) {
		rn_warn("not publishing connection state for ri2n-stat: %s: %s", dir, why);
		return;
	}
	snprintf(g.name, sizeof(g.name), "%d.stat", (int)getpid());
	snprintf(g.tmpname, sizeof(g.tmpname), "%s.tmp", g.name);
	snprintf(g.path, sizeof(g.path), "%s/%s", dir, g.name);
	snprintf(g.tmp, sizeof(g.tmp), "%s.tmp", g.path);
	g.start = rn_statfile_proc_start();
	g.period = (struct timeval){ period / 1000, (period % 1000) * 1000 };
	g.ev = event_new(rn_engine_base(), -1, EV_PERSIST, snapshot, NULL);
	if (!g.ev)
		return;
	rn_ev_add(g.ev, &g.period);
	snapshot(-1, 0, NULL);
	if (!registered) {
		atexit(remove_at_exit);
		registered = 1;
	}
	rn_debug("publishing connection state to %s every %ld ms", g.path, period);
}

void rn_publish_forget(void)
{
	if (g.dirfd >= 0)
		rn_sys_close(g.dirfd);
	g.dirfd = -1;
	pthread_mutex_init(&g.mu, NULL);
	g.closed = 0;
	g.ev = NULL;
	g.path[0] = 0;
}
