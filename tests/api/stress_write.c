/*
 * stress_write.c - posix_stress's writers: every way a program puts bytes
 * on a socket, one record at a time, in the stream's defined order.
 *
 * A writer thread takes the stream's lock and then writes one record by a
 * path drawn at random, or hands the stream's token to the timer signal's
 * handler (which writes the next few small records from whatever thread the
 * signal lands in, while the lock's holder only waits), or forks a child or
 * spawns a new image of the program that writes the next records while the
 * parent waits for it.  Each write is
 * logged first (struct wlog) so a failure can name the paths around it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ri2n.h>

#include "ri2n_kit.h"
#include "stress.h"

enum { WHO_SIG = 90, WHO_CHILD = 91, WHO_MAIN = 92 };

/* ---- records and the write log ---- */

size_t rec_build(struct stream *st, uint8_t *buf, uint32_t len, enum wpath p)
{
	struct rec h = { REC_MAGIC, (uint16_t)st->id, (uint16_t)p, st->seq, len, st->off };

	memcpy(buf, &h, sizeof(h));
	kit_pattern_fill(buf + sizeof(h), st->seed, st->off + sizeof(h), len);
	return sizeof(h) + len;
}

/* Logs a write about to start: its slot, for wlog_end. */
static struct wlog *wlog_begin(struct stream *st, int who, enum wpath p, uint64_t off, size_t n)
{
	uint32_t i = atomic_fetch_add(&st->wlog_n, 1);
	struct wlog *l = &st->wlog[i % WLOG_N];

	atomic_store(&l->result, 0);
	atomic_store(&l->off, off);
	atomic_store(&l->seq, st->seq);
	atomic_store(&l->len, (uint32_t)n);
	atomic_store(&l->path, (uint32_t)p);
	atomic_store(&l->who, (uint32_t)who);
	atomic_store(&l->ms, ms_run());
	return l;
}

/* The record of n bytes is out: the stream moves past it. */
static void rec_done(struct stream *st, struct wlog *l, enum wpath p, size_t n)
{
	atomic_store(&l->result, 1);
	st->seq++;
	st->off += n;
	atomic_fetch_add(&st->written, n);
	atomic_store(&st->stamp_ms, ms_now());
	atomic_fetch_add(&S.w_bytes[p], n);
	atomic_fetch_add(&S.w_recs[p], 1);
}

/* ---- one system call of a path, and the loop that finishes a record ---- */

/* Splits [b, b + n) into up to 4 pieces (some may be empty). */
static int iov_split(const uint8_t *b, size_t n, struct iovec *v, uint64_t *rng)
{
	int k = 1 + (int)(rnd(rng) % 4);
	size_t at = 0;

	for (int i = 0; i < k; i++) {
		size_t take = i == k - 1 ? n - at : (n - at) * (rnd(rng) % 101) / 100;

		v[i] = (struct iovec){ (void *)(b + at), take };
		at += take;
	}
	return k;
}

static ssize_t tx_once(enum wpath p, int fd, const uint8_t *b, size_t n, uint64_t *rng)
{
	struct iovec v[4];
	struct msghdr m = { .msg_iov = v };

	switch (p) {
	case W_SEND: case W_DUP2: case W_CHILD_SEND: case W_SIG_SEND:
		return send(fd, b, n, MSG_NOSIGNAL);
	case W_WRITEV: case W_DUPFD: case W_CHILD_WRITEV: case W_SIG_WRITEV:
		return writev(fd, v, iov_split(b, n, v, rng));
	case W_SENDMSG:
		m.msg_iovlen = (size_t)iov_split(b, n, v, rng);
		return sendmsg(fd, &m, MSG_NOSIGNAL);
	case W_SEND_NB:
		return send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	case W_RI2N_SEND:
		return S.tcp ? send(fd, b, n, MSG_NOSIGNAL) : ri2n_send(fd, b, n, MSG_NOSIGNAL);
	case W_RI2N_WRITEV:
		return (S.tcp ? writev : ri2n_writev)(fd, v, iov_split(b, n, v, rng));
	default: /* write, dup, dupkeep, child and handler writes */
		return write(fd, b, n);
	}
}

