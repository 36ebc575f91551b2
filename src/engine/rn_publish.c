/*
 * rn_publish.c - each process's live connection state, for ri2n-stat.
 *
 * Every RI2N_STAT_MS (250 ms; 0 turns it off) the engine thread writes a
 * small text snapshot of its connections and rails to <dir>/<pid>.stat, by
 * writing a temporary file and renaming it, so a reader never sees half of
 * one.  <dir> is RI2N_RUN_DIR, else /run/ri2n for root, else
 * /run/user/<uid>/ri2n when the session directory exists, else
 * /tmp/ri2n-<uid>.  A directory another user can reach is trusted only as
 * far as it must be (run_dir_open): it must be a real directory (no
 * symlink), owned by us, writable by nobody else; ours with a wider mode
 * is narrowed to 0700 (0755 for root's /run/ri2n, which other users'
 * ri2n-stat reads); anything else is refused with a warning and nothing is
 * published.  Files are then opened relative to the directory's descriptor,
 * never by path, and never through a symlink.  The file is removed at exit; ri2n-stat ignores files of
 * processes that are gone (or whose pid was reused: the process start time
 * is in the file).  Nothing is added to the per-packet path: the counters
 * are read from the core in the engine thread, off the timer.
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

#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_publish.h"
#include "rn_stream.h"

static struct {
	struct event *ev;
	struct timeval period;
	char path[256], tmp[264];
	int dirfd;                /* the run directory, checked once (run_dir_open) */
	char name[32], tmpname[40]; /* <pid>.stat and its temporary, relative to dirfd */
	unsigned long long start; /* this process's start time, /proc/self/stat field 22 */
	FILE *f;
	int nconn;
	uint64_t now;
	/* exit removes the file while the engine thread may still be writing one */
	pthread_mutex_t mu;
	int closed;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .dirfd = -1 };

static unsigned long long proc_start(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command may contain spaces */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			       "%*d %*d %*d %llu", &v) != 1)
		v = 0;
	return v;
}