/* Writes all n bytes by path p on fd: 0, or -1 with why. */
static int tx_loop(enum wpath p, int fd, const uint8_t *b, size_t n, uint64_t *rng, char *why,
		   size_t wl)
{
	size_t done = 0;

	while (done < n) {
		sig_atomic_t h = usr2_hits;
		ssize_t w = tx_once(p, fd, b + done, n - done, rng);

		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR && eintr_legit(h)) {
			atomic_fetch_add(&S.eintr_usr2, 1);
			continue;
		}
		if (w < 0 && errno == EAGAIN && p == W_SEND_NB) {
			struct pollfd q = { .fd = fd, .events = POLLOUT };

			poll(&q, 1, 1000); /* EINTR or a timeout: the send says */
			continue;
		}
		snprintf(why, wl, "%s on fd %d after %zu of %zu bytes: %s%s", wpath_name[p], fd,
			 done, n, w == 0 ? "returned 0" : strerror(errno),
			 w < 0 && errno == EINTR ? " (only handlers with SA_RESTART ran)" : "");
		return -1;
	}
	return 0;
}

/* ---- the paths that need more than one call ---- */

static sigset_t usr2_set(void)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	return m;
}

/* stdio cannot tell how much of a buffer an EINTR left unwritten: SIGUSR2
 * waits (the SA_RESTART timer signal still lands). */