static const char *ipport(const struct sockaddr_in *a, char *buf, size_t len)
{
	char ip[32];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

static const char *ip_of(rn_addr a, char *buf, size_t len)
{
	return rn_ip_str(a.ip, buf, len);
}

static void write_conn(struct rn_stream *st)
{
	rn_stream_info in;
	char l[48], p[48];
	const rn_conn_stats *c = &in.cs;
	uint64_t other = 0;
	int n = ++g.nconn;

	rn_stream_get_info(st, &in);
	for (int d = 0; d < RN_DROP__COUNT; d++)
		if (d != RN_DROP_MALFORMED && d != RN_DROP_SOURCE && d != RN_DROP_WINDOW &&
		    d != RN_DROP_DUPLICATE && d != RN_DROP_AUTH)
			other += c->drops[d];
	fprintf(g.f, "conn n=%d fd=%d role=%s local=%s peer=%s state=%s age_ms=%llu error=\"%s\" "
		     "mss=%u app_tx_bytes=%llu app_rx_bytes=%llu tx_packets=%llu rx_packets=%llu "
		     "retransmits=%llu rto=%llu drops_malformed=%llu drops_source=%llu "
		     "drops_window=%llu drops_duplicate=%llu drops_auth=%llu drops_other=%llu keyed=%d\n",
		n, in.fd, in.server ? "server" : "client", ipport(&in.local, l, sizeof(l)),
		ipport(&in.peer, p, sizeof(p)), rn_state_name(c->state),
		(unsigned long long)((g.now - in.created_ns) / 1000000),
		c->err ? rn_strerror(c->err) : "", c->mss, (unsigned long long)c->app_tx_bytes,
		(unsigned long long)c->app_rx_bytes, (unsigned long long)c->tx_packets,
		(unsigned long long)c->rx_packets, (unsigned long long)c->retransmits,
		(unsigned long long)c->rto_events, (unsigned long long)c->drops[RN_DROP_MALFORMED],
		(unsigned long long)c->drops[RN_DROP_SOURCE],
		(unsigned long long)c->drops[RN_DROP_WINDOW],
		(unsigned long long)c->drops[RN_DROP_DUPLICATE],
		(unsigned long long)c->drops[RN_DROP_AUTH], (unsigned long long)other, c->keyed);
	for (int k = 0; k < c->npaths; k++) {
		const rn_rail_stats *r = &c->rail[k];

		fprintf(g.f, "rail conn=%d index=%d local=%s remote=%s state=%s rx=%s tx=%s "
			     "tx_packets=%llu rx_packets=%llu tx_bytes=%llu rx_bytes=%llu "
			     "tx_data=%llu rx_data=%llu retransmits=%llu lost=%llu heartbeats=%llu "
			     "keepalives=%llu downs=%u ups=%u cwnd=%u srtt_us=%llu changed_ms_ago=%lld "
			     "dgram=%u mtu_holes=%u small_ok=%u cause=\"%s\"\n",
			n, k, ip_of(r->local, l, sizeof(l)), ip_of(r->remote, p, sizeof(p)),
			r->rx_up && r->tx_up ? "up" : "down", r->rx_up ? "up" : "down",
			r->tx_up ? "up" : "down", (unsigned long long)r->tx_packets,
			(unsigned long long)r->rx_packets, (unsigned long long)r->tx_bytes,
			(unsigned long long)r->rx_bytes, (unsigned long long)r->tx_data,
			(unsigned long long)r->rx_data, (unsigned long long)r->retransmits,
			(unsigned long long)r->lost, (unsigned long long)r->heartbeats,
			(unsigned long long)r->keepalives, r->down_events, r->up_events, r->cwnd,
			(unsigned long long)(r->srtt_ns / 1000),
			r->last_change_ns ? (long long)((g.now - r->last_change_ns) / 1000000) : -1LL,
			r->dgram, r->mtu_holes, r->small_ok,
			r->last_change_ns ? rn_cause_name(r->last_cause) : "");
	}
}

static void write_listener(rn_port *p)
{
	uint64_t drops = p->drops_unknown + p->drops_backlog;
	int queued = 0;

	for (int d = 0; d < RN_DROP__COUNT; d++)
		drops += p->lis->drops[d];
	if (p->lsock) { /* accq_len is shared with ri2n_accept: under the socket's mutex */
		pthread_mutex_lock(&p->lsock->mu);
		queued = p->lsock->accq_len;
		pthread_mutex_unlock(&p->lsock->mu);
	}
	fprintf(g.f, "listener port=%u rails=%d queued=%d inits=%llu accepts=%llu drops=%llu "
		     "drops_backlog=%llu drops_auth=%llu keyed=%d refused=%llu resets=%llu\n",
		p->number, p->nsock, queued,
		(unsigned long long)p->lis->inits, (unsigned long long)p->lis->accepts,
		(unsigned long long)drops, (unsigned long long)p->drops_backlog,
		(unsigned long long)p->lis->drops[RN_DROP_AUTH], p->lis->cfg.keyed,
		(unsigned long long)p->refused, (unsigned long long)p->lis->resets);
}

static void snapshot(evutil_socket_t fd, short what, void *arg)
{
	char cmd[64] = "?";
	struct timespec rt;
	FILE *c;

	(void)fd;
	(void)what;
	(void)arg;
	{
		int tfd = openat(g.dirfd, g.tmpname,
				 O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

		g.f = tfd < 0 ? NULL : fdopen(tfd, "w");
		if (!g.f) {
			if (tfd >= 0)
				close(tfd);
			return;
		}
	}
	c = fopen("/proc/self/comm", "re");
	if (c) {
		if (fgets(cmd, sizeof(cmd), c))
			cmd[strcspn(cmd, "\n")] = 0;
		fclose(c);
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	g.now = rn_now_ns();
	g.nconn = 0;
	fprintf(g.f, "ri2n-stat 1\nprocess pid=%d start=%llu cmd=\"%s\" time=%lld mono_ms=%llu\n",
		(int)getpid(), g.start, cmd, (long long)rt.tv_sec,
		(unsigned long long)(g.now / 1000000));
	rn_host_lock(); /* the connections' state: inline threads change it too */
	rn_port_each_listener(write_listener);
	rn_port_each_all(write_conn);
	rn_host_unlock();
	pthread_mutex_lock(&g.mu);
	if (fclose(g.f) == 0 && !g.closed)
		renameat(g.dirfd, g.tmpname, g.dirfd, g.name);
	else
		unlinkat(g.dirfd, g.tmpname, 0);
	pthread_mutex_unlock(&g.mu);
	g.f = NULL;
}

static void remove_at_exit(void)
{
	pthread_mutex_lock(&g.mu);
	g.closed = 1; /* no snapshot after this one: the engine thread outlives exit handlers */
	if (g.path[0] && g.dirfd >= 0 && getpid() == atoi(g.name))
		unlinkat(g.dirfd, g.name, 0);
	pthread_mutex_unlock(&g.mu);
}

int rn_publish_dir_open(const char *dir, mode_t mode, const char **why)
{
	struct stat st;
	mode_t want;
	int fd;

	*why = NULL;
	if (mkdir(dir, mode ? mode : 0700) < 0 && errno != EEXIST) {
		*why = strerror(errno);
		return -1;
	}
	/* O_NOFOLLOW: a symlink planted in the directory's place fails here */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ELOOP || errno == ENOTDIR ? "not a directory (a symlink?)" :
							    strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*why = "not a directory";
	} else if (st.st_uid != geteuid()) {
		*why = "owned by another user";
	} else {
		/* mode 0: a directory the user named keeps its mode, minus others' write */
		want = mode ? mode : (st.st_mode & 07777 & ~(mode_t)022);
		if ((st.st_mode & 07777) != want && fchmod(fd, want) < 0)
			*why = "its mode lets others in and cannot be changed";
	}
	if (*why) {
		close(fd);
		return -1;
	}
	return fd;
}

/* /run/user/<uid>/ri2n when the session directory is there and ours, else /tmp/ri2n-<uid>. */
static void default_dir(char *out, size_t cap, mode_t *mode)
{
	char run[64];
	struct stat st;
	uid_t uid = geteuid();

	*mode = 0700;
	if (uid == 0) {
		snprintf(out, cap, "/run/ri2n");
		*mode = 0755; /* ri2n-stat of other users reads it */
		return;
	}
	snprintf(run, sizeof(run), "/run/user/%u", (unsigned)uid);
	if (lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		snprintf(out, cap, "%s/ri2n", run);
	else
		snprintf(out, cap, "/tmp/ri2n-%u", (unsigned)uid);
}

void rn_publish_start(void)
{
	const char *env = rn_proc_text(RN_PROC_RUN_DIR), *why;
	char dir[200];
	mode_t mode = 0700;
	long period = (long)rn_proc_get(RN_PROC_STAT_MS);
	static int registered;

	if (period <= 0)
		return;
	if (env) {
		snprintf(dir, sizeof(dir), "%s", env);
		mode = 0;
	} else {
		default_dir(dir, sizeof(dir), &mode);
	}
	if (g.dirfd >= 0)
		close(g.dirfd);
	g.dirfd = rn_publish_dir_open(dir, mode, &why);
	if (g.dirfd < 0) {
		rn_warn("not publishing connection state for ri2n-stat: %s: %s", dir, why);
		return;
	}
	snprintf(g.name, sizeof(g.name), "%d.stat", (int)getpid());
	snprintf(g.tmpname, sizeof(g.tmpname), "%s.tmp", g.name);
	snprintf(g.path, sizeof(g.path), "%s/%s", dir, g.name);
	snprintf(g.tmp, sizeof(g.tmp), "%s.tmp", g.path);
	g.start = proc_start();
	g.period = (struct timeval){ period / 1000, (period % 1000) * 1000 };
	g.ev = event_new(rn_engine_base(), -1, EV_PERSIST, snapshot, NULL);
	if (!g.ev)
		return;
	event_add(g.ev, &g.period);
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
		close(g.dirfd);
	g.dirfd = -1;
	pthread_mutex_init(&g.mu, NULL);
	g.closed = 0;
	g.ev = NULL;
	g.path[0] = 0;
}