static int tx_stdio(struct stream *st, const uint8_t *b, size_t n, char *why, size_t wl)
{
	sigset_t m = usr2_set(), old;
	int d, rc = -1;
	FILE *f;

	pthread_sigmask(SIG_BLOCK, &m, &old);
	d = dup(st->tx);
	f = d >= 0 ? fdopen(d, "w") : NULL;
	if (!f) {
		snprintf(why, wl, "stdio: dup/fdopen: %s", strerror(errno));
		if (d >= 0)
			close(d);
	} else {
		size_t k = fwrite(b, 1, n, f);
		int e = fflush(f), se = errno, c = fclose(f);

		if (k == n && e == 0 && c == 0)
			rc = 0;
		else
			snprintf(why, wl, "stdio: fwrite %zu of %zu, fflush %d, fclose %d: %s", k,
				 n, e, c, strerror(se));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* dprintf formats into its own buffer: 8 bytes a call, as %c (a NUL too). */
static int tx_dprintf(struct stream *st, const uint8_t *b, size_t n, char *why, size_t wl)
{
	sigset_t m = usr2_set(), old;
	size_t i = 0;
	int r = 0;

	pthread_sigmask(SIG_BLOCK, &m, &old);
	for (; i + 8 <= n; i += 8) {
		r = dprintf(st->tx, "%c%c%c%c%c%c%c%c", b[i], b[i + 1], b[i + 2], b[i + 3],
			    b[i + 4], b[i + 5], b[i + 6], b[i + 7]);
		if (r != 8)
			break;
	}
	for (; r >= 0 && i + 8 > n && i < n; i++)
		if ((r = dprintf(st->tx, "%c", b[i])) != 1)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (i >= n)
		return 0;
	snprintf(why, wl, "dprintf at byte %zu of %zu returned %d: %s", i, n, r, strerror(errno));
	return -1;
}

/*
 * Each record goes to a new place in the memfd: the kernel may send a file's
 * pages by reference after sendfile returns (TCP does, and AF_UNIX since
 * Linux 6.5), so a page rewritten too soon would change bytes in flight.  A
 * truncation detaches the pages still referenced before they are reused.
 */
static int tx_sendfile(struct stream *st, const uint8_t *b, size_t n, char *why, size_t wl)
{
	off_t o, end;

	if (st->mf_pos > 32 * 1024 * 1024) {
		if (ftruncate(st->memfd, 0) < 0) {
			snprintf(why, wl, "sendfile: ftruncate the memfd: %s", strerror(errno));
			return -1;
		}
		st->mf_pos = 0;
	}
	o = st->mf_pos;
	end = o + (off_t)n;
	st->mf_pos = (end + 4095) & ~(off_t)4095; /* no page shared with the next record */
	if (pwrite(st->memfd, b, n, o) != (ssize_t)n) {
		snprintf(why, wl, "sendfile: pwrite to the memfd: %s", strerror(errno));
		return -1;
	}
	while (o < end) {
		sig_atomic_t h = usr2_hits;
		ssize_t w = sendfile(st->tx, st->memfd, &o, (size_t)(end - o));

		if (w > 0 || (w < 0 && errno == EINTR && eintr_legit(h)))
			continue;
		snprintf(why, wl, "sendfile after %lld of %zu bytes: %s%s",
			 (long long)(n - (size_t)(end - o)), n,
			 w == 0 ? "returned 0" : strerror(errno),
			 w < 0 && errno == EINTR ? " (only handlers with SA_RESTART ran)" : "");
		return -1;
	}
	return 0;
}

/* 64 KiB at a time: into the (empty) pipe, then spliced out of it. */
static int tx_splice(struct stream *st, const uint8_t *b, size_t n, char *why, size_t wl)
{
	for (size_t at = 0; at < n;) {
		size_t k = n - at < 65536 ? n - at : 65536, in = 0;

		while (in < k) {
			ssize_t w = write(st->pipe[1], b + at + in, k - in);

			if (w > 0)
				in += (size_t)w;
			else if (!(w < 0 && errno == EINTR)) {
				snprintf(why, wl, "splice: write to the pipe: %s", strerror(errno));
				return -1;
			}
		}
		while (in > 0) {
			sig_atomic_t h = usr2_hits;
			ssize_t w = splice(st->pipe[0], NULL, st->tx, NULL, in, SPLICE_F_MOVE);

			if (w > 0) {
				in -= (size_t)w;
				at += (size_t)w;
			} else if (!(w < 0 && errno == EINTR && eintr_legit(h))) {
				snprintf(why, wl, "splice after %zu of %zu bytes: %s%s", at, n,
					 w == 0 ? "returned 0" : strerror(errno),
					 w < 0 && errno == EINTR ? " (only SA_RESTART handlers ran)"
								 : "");
				return -1;
			}
		}
	}
	return 0;
}

/* The socket's number sent round the stream's AF_UNIX pair: the one received, or -1. */
static int scm_round(struct stream *st)
{
	char one = 1, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &one, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	int fd = -1;
	ssize_t r;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &st->tx, sizeof(int));
	while ((r = sendmsg(st->scm[0], &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (r != 1)
		return -1;
	m.msg_controllen = sizeof(cbuf);
	while ((r = recvmsg(st->scm[1], &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	c = CMSG_FIRSTHDR(&m);
	if (r == 1 && c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static int tx_scm(struct stream *st, const uint8_t *b, size_t n, uint64_t *rng, char *why,
		  size_t wl)
{
	int d = scm_round(st), rc;

	if (d < 0) {
		snprintf(why, wl, "scm: passing the descriptor: %s", strerror(errno));
		return -1;
	}
	rc = tx_loop(W_SCM, d, b, n, rng, why, wl);
	close(d);
	return rc;
}

/* Through a duplicate made for this record only. */
static int tx_dup(struct stream *st, enum wpath p, const uint8_t *b, size_t n, uint64_t *rng,
		  char *why, size_t wl)
{
	int d = p == W_DUP2 ? dup2(st->tx, DUP2_BASE + st->id)
		: p == W_DUPFD ? fcntl(st->tx, F_DUPFD, DUPFD_MIN) : dup(st->tx);
	int rc;

	if (d < 0) {
		snprintf(why, wl, "%s: making the duplicate: %s", wpath_name[p], strerror(errno));
		return -1;
	}
	rc = tx_loop(p, d, b, n, rng, why, wl);
	if (close(d) < 0 && rc == 0) {
		snprintf(why, wl, "%s: close(%d): %s", wpath_name[p], d, strerror(errno));
		rc = -1;
	}
	return rc;
}

static int tx_path(struct stream *st, enum wpath p, const uint8_t *b, size_t n, uint64_t *rng,
		   char *why, size_t wl)
{
	switch (p) {
	case W_DUP: case W_DUP2: case W_DUPFD:
		return tx_dup(st, p, b, n, rng, why, wl);
	case W_DUPKEEP:
		return tx_loop(p, st->keep_dup, b, n, rng, why, wl);
	case W_STDIO:
		return tx_stdio(st, b, n, why, wl);
	case W_DPRINTF:
		return tx_dprintf(st, b, n, why, wl);
	case W_SENDFILE:
		return tx_sendfile(st, b, n, why, wl);
	case W_SPLICE:
		return tx_splice(st, b, n, why, wl);
	case W_SCM:
		return tx_scm(st, b, n, rng, why, wl);
	default:
		return tx_loop(p, st->tx, b, n, rng, why, wl);
	}
}

/* ---- the timer signal's handler ---- */

/* The next record, small, by write, send or writev; -1 and sig_why on a failure. */
static int sig_write_one(struct stream *st)
{
	uint8_t b[sizeof(struct rec) + SIG_PAYLOAD];
	uint64_t x = S.seed ^ ((uint64_t)st->id << 40) ^ st->seq;
	enum wpath p = W_SIG_WRITE + rnd(&x) % 3;
	size_t n;
	struct wlog *l;

	for (int i = 0; i < 3 && (S.skip_w >> p & 1); i++)
		p = p == W_SIG_WRITEV ? W_SIG_WRITE : p + 1;
	n = rec_build(st, b, rnd(&x) % (SIG_PAYLOAD + 1), p);
	l = wlog_begin(st, WHO_SIG, p, st->off, n);
	if (tx_loop(p, st->tx, b, n, &x, st->sig_why, sizeof(st->sig_why)) < 0) {
		atomic_store(&l->result, -errno);
		return -1;
	}
	rec_done(st, l, p, n);
	atomic_fetch_add(&S.sig_records, 1);
	return 0;
}

void on_timer_signal(int sig)
{
	int saved = errno, cs;

	(void)sig;
	/*
	 * Only the run's own process writes here.  The kernel never hands a
	 * forked child its parent's pending signals, but TSan defers handlers
	 * to its own safe points and a child inherits that queue: the child
	 * would write the next record of a lent stream from its stale copy of
	 * it, a record the parent writes too.
	 */
	if ((pid_t)syscall(SYS_getpid) != S.pid)
		return;
	/* a reader cancelled in its read must not go half way through a record written
	 * here (glibc's setcancelstate is one atomic operation; deferred mode never acts) */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	for (int i = 0; i < S.nstreams; i++) {
		struct stream *st = &S.st[i];

		/*
		 * A handler's write may wait for the stream's reader; in a reader
		 * thread it must not close a cycle of readers waiting for each other
		 * (TCP would hang too): the reader of an even stream writes only the
		 * odd one back on the same descriptor, whose reader never writes.
		 */
		if ((my_rx_stream >= 0 && (my_rx_stream % 2 || i != my_rx_stream + 1)) ||
		    atomic_load(&st->token) <= 0 ||
		    atomic_exchange(&st->sig_busy, 1))
			continue;
		if (atomic_load(&st->token) > 0) {
			if (sig_write_one(st) < 0)
				atomic_store(&st->token, -1);
			else
				atomic_fetch_sub(&st->token, 1);
		}
		atomic_store(&st->sig_busy, 0);
		break;
	}
	pthread_setcancelstate(cs, NULL);
	errno = saved;
}

/* Lends the stream to the handler for 1-8 records and waits for it. */
static void hand_token(struct writer_arg *w, uint64_t *rng)
{
	struct stream *st = w->st;
	uint64_t off = st->off;
	int t;

	atomic_store(&st->w_path, W_SIG_WRITE);
	atomic_store(&st->w_since, ms_run());
	atomic_store(&st->token, 1 + (int)(rnd(rng) % 8));
	while ((t = atomic_load(&st->token)) > 0)
		us_sleep(200);
	atomic_store(&st->w_path, -1);
	if (t < 0)
		fail_stream(st, off, "stream %d: the signal handler's write failed: %s", st->id,
			    st->sig_why);
}

/* ---- forked writers ---- */

/*
 * What each thread of a stuck child is doing, to stderr: its state, CPU
 * ticks, the system call it is in (number and arguments) and the kernel's
 * wait channel; with POSIX_STRESS_GDB, its stacks too.
 */
static void child_dump(pid_t pid)
{
	char path[64];
	int tids[64], n = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d)) && n < 64)
		if (e->d_name[0] != '.')
			tids[n++] = atoi(e->d_name);
	closedir(d);
	for (int i = 0; i < n; i++) {
		static const char *const files[] = { "stat", "syscall", "wchan" };

		fprintf(stderr, "  child %d thread %d:\n", (int)pid, tids[i]);
		for (int f = 0; f < 3; f++) {
			char line[512] = "";
			FILE *fp;

			snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, tids[i], files[f]);
			if ((fp = fopen(path, "r"))) {
				if (!fgets(line, sizeof(line), fp))
					line[0] = 0;
				fclose(fp);
			}
			line[strcspn(line, "\n")] = 0;
			fprintf(stderr, "    %s: %s\n", files[f], line);
		}
	}
	gdb_stacks(pid);
}

/* Waits for a child writing k records from seq0 (15 s at most); fails the run unless it exits 0. */
static void child_wait(struct stream *st, pid_t pid, const char *what, uint32_t seq0, uint32_t k)
{
	uint64_t end = ms_now() + 15000;
	int status = 0;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (ms_now() > end) {
			child_dump(pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_stream(st, st->off, "stream %d: %s (pid %d) writing records %u-%u did "
				    "not finish in 15 s", st->id, what, pid, seq0, seq0 + k - 1);
		}
		us_sleep(500);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_stream(st, st->off, "stream %d: %s writing records %u-%u ended with status "
			    "%#x", st->id, what, seq0, seq0 + k - 1, status);
}

/* At most one fork per 200 ms in the whole process: a fork is slow under a sanitizer. */
static int fork_allowed(void)
{
	uint64_t now = ms_now(), last = atomic_load(&S.last_fork_ms);

	return now - last >= 200 && atomic_compare_exchange_strong(&S.last_fork_ms, &last, now);
}

/* The child writes 1-3 records; the parent waits for it (15 s at most). */
static size_t fork_records(struct writer_arg *w, uint8_t *buf, uint64_t *rng)
{
	struct stream *st = w->st;
	int k = 1 + (int)(rnd(rng) % 3);
	size_t len[3], at = 0, n = 0;
	enum wpath p[3];
	struct wlog *l[3];
	uint32_t seq0 = st->seq;
	uint64_t off0 = st->off;
	pid_t pid;

	for (int i = 0; i < k; i++) { /* built and logged ahead, the stream moved on */
		p[i] = W_CHILD_WRITE + rnd(rng) % 3;
		len[i] = rec_build(st, buf + at, rnd(rng) % 4096, p[i]);
		l[i] = wlog_begin(st, WHO_CHILD, p[i], st->off, len[i]);
		st->seq++;
		st->off += len[i];
		at += len[i];
	}
	st->seq = seq0;
	st->off = off0;
	atomic_store(&st->w_path, p[0]);
	atomic_store(&st->w_since, ms_run());
	pid = fork();
	if (pid < 0)
		fail_stream(st, off0, "stream %d: fork: %s", st->id, strerror(errno));
	if (pid == 0) {
		char why[200];

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed run */
		for (int i = 0; i < k; i++) {
			if (tx_loop(p[i], st->tx, buf + n, len[i], rng, why, sizeof(why)) < 0) {
				dprintf(2, "posix_stress: forked child: %s\n", why);
				_exit(3);
			}
			n += len[i];
		}
		_exit(0);
	}
	child_wait(st, pid, "a forked child", seq0, (uint32_t)k);
	for (int i = 0; i < k; i++)
		rec_done(st, l[i], p[i], len[i]);
	atomic_fetch_add(&S.forks, 1);
	atomic_store(&st->w_path, -1);
	return at;
}

/* A new image of this program writes the next record (posix_spawn: a vfork and an exec). */
static size_t spawn_record(struct writer_arg *w, uint64_t *rng)
{
	struct stream *st = w->st;
	uint32_t len = rnd(rng) % 4096;
	size_t n = sizeof(struct rec) + len;
	char a[6][24];
	char *argv[] = { "posix_stress", "--spawn-write", a[0], a[1], a[2], a[3], a[4], a[5], NULL };
	posix_spawn_file_actions_t fa;
	struct wlog *l = wlog_begin(st, WHO_CHILD, W_SPAWN, st->off, n);
	pid_t pid;
	int rc;

	snprintf(a[0], sizeof(a[0]), "%d", SPAWN_FD);
	snprintf(a[1], sizeof(a[1]), "%d", st->id);
	snprintf(a[2], sizeof(a[2]), "%u", st->seq);
	snprintf(a[3], sizeof(a[3]), "%" PRIu64, st->off);
	snprintf(a[4], sizeof(a[4]), "%u", len);
	snprintf(a[5], sizeof(a[5]), "%" PRIu64, st->seed);
	atomic_store(&st->w_path, W_SPAWN);
	atomic_store(&st->w_since, ms_run());
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, st->tx, SPAWN_FD);
	rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		fail_stream(st, st->off, "stream %d: posix_spawn: %s", st->id, strerror(rc));
	child_wait(st, pid, "a spawned writer", st->seq, 1);
	rec_done(st, l, W_SPAWN, n);
	atomic_fetch_add(&S.forks, 1);
	atomic_store(&st->w_path, -1);
	return n;
}

int spawn_write_main(char **argv)
{
	struct stream st = { 0 };
	uint32_t len;
	uint8_t *b;
	size_t n, done = 0;
	int fd;

	for (int i = 0; i < 6; i++)
		if (!argv[i])
			return 2;
	fd = atoi(argv[0]);
	st.id = atoi(argv[1]);
	st.seq = (uint32_t)strtoul(argv[2], NULL, 10);
	st.off = strtoull(argv[3], NULL, 10);
	len = (uint32_t)strtoul(argv[4], NULL, 10);
	st.seed = strtoull(argv[5], NULL, 10);
	b = malloc(sizeof(struct rec) + len);
	if (!b)
		return 3;
	n = rec_build(&st, b, len, W_SPAWN);
	while (done < n) {
		ssize_t w = write(fd, b + done, n - done);

		if (w > 0)
			done += (size_t)w;
		else if (!(w < 0 && errno == EINTR)) {
			dprintf(2, "posix_stress: spawned writer: write: %s\n",
				w < 0 ? strerror(errno) : "returned 0");
			break;
		}
	}
	free(b);
	return done == n ? 0 : 3;
}

/* A child writes: a posix_spawn()ed image or a forked copy. */
static size_t child_records(struct writer_arg *w, uint8_t *buf, uint64_t *rng)
{
	int spawn = !(S.skip_w >> W_SPAWN & 1), forks = !(S.skip_f & F_FORK);

	if (spawn && (!forks || rnd(rng) % 2))
		return spawn_record(w, rng);
	if (forks)
		return fork_records(w, buf, rng);
	return 0;
}

/* ---- writer threads ---- */

/* A payload length: mostly small, sometimes up to MAX_PAYLOAD. */
static uint32_t pick_len(uint64_t *rng, enum wpath p)
{
	uint32_t c = rnd(rng) % 100, n;

	if (c < 45)
		n = rnd(rng) % 65;
	else if (c < 75)
		n = rnd(rng) % 4096;
	else if (c < 95)
		n = rnd(rng) % 65536;
	else
		n = rnd(rng) % (MAX_PAYLOAD + 1);
	return p == W_DPRINTF ? n % (DPRINTF_PAYLOAD + 1) : n;
}

static enum wpath pick_path(uint64_t *rng)
{
	for (;;) {
		enum wpath p = rnd(rng) % (W_LAST_THREAD + 1);

		if (!(S.skip_w >> p & 1))
			return p;
	}
}

/* One record by path p from this thread: its size. */
static size_t write_one(struct writer_arg *w, uint8_t *buf, uint64_t *rng)
{
	struct stream *st = w->st;
	enum wpath p = pick_path(rng);
	size_t n = rec_build(st, buf, pick_len(rng, p), p);
	struct wlog *l = wlog_begin(st, w->who, p, st->off, n);
	char why[240];

	atomic_store(&st->w_path, p);
	atomic_store(&st->w_since, ms_run());
	if (tx_path(st, p, buf, n, rng, why, sizeof(why)) < 0) {
		atomic_store(&l->result, -errno);
		fail_stream(st, st->off, "stream %d, writer %d, record %u (%zu bytes at offset "
			    "%llu): %s", st->id, w->who, st->seq, n, (unsigned long long)st->off,
			    why);
	}
	atomic_store(&st->w_path, -1);
	rec_done(st, l, p, n);
	return n;
}

void *writer_main(void *arg)
{
	struct writer_arg *w = arg;
	struct stream *st = w->st;
	uint64_t rng = S.seed * 1000003 + (uint64_t)st->id * 16 + (uint64_t)w->who + 1;
	uint64_t per_s = (uint64_t)S.rate_kib * 1024 / WRITERS;
	uint8_t *buf = malloc(sizeof(struct rec) + MAX_PAYLOAD);
	sigset_t all;

	sigemptyset(&all);
	sigaddset(&all, SIGUSR1);
	sigaddset(&all, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &all, NULL);
	while (buf && !atomic_load(&S.stop)) {
		uint32_t r = rnd(&rng) % 1000;
		size_t n = 0;

		pthread_mutex_lock(&st->mu);
		if (r < 15 && !(S.skip_f & F_SIG))
			hand_token(w, &rng);
		else if (r < 20 && fork_allowed())
			n = child_records(w, buf, &rng);
		else /* now and then a burst: one path right after another, no pause */
			for (int k = r % 4 ? 1 : 2 + (int)(r % 5); k > 0; k--)
				n += write_one(w, buf, &rng);
		pthread_mutex_unlock(&st->mu);
		/* the pace: this writer's share of the stream's rate, and a little jitter */
		us_sleep(n * 1000000 / (per_s ? per_s : 1) + rnd(&rng) % 300);
	}
	free(buf);
	return NULL;
}

void write_end(struct stream *st)
{
	uint8_t b[sizeof(struct rec)];
	size_t n = rec_build(st, b, 0, W_END);
	struct wlog *l = wlog_begin(st, WHO_MAIN, W_END, st->off, n);
	uint64_t rng = 1;
	char why[240];

	if (tx_loop(W_WRITE, st->tx, b, n, &rng, why, sizeof(why)) < 0)
		fail_stream(st, st->off, "stream %d: the end record: %s", st->id, why);
	rec_done(st, l, W_END, n);
	if (shutdown(st->tx, SHUT_WR) < 0)
		fail_stream(st, st->off, "stream %d: shutdown(SHUT_WR) after the end record: %s",
			    st->id, strerror(errno));
}
