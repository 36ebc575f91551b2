/*
 * ri2n_api.c - the socket-compatible calls of ri2n.h.
 *
 * A ri2n socket is the user's end (A) of an AF_UNIX socketpair; the engine
 * owns the other end (B).  The table here maps a descriptor number to its
 * rn_sock and checks, by device and inode, that the number still is that
 * socket: the user may close() it directly and get the number again for
 * something else.
 *
 * Until a connection is established A must not look writable (a
 * non-blocking connect is finished when poll says POLLOUT), so ri2n_socket
 * fills A's send buffer with junk the engine throws away once connected:
 * then writability means "connected or failed", and SO_ERROR says which.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <time.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "ri2n.h"
#include "rn_api.h"
#include "rn_log.h"
#include "rn_engine.h"
#include "rn_events.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_stream.h"

static struct {
	pthread_mutex_t mu;
	rn_sock **tab;
	int cap;
	int atfork;
} g_tab = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int fail(int err)
{
	errno = err;
	return -1;
}

/*
 * Before a fork: the child will write to these sockets' descriptors the
 * plain way (its own table is empty), so fast sends here must take what is
 * in the descriptor first from now on.
 */
static void tab_plain_all(void)
{
	pthread_mutex_lock(&g_tab.mu);
	for (int i = 0; i < g_tab.cap; i++)
		if (g_tab.tab[i])
			__atomic_store_n(&g_tab.tab[i]->plain_writes, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&g_tab.mu);
}

static void tab_forget(void)
{
	/* a forked child: the parent's sockets are the parent engine's business */
	g_tab.tab = NULL;
	g_tab.cap = 0;
	pthread_mutex_init(&g_tab.mu, NULL);
}

static int tab_install(int fd, rn_sock *s)
{
	pthread_mutex_lock(&g_tab.mu);
	if (!g_tab.atfork) {
		pthread_atfork(tab_plain_all, NULL, tab_forget);
		g_tab.atfork = 1;
	}
	if (fd >= g_tab.cap) {
		int cap = fd * 2 + 64;
		rn_sock **n = realloc(g_tab.tab, (size_t)cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&g_tab.mu);
			return -ENOMEM;
		}
		memset(n + g_tab.cap, 0, (size_t)(cap - g_tab.cap) * sizeof(*n));
		g_tab.tab = n;
		g_tab.cap = cap;
	}
	if (g_tab.tab[fd]) /* a stale entry: the number was closed and reused */
		rn_sock_unref(g_tab.tab[fd]);
	g_tab.tab[fd] = s;
	pthread_mutex_unlock(&g_tab.mu);
	return 0;
}

/* The socket behind fd, referenced; NULL with *err EBADF or ENOTSOCK. */
static rn_sock *lookup(int fd, int *err)
{
	uint64_t cookie = rn_fd_cookie(fd);
	rn_sock *s = NULL;

	if (!cookie) {
		*err = errno == ENOTSOCK ? ENOTSOCK : EBADF;
		return NULL;
	}
	pthread_mutex_lock(&g_tab.mu);
	if (fd < g_tab.cap && g_tab.tab[fd]) {
		s = g_tab.tab[fd];
		if (s->cookie == cookie) {
			rn_sock_ref(s);
		} else {
			g_tab.tab[fd] = NULL;
			rn_sock_unref(s);
			s = NULL;
		}
	}
	pthread_mutex_unlock(&g_tab.mu);
	if (!s)
		*err = ENOTSOCK;
	return s;
}

void rn_api_writes_seen(void)
{
	rn_sock_writes_seen();
}

void rn_api_to_descriptor(int fd)
{
	int err;
	rn_sock *s = lookup(fd, &err);

	if (s) {
		rn_inline_to_descriptor(s);
		rn_sock_unref(s);
	}
}

void rn_api_note_plain(int fd)
{
	int err;
	rn_sock *s = lookup(fd, &err);

	if (s) {
		__atomic_store_n(&s->plain_writes, 1, __ATOMIC_RELAXED);
		rn_sock_unref(s);
	}
}

/*
 * The socket behind fd, referenced, as the table has it: for a caller that
 * knows fd still is the same open file as when it was last looked up.
 */
static rn_sock *lookup_known(int fd)
{
	rn_sock *s = NULL;

	pthread_mutex_lock(&g_tab.mu);
	if (fd >= 0 && fd < g_tab.cap && (s = g_tab.tab[fd]))
		rn_sock_ref(s);
	pthread_mutex_unlock(&g_tab.mu);
	return s;
}

int rn_api_is_ri2n(int fd)
{
	int err;
	rn_sock *s = lookup(fd, &err);

	if (!s)
		return 0;
	rn_sock_unref(s);
	return 1;
}

/* Fills A's send buffer so that A polls writable only once connected. */
static size_t fill_junk(int fd)
{
	static const char zeros[65536];
	int fl = fcntl(fd, F_GETFL);
	size_t total = 0;

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	for (;;) {
		ssize_t n = syscall(SYS_sendto, fd, zeros, sizeof(zeros), MSG_DONTWAIT | MSG_NOSIGNAL,
				    NULL, 0);

		if (n <= 0)
			break;
		total += (size_t)n;
	}
	fcntl(fd, F_SETFL, fl);
	return total;
}

/*
 * At exit, the engine thread dies with the process, and with it any bytes
 * still in its rings: what TCP's kernel would go on sending.  So exit waits
 * (up to RI2N_EXIT_LINGER_MS, 30 s) until every connection has sent its
 * bytes and its FIN and had them acknowledged.  Descriptors still open are
 * shut down for writing first: exit would close them anyway.  _exit() and
 * signals skip this, as they skip every atexit handler.
 */
static void drain_at_exit(void);

static void register_drain(void)
{
	atexit(drain_at_exit);
}

/* Polls the engine with RN_CMD_PENDING(mode) until it says 0 or ms pass; the last count. */
static int wait_pending(int mode, long ms)
{
	struct timespec t0, t;
	int pending;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pending = rn_engine_call(RN_CMD_PENDING, NULL, &mode);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (pending <= 0 ||
		    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			return pending;
		usleep(2000);
		mode = mode == RN_EXIT_RESET ? RN_EXIT_OWED : mode; /* reset once, then wait */
	}
}

static void drain_at_exit(void)
{
	const char *env = getenv("RI2N_EXIT_LINGER_MS");
	long linger_ms = env && *env ? strtol(env, NULL, 10) : 30000;
	int pending;

	if (!rn_engine_running())
		return;
	pthread_mutex_lock(&g_tab.mu);
	for (int fd = 0; fd < g_tab.cap; fd++) {
		struct stat sb;
		rn_sock *s = g_tab.tab[fd];

		if (s && fstat(fd, &sb) == 0 && s->ino == sb.st_ino && s->dev == sb.st_dev &&
		    s->kind == RN_SK_CONNECTED)
			shutdown(fd, SHUT_WR);
	}
	pthread_mutex_unlock(&g_tab.mu);
	/* our bytes and FIN delivered, every ACK owed sent */
	pending = wait_pending(RN_EXIT_OWED, linger_ms);
	if (pending > 0)
		fprintf(stderr, "ri2n[%d]: exiting with %d connection%s still sending after %ld ms: "
				"the peer may not get everything\n", (int)getpid(), pending,
			pending == 1 ? "" : "s", linger_ms);
	/*
	 * Peers that have not closed their side get a moment to, then a RESET:
	 * nobody will answer their FIN or data once this process is gone, and
	 * a reset tells them now rather than after their dead-peer timeout.
	 */
	if (wait_pending(RN_EXIT_OPEN, linger_ms < 1000 ? linger_ms : 1000) > 0)
		wait_pending(RN_EXIT_RESET, 200);
}

int ri2n_socket(void)
{
	int sv[2], rc;
	struct stat sb;
	rn_sock *s;

	rc = rn_engine_start();
	if (rc)
		return fail(-rc);
	{
		static pthread_once_t once = PTHREAD_ONCE_INIT;

		pthread_once(&once, register_drain);
	}
	s = rn_sock_new();
	if (!s)
		return fail(ENOMEM);
	/* both ends close-on-exec from birth: a fork+exec in another thread meanwhile must
	 * not carry the engine's end away; the user's end loses the flag just below */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = errno;
		rn_sock_unref(s);
		return fail(rc);
	}
	fcntl(sv[0], F_SETFD, 0); /* the user's: as a socket() without SOCK_CLOEXEC */
	fstat(sv[0], &sb);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	rn_fd_own(sv[1]);
	s->user_fd = sv[0];
	s->eng_fd = sv[1];
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->cookie = rn_fd_cookie(sv[0]);
	s->cfg = *rn_engine_config();
	s->junk = fill_junk(sv[0]);
	rc = tab_install(sv[0], s);
	if (rc == 0)
		rc = rn_engine_call(RN_CMD_CREATE, s, NULL);
	if (rc) {
		close(sv[0]);
		return fail(-rc);
	}
	return sv[0];
}

static int check_sin(const struct sockaddr *a, socklen_t len)
{
	if (!a || len < (socklen_t)sizeof(struct sockaddr_in))
		return EINVAL;
	if (a->sa_family != AF_INET)
		return EAFNOSUPPORT;
	return 0;
}

int ri2n_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in a;
	int err = check_sin(addr, len), rc;
	rn_sock *s;

	if (err)
		return fail(err);
	s = lookup(fd, &err);
	if (!s)
		return fail(err);
	memcpy(&a, addr, sizeof(a));
	rc = rn_engine_call(RN_CMD_BIND, s, &a);
	rn_sock_unref(s);
	return rc ? fail(-rc) : 0;
}

int ri2n_listen(int fd, int backlog)
{
	int err, rc;
	rn_sock *s = lookup(fd, &err);

	if (!s)
		return fail(err);
	pthread_mutex_lock(&s->mu);
	s->backlog = backlog <= 0 ? 128 : backlog > 65536 ? 65536 : backlog;
	pthread_mutex_unlock(&s->mu);
	rc = rn_engine_call(RN_CMD_LISTEN, s, NULL);
	rn_sock_unref(s);
	return rc ? fail(-rc) : 0;
}

static void put_addr(const struct sockaddr_in *in, struct sockaddr *addr, socklen_t *len)
{
	if (!addr || !len)
		return;
	memcpy(addr, in, *len < sizeof(*in) ? *len : sizeof(*in));
	*len = sizeof(*in);
}

/*
 * Reads one accept record (rn_accept_rec, rn_engine.h) from listener fd:
 * blocking or not as the descriptor is.  The record's descriptor (a copy of
 * the connection's end A) goes to *afd.  0, or an errno (EINVAL: the engine
 * let go of the listener).
 */
static int read_accept_rec(int fd, rn_accept_rec *rec, int *afd, int flags)
{
	struct iovec iov = { rec, sizeof(*rec) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	/* raw: an interposed recvmsg would take this for the fast path */
	ssize_t n = syscall(SYS_recvmsg, fd, &m, MSG_CMSG_CLOEXEC | flags);
	struct cmsghdr *c;

	*afd = -1;
	if (n < 0)
		return errno;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(afd, CMSG_DATA(c), sizeof(int));
	if (n == (ssize_t)sizeof(*rec) && *afd < 0 && rec->tag == 'e')
		return 0; /* no connection: rec->err says why */
	if (n != (ssize_t)sizeof(*rec) || *afd < 0) {
		if (*afd >= 0)
			syscall(SYS_close, *afd);
		return EINVAL; /* 0: the engine let go of the listener */
	}
	return 0;
}

/*
 * Under s->mu: takes from s's accept queue the connection whose end A is
 * the open file afd; the ones queued before it were taken by another
 * process holding the listener (their records came first): they are that
 * process's now, so this one drops its copies.
 */
static rn_sock *take_queued(rn_sock *s, int afd)
{
	struct stat sb;
	rn_sock *ns;

	if (fstat(afd, &sb) < 0)
		return NULL;
	for (ns = s->accq_head; ns && !(ns->ino == sb.st_ino && ns->dev == sb.st_dev); ns = ns->acc_next)
		;
	if (!ns)
		return NULL;
	while (s->accq_head != ns) {
		rn_sock *gone = s->accq_head;

		s->accq_head = gone->acc_next;
		s->accq_len--;
		gone->acc_next = NULL;
		__atomic_store_n(&gone->queued, 0, __ATOMIC_RELAXED);
		rn_fd_disown(gone->user_fd);
		syscall(SYS_close, gone->user_fd); /* the other process holds its own copy */
		rn_sock_unref(gone);
	}
	s->accq_head = ns->acc_next;
	if (!s->accq_head)
		s->accq_tail = NULL;
	s->accq_len--;
	ns->acc_next = NULL;
	__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
	return ns;
}

int rn_api_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int err, nfd, afd, nonblock;
	rn_sock *s = lookup(fd, &err), *ns;
	rn_accept_rec rec;

	if (!s)
		return fail(err);
	if (s->kind != RN_SK_LISTEN) {
		rn_sock_unref(s);
		return fail(EINVAL);
	}
	/*
	 * The record is read and its connection taken from the queue under the
	 * listener's mutex, which the engine holds while it counts the records
	 * still unread (prune_taken): else it could take a record being read
	 * here for one a prefork worker took, and let go of the connection.
	 * The wait itself is outside the mutex (the engine queues under it).
	 */
	nonblock = fcntl(fd, F_GETFL); /* the listener's own mode (flags are the new socket's) */
	nonblock = nonblock >= 0 && (nonblock & O_NONBLOCK);
	for (;;) {
		char peek;
		ssize_t n;

		pthread_mutex_lock(&s->mu);
		err = read_accept_rec(fd, &rec, &afd, MSG_DONTWAIT);
		if (!err && rec.tag == 'e') {
			/* a connection the engine could not take (budget, descriptors, memory) */
			s->acc_err = 0;
			err = rec.err ? rec.err : EMFILE;
		}
		ns = err ? NULL : take_queued(s, afd);
		pthread_mutex_unlock(&s->mu);
		if (err != EAGAIN || nonblock)
			break;
		/* wait for a record without taking it (restarted under SA_RESTART as accept is) */
		n = syscall(SYS_recvfrom, fd, &peek, 1, MSG_PEEK, NULL, NULL);
		if (n <= 0) {
			err = n < 0 ? errno : EINVAL; /* 0: the engine let go of the listener */
			break;
		}
	}
	if (err) {
		rn_sock_unref(s);
		return fail(err);
	}
	rn_sock_unref(s);
	if (!ns) {
		/*
		 * The engine let go of it meanwhile (it saw the record read:
		 * prune_taken in rn_stream.c): a connection it still serves,
		 * through the descriptor only, as in a process that inherited it.
		 */
		if (!(flags & SOCK_CLOEXEC))
			fcntl(afd, F_SETFD, 0);
		if (flags & SOCK_NONBLOCK)
			fcntl(afd, F_SETFL, O_NONBLOCK);
		put_addr(&rec.peer, addr, len);
		return afd;
	}
	syscall(SYS_close, afd); /* ours is the copy the engine kept */
	nfd = ns->user_fd;
	rn_fd_disown(nfd);
	if (!(flags & SOCK_CLOEXEC))
		fcntl(nfd, F_SETFD, 0);
	if (flags & SOCK_NONBLOCK)
		fcntl(nfd, F_SETFL, O_NONBLOCK);
	if (tab_install(nfd, ns)) { /* the accept queue's reference moves to the table */
		close(nfd);
		rn_sock_unref(ns);
		return fail(ENOMEM);
	}
	pthread_mutex_lock(&ns->mu);
	put_addr(&ns->peer, addr, len);
	pthread_mutex_unlock(&ns->mu);
	return nfd;
}

int rn_api_accept_inherited(int fd, struct sockaddr_in *peer, int flags)
{
	rn_accept_rec rec;
	int afd, err = read_accept_rec(fd, &rec, &afd, 0);

	if (!err && rec.tag == 'e')
		err = rec.err ? rec.err : EMFILE; /* the listening process's engine refused one */
	if (err)
		return fail(err);
	if (!(flags & SOCK_CLOEXEC))
		fcntl(afd, F_SETFD, 0);
	if (flags & SOCK_NONBLOCK)
		fcntl(afd, F_SETFL, O_NONBLOCK);
	*peer = rec.peer;
	return afd;
}

int ri2n_accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return rn_api_accept(fd, addr, len, 0);
}

/* Waits for a blocking connect: writability means the handshake ended. */
static int wait_connected(rn_sock *s, int fd)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int kind, err;

		pthread_mutex_lock(&s->mu);
		kind = s->kind;
		err = s->so_error;
		if (kind == RN_SK_DEAD)
			s->so_error = 0;
		pthread_mutex_unlock(&s->mu);
		if (kind == RN_SK_CONNECTED)
			return 0;
		if (kind == RN_SK_DEAD)
			return err ? err : ECONNREFUSED;
		if (poll(&p, 1, -1) < 0 && errno == EINTR)
			return EINTR; /* the connect goes on, as with TCP */
		if (p.revents & (POLLOUT | POLLHUP | POLLERR)) {
			/* the engine updates the state before it wakes us; look again */
			pthread_mutex_lock(&s->mu);
			while (s->kind == RN_SK_CONNECTING)
				pthread_cond_wait(&s->cv, &s->mu);
			pthread_mutex_unlock(&s->mu);
		}
	}
}

int ri2n_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in a;
	int err = check_sin(addr, len), rc;
	rn_sock *s;

	if (err)
		return fail(err);
	s = lookup(fd, &err);
	if (!s)
		return fail(err);
	memcpy(&a, addr, sizeof(a));
	rc = rn_engine_call(RN_CMD_CONNECT, s, &a);
	if (rc) {
		rn_sock_unref(s);
		return fail(-rc);
	}
	if (fcntl(fd, F_GETFL) & O_NONBLOCK) {
		rn_sock_unref(s);
		return fail(EINPROGRESS);
	}
	err = wait_connected(s, fd);
	rn_sock_unref(s);
	return err ? fail(err) : 0;
}

/* Under g_tab.mu: whether no other number of the table holds s. */
static int last_number(const rn_sock *s)
{
	for (int o = 0; o < g_tab.cap; o++)
		if (g_tab.tab[o] == s)
			return 0;
	return 1;
}

int ri2n_close(int fd)
{
	rn_sock *s = NULL;

	pthread_mutex_lock(&g_tab.mu);
	if (fd >= 0 && fd < g_tab.cap && g_tab.tab[fd]) {
		s = g_tab.tab[fd];
		/* drop the entry even if stale (the number is something else now) */
		g_tab.tab[fd] = NULL;
		if (!last_number(s)) {
			rn_sock_unref(s);
			s = NULL;
		}
	}
	pthread_mutex_unlock(&g_tab.mu);
	if (s) { /* threads blocked in a fast call on it return EBADF */
		rn_inline_closed(s);
		rn_sock_unref(s);
	}
	/* the engine sees its end close and winds the connection down */
	return close(fd);
}

static int name_of(int fd, struct sockaddr *addr, socklen_t *len, int peer)
{
	int err;
	rn_sock *s = lookup(fd, &err);

	if (!s)
		return fail(err);
	if (!addr || !len) {
		rn_sock_unref(s);
		return fail(EINVAL);
	}
	pthread_mutex_lock(&s->mu);
	if (peer && s->kind != RN_SK_CONNECTED && s->kind != RN_SK_CONNECTING) {
		pthread_mutex_unlock(&s->mu);
		rn_sock_unref(s);
		return fail(ENOTCONN);
	}
	put_addr(peer ? &s->peer : &s->local, addr, len);
	if (!peer && s->local.sin_family == 0) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		put_addr(&any, addr, len);
	}
	pthread_mutex_unlock(&s->mu);
	rn_sock_unref(s);
	return 0;
}

int ri2n_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return name_of(fd, addr, len, 0);
}

int ri2n_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return name_of(fd, addr, len, 1);
}

static int get_int(const void *val, socklen_t len, int64_t *v)
{
	if (!val || len < (socklen_t)sizeof(int))
		return EINVAL;
	*v = *(const int *)val;
	return 0;
}

/* RI2N_KEY: 32 bytes set the socket's key, 0 bytes remove it.  Under s->mu. */
static int set_key(rn_sock *s, const void *val, socklen_t len)
{
	rn_config next = s->cfg;

	if (s->kind != RN_SK_NEW)
		return EISCONN;
	if (len == 0) {
		next.keyed = 0;
	} else if (!val || len != RN_KEY_LEN) {
		return EINVAL;
	} else {
		next.keyed = 1;
		memcpy(next.key, val, RN_KEY_LEN);
	}
	if (!next.keyed)
		sodium_memzero(next.key, sizeof(next.key));
	if (rn_config_check(&next, NULL)) {
		sodium_memzero(next.key, sizeof(next.key));
		return EINVAL; /* e.g. rails too small for the tag */
	}
	s->cfg = next;
	sodium_memzero(next.key, sizeof(next.key));
	return 0;
}

/*
 * SO_LINGER: {0, *} a graceful close (the default); {1, 0} an abortive one,
 * the peer gets a RESET (rn_stream.c, user_closed); {1, N > 0} would make
 * close() block until the bytes are delivered, which ri2n's close cannot
 * (they go in the background): EOPNOTSUPP rather than a silent difference.
 */
static int set_linger(rn_sock *s, const void *val, socklen_t len)
{
	struct linger l;

	if (!val || len < (socklen_t)sizeof(l))
		return EINVAL;
	memcpy(&l, val, sizeof(l));
	if (l.l_onoff && l.l_linger > 0)
		return EOPNOTSUPP;
	__atomic_store_n(&s->abort_close, l.l_onoff != 0, __ATOMIC_RELAXED);
	return 0;
}

/*
 * TCP_USER_TIMEOUT (ms; 0: the default) is ri2n's dead-peer timeout
 * (RI2N_DEAD_PEER_MS), fixed when the connection is set up: EISCONN after,
 * unless it is the value the connection has (an accepted socket inherits the
 * listener's).  Under s->mu.
 */
static int set_user_timeout(rn_sock *s, const void *val, socklen_t len)
{
	int64_t v, cur = 0;
	int err = get_int(val, len, &v);

	if (err)
		return err;
	if (v < 0)
		return EINVAL;
	if (v == 0)
		v = rn_engine_config()->dead_peer_ns / 1000000;
	if (v < 3)
		v = 3; /* ri2n's least */
	rn_knob_get(&s->cfg, RI2N_DEAD_PEER_MS, &cur);
	if (v == cur)
		return 0;
	if (s->kind != RN_SK_NEW)
		return EISCONN;
	return -rn_knob_set(&s->cfg, RI2N_DEAD_PEER_MS, v);
}

int ri2n_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int err, rc = 0;
	rn_sock *s = lookup(fd, &err);
	int64_t v;

	if (!s)
		return fail(err);
	if (level == RI2N_SOL && name == RI2N_KEY) {
		pthread_mutex_lock(&s->mu);
		err = set_key(s, val, len);
		pthread_mutex_unlock(&s->mu);
	} else if (level == RI2N_SOL && name == RI2N_BUSY_POLL_US) {
		/* the waiting side's choice, not the protocol's: also once connected */
		err = get_int(val, len, &v);
		if (!err && (v < RN_BUSY_AUTO || v > RN_BUSY_POLL_MAX_US))
			err = EINVAL;
		if (!err)
			__atomic_store_n(&s->busy_us, (int)v, __ATOMIC_RELAXED);
	} else if (level == RI2N_SOL) {
		err = get_int(val, len, &v);
		pthread_mutex_lock(&s->mu);
		if (!err && s->kind != RN_SK_NEW)
			err = EISCONN; /* the connection was set up with the old value */
		if (!err && name == RI2N_MTU && v - 28 > (int64_t)rn_engine_config()->max_dgram) {
			/*
			 * The process's sockets and buffers are sized for its rails' MTU:
			 * a larger datagram could be neither written nor received.
			 */
			rn_warn("RI2N_MTU %lld refused: above this process's %u (the rails' MTU, or "
				"RI2N_MTU in the environment)", (long long)v,
				rn_engine_config()->max_dgram + 28);
			err = EINVAL;
		}
		if (!err) {
			rc = rn_knob_set(&s->cfg, name, v);
			err = rc ? -rc : 0;
		}
		pthread_mutex_unlock(&s->mu);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		err = set_linger(s, val, len);
	} else if (level == IPPROTO_TCP && name == TCP_USER_TIMEOUT) {
		pthread_mutex_lock(&s->mu);
		err = set_user_timeout(s, val, len);
		pthread_mutex_unlock(&s->mu);
	} else if ((level == SOL_SOCKET && (name == SO_KEEPALIVE || name == SO_REUSEADDR ||
					    name == SO_REUSEPORT)) ||
		   (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_QUICKACK))) {
		err = val ? 0 : EINVAL; /* ri2n keeps rails alive and never delays writes */
	} else if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE)) {
		/* a bigger send buffer must still be full until connected */
		rn_sock_unref(s);
		return rn_api_set_sndbuf(fd, name, val, len);
	} else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_RCVLOWAT ||
					   name == SO_SNDTIMEO || name == SO_RCVTIMEO)) {
		err = setsockopt(fd, level, name, val, len) < 0 ? errno : 0; /* the user's end */
	} else {
		err = ENOPROTOOPT;
	}
	rn_sock_unref(s);
	return err ? fail(err) : 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < (socklen_t)sizeof(int))
		return EINVAL;
	*(int *)val = v;
	*len = sizeof(int);
	return 0;
}

int ri2n_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	int err;
	rn_sock *s = lookup(fd, &err);
	int64_t v;

	if (!s)
		return fail(err);
	if (level == SOL_SOCKET && name == SO_ERROR) {
		pthread_mutex_lock(&s->mu);
		err = put_int(val, len, s->so_error);
		if (!err)
			s->so_error = 0; /* reported once, as the kernel does */
		pthread_mutex_unlock(&s->mu);
	} else if (level == SOL_SOCKET && name == SO_TYPE) {
		err = put_int(val, len, SOCK_STREAM);
	} else if (level == IPPROTO_TCP && name == TCP_NODELAY) {
		err = put_int(val, len, 1);
	} else if (level == IPPROTO_TCP && name == TCP_USER_TIMEOUT) {
		pthread_mutex_lock(&s->mu);
		err = rn_knob_get(&s->cfg, RI2N_DEAD_PEER_MS, &v);
		pthread_mutex_unlock(&s->mu);
		err = err ? -err : put_int(val, len, (int)v);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		struct linger l = { __atomic_load_n(&s->abort_close, __ATOMIC_RELAXED), 0 };

		err = 0;
		if (!val || !len || *len < (socklen_t)sizeof(l)) {
			err = EINVAL;
		} else {
			memcpy(val, &l, sizeof(l));
			*len = sizeof(l);
		}
	} else if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_RCVBUF)) {
		err = getsockopt(fd, level, name, val, len) < 0 ? errno : 0;
	} else if (level == RI2N_SOL && name == RI2N_KEY) {
		pthread_mutex_lock(&s->mu);
		err = put_int(val, len, s->cfg.keyed);
		pthread_mutex_unlock(&s->mu);
	} else if (level == RI2N_SOL && name == RI2N_BUSY_POLL_US) {
		err = put_int(val, len, __atomic_load_n(&s->busy_us, __ATOMIC_RELAXED));
	} else if (level == RI2N_SOL) {
		pthread_mutex_lock(&s->mu);
		err = rn_knob_get(&s->cfg, name, &v);
		pthread_mutex_unlock(&s->mu);
		err = err ? -err : put_int(val, len, (int)v);
	} else {
		err = ENOPROTOOPT;
	}
	rn_sock_unref(s);
	return err ? fail(err) : 0;
}

static void rail_stats(struct ri2n_rail_stats *o, const rn_rail_stats *r)
{
	memset(o, 0, sizeof(*o));
	o->local = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(r->local.port),
					 .sin_addr.s_addr = htonl(r->local.ip) };
	o->remote = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_port = htons(r->remote.port),
					  .sin_addr.s_addr = htonl(r->remote.ip) };
	o->rx_up = r->rx_up;
	o->tx_up = r->tx_up;
	o->up = r->rx_up && r->tx_up;
	o->last_change_ns = r->last_change_ns;
	o->last_cause = rn_cause_name(r->last_cause);
	o->down_events = r->down_events;
	o->up_events = r->up_events;
	o->tx_packets = r->tx_packets;
	o->tx_bytes = r->tx_bytes;
	o->rx_packets = r->rx_packets;
	o->rx_bytes = r->rx_bytes;
	o->tx_data = r->tx_data;
	o->rx_data = r->rx_data;
	o->retransmits = r->retransmits;
	o->lost = r->lost;
	o->heartbeats = r->heartbeats;
	o->keepalives = r->keepalives;
	o->cwnd = r->cwnd;
	o->inflight = r->inflight;
	o->srtt_ns = r->srtt_ns;
	o->dgram = r->dgram;
	o->mtu_holes = r->mtu_holes;
	o->small_ok = r->small_ok;
}

static int errno_of(int err)
{
	switch (err) {
	case 0: return 0;
	case RN_ERR_TIMEDOUT: return ETIMEDOUT;
	case RN_ERR_REFUSED: return ECONNREFUSED;
	case RN_ERR_ABORTED: return ECONNABORTED;
	case RN_ERR_UNREACH: return ENETUNREACH;
	case RN_ERR_NOSPACE: return ENOMEM;
	default: return ECONNRESET;
	}
}

int ri2n_stats(int fd, struct ri2n_stats *out)
{
	int err, rc;
	rn_sock *s = lookup(fd, &err);
	rn_conn_stats cs;

	if (!s)
		return fail(err);
	if (!out) {
		rn_sock_unref(s);
		return fail(EINVAL);
	}
	rc = rn_engine_call(RN_CMD_STATS, s, &cs);
	rn_sock_unref(s);
	if (rc)
		return fail(-rc);
	memset(out, 0, sizeof(*out));
	out->state = rn_state_name(cs.state);
	out->error = errno_of(cs.err);
	out->established_ns = cs.established_ns;
	out->app_tx_bytes = cs.app_tx_bytes;
	out->app_rx_bytes = cs.app_rx_bytes;
	out->tx_packets = cs.tx_packets;
	out->rx_packets = cs.rx_packets;
	out->retransmits = cs.retransmits;
	out->rto_events = cs.rto_events;
	out->dup_data = cs.dup_data;
	out->drops_malformed = cs.drops[RN_DROP_MALFORMED];
	out->drops_source = cs.drops[RN_DROP_SOURCE];
	out->drops_window = cs.drops[RN_DROP_WINDOW];
	out->drops_duplicate = cs.drops[RN_DROP_DUPLICATE];
	for (int d = 0; d < RN_DROP__COUNT; d++)
		if (d != RN_DROP_MALFORMED && d != RN_DROP_SOURCE && d != RN_DROP_WINDOW &&
		    d != RN_DROP_DUPLICATE)
			out->drops_other += cs.drops[d];
	out->mss = cs.mss;
	out->nrails = cs.npaths;
	for (int k = 0; k < cs.npaths && k < RI2N_MAX_RAILS; k++)
		rail_stats(&out->rail[k], &cs.rail[k]);
	return 0;
}

/* ---- the fast path: the calling thread drives its connection (rn_inline.c) ---- */

/* A socket never connected (new, bound or listening): TCP's EPIPE / ENOTCONN. */
static int unconnected(rn_sock *s)
{
	int kind;

	pthread_mutex_lock(&s->mu);
	kind = s->kind;
	pthread_mutex_unlock(&s->mu);
	return kind == RN_SK_NEW || kind == RN_SK_LISTEN;
}

ssize_t rn_api_send(int fd, const struct iovec *iov, int iovcnt, int flags, int *handled)
{
	int err;
	rn_sock *s = lookup(fd, &err);
	ssize_t rc;

	*handled = s != NULL;
	if (!s)
		return fail(err);
	if (unconnected(s)) { /* TCP's answer: nothing to send on */
		rn_sock_unref(s);
		if (!(flags & MSG_NOSIGNAL))
			raise(SIGPIPE);
		return fail(EPIPE);
	}
	rc = rn_inline_send(s, fd, iov, iovcnt, flags);
	if (rc == RN_INLINE_PLAIN)
		__atomic_store_n(&s->plain_writes, 1, __ATOMIC_RELAXED);
	rn_sock_unref(s);
	if (rc == RN_INLINE_PLAIN) {
		/* the descriptor's own send: raw, past any interposer */
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

		return syscall(SYS_sendmsg, fd, &m, flags);
	}
	if (rc < 0)
		return fail((int)-rc);
	return rc;
}

ssize_t rn_api_recv(int fd, const struct iovec *iov, int iovcnt, int flags, int *handled)
{
	int err;
	rn_sock *s = lookup(fd, &err);
	ssize_t rc;

	*handled = s != NULL;
	if (!s)
		return fail(err);
	if (unconnected(s)) {
		rn_sock_unref(s);
		return fail(ENOTCONN);
	}
	rc = rn_inline_recv(s, fd, iov, iovcnt, flags);
	if (rc == RN_INLINE_PLAIN) {
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

		rc = syscall(SYS_recvmsg, fd, &m, flags);
		if (rc < 0 && errno == ECONNRESET) {
			/* the descriptor can only say "reset": say why it died (ETIMEDOUT, ...) */
			pthread_mutex_lock(&s->mu);
			err = s->dead_error;
			pthread_mutex_unlock(&s->mu);
			errno = err ? err : ECONNRESET;
		}
		rn_sock_unref(s);
		return rc;
	}
	rn_sock_unref(s);
	if (rc < 0)
		return fail((int)-rc);
	return rc;
}

int rn_api_rails(int fd, rn_railref *out, int max)
{
	int err, n;
	rn_sock *s = lookup(fd, &err);

	if (!s)
		return 0;
	n = rn_inline_rails(s, out, max);
	rn_sock_unref(s);
	return n;
}

int rn_api_epoll_note(int fd, int known, uint64_t ep_id, uint32_t events, uint64_t data,
		      rn_railref *out, int max)
{
	int err, n = 0;
	rn_sock *s = known ? lookup_known(fd) : lookup(fd, &err);

	if (!s)
		return 0;
	rn_inline_epoll_note(s, ep_id, events, data);
	if (out && max > 0)
		n = rn_inline_rails(s, out, max);
	rn_sock_unref(s);
	return n;
}

ssize_t ri2n_send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	int handled;

	return rn_api_send(fd, &iov, 1, flags, &handled);
}

ssize_t ri2n_recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	int handled;

	return rn_api_recv(fd, &iov, 1, flags, &handled);
}

ssize_t ri2n_writev(int fd, const struct iovec *iov, int iovcnt)
{
	int handled;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return fail(EINVAL);
	return rn_api_send(fd, iov, iovcnt, 0, &handled);
}

ssize_t ri2n_readv(int fd, const struct iovec *iov, int iovcnt)
{
	int handled;

	if (iovcnt < 0 || iovcnt > IOV_MAX)
		return fail(EINVAL);
	return rn_api_recv(fd, iov, iovcnt, 0, &handled);
}

int ri2n_event_fd(void)
{
	return rn_events_fd();
}

int ri2n_read_event(struct ri2n_event *ev)
{
	if (!ev) {
		errno = EINVAL;
		return -1;
	}
	return rn_events_read(ev);
}

/* ---- descriptor numbers, for the LD_PRELOAD shim (src/shim) ---- */

#include <sys/syscall.h>

/*
 * The shim turns a program's TCP socket into a ri2n socket at connect() or
 * listen() time, on the number the program already holds, and follows the
 * program's dup()s and close()s.  These calls keep the table above in step.
 * They use the raw system calls for dup3/close, so that an interposed dup3
 * or close (the shim's own) never sees them.
 */
int rn_api_move(int fd, int to, int flags)
{
	int err, kind, rc;
	rn_sock *s;

	if (to < 0 || to == fd || (flags & ~O_CLOEXEC))
		return fail(EINVAL);
	s = lookup(fd, &err);
	if (!s)
		return fail(err);
	pthread_mutex_lock(&s->mu);
	kind = s->kind;
	pthread_mutex_unlock(&s->mu);
	if (kind != RN_SK_NEW && kind != RN_SK_LISTEN) {
		/* a connection is named by its number in the engine's events */
		rn_sock_unref(s);
		return fail(EINVAL);
	}
	if (syscall(SYS_dup3, fd, to, flags) < 0) {
		err = errno;
		rn_sock_unref(s);
		return fail(err);
	}
	rc = tab_install(to, s); /* our reference moves to the table */
	if (rc) {
		syscall(SYS_close, to);
		rn_sock_unref(s);
		return fail(-rc);
	}
	/* the engine reads it unlocked; it has no connection to name yet */
	__atomic_store_n(&s->user_fd, to, __ATOMIC_RELAXED);
	rn_api_forget(fd);
	syscall(SYS_close, fd);
	return to;
}

int rn_api_dup(int fd, int dup)
{
	struct stat sb;
	int err, rc;
	rn_sock *s = lookup(fd, &err);

	if (!s)
		return fail(err);
	if (fstat(dup, &sb) < 0 || sb.st_ino != s->ino || sb.st_dev != s->dev) {
		rn_sock_unref(s);
		return fail(EINVAL);
	}
	rc = tab_install(dup, s); /* the lookup's reference moves to the table */
	if (rc) {
		rn_sock_unref(s);
		return fail(-rc);
	}
	return 0;
}

void rn_api_forget(int fd)
{
	rn_sock *s = NULL;

	pthread_mutex_lock(&g_tab.mu);
	if (fd >= 0 && fd < g_tab.cap && g_tab.tab[fd]) {
		s = g_tab.tab[fd];
		g_tab.tab[fd] = NULL;
		/*
		 * The engine resets the user's end through s->user_fd (see
		 * close_with_reset in rn_stream.c): if that was this number, point
		 * it at another number still holding the same socket, if any.
		 */
		if (__atomic_load_n(&s->user_fd, __ATOMIC_RELAXED) == fd) {
			for (int o = 0; o < g_tab.cap; o++) {
				struct stat sb;

				if (g_tab.tab[o] == s && fstat(o, &sb) == 0 && sb.st_ino == s->ino &&
				    sb.st_dev == s->dev) {
					__atomic_store_n(&s->user_fd, o, __ATOMIC_RELAXED);
					break;
				}
			}
		}
	}
	if (s && !last_number(s)) {
		pthread_mutex_unlock(&g_tab.mu);
		rn_sock_unref(s);
		return;
	}
	pthread_mutex_unlock(&g_tab.mu);
	if (s) {
		rn_inline_closed(s); /* its last number: closed under any thread blocked on it */
		rn_sock_unref(s);
	}
}

void rn_api_forget_closed(int fd, dev_t dev, ino_t ino)
{
	int same;

	pthread_mutex_lock(&g_tab.mu);
	same = fd >= 0 && fd < g_tab.cap && g_tab.tab[fd] && g_tab.tab[fd]->ino == ino &&
	       g_tab.tab[fd]->dev == dev;
	pthread_mutex_unlock(&g_tab.mu);
	/* nothing else names that number meanwhile: its close left it to us (the shim) */
	if (same)
		rn_api_forget(fd);
}

int rn_api_rail_match(in_addr_t ip, int exact)
{
	const rn_rail_info *rails;
	uint32_t h = ntohl(ip);
	int n, rc = rn_engine_start();

	if (rc)
		return rc;
	n = rn_engine_rails(&rails);
	if (h == INADDR_ANY)
		return n > 0;
	for (int i = 0; i < n; i++) {
		uint32_t mask = rails[i].prefix ? ~0u << (32 - rails[i].prefix) : 0;

		if (exact ? rails[i].ip == h : (rails[i].ip & mask) == (h & mask))
			return 1;
	}
	return 0;
}

int rn_api_set_sndbuf(int fd, int name, const void *val, socklen_t len)
{
	int err, kind;
	rn_sock *s;

	if (name != SO_SNDBUF && name != SO_SNDBUFFORCE)
		return fail(EINVAL);
	s = lookup(fd, &err);
	if (!s)
		return fail(err);
	/* the raw call: an interposed setsockopt (the shim's) may be what called us */
	if (syscall(SYS_setsockopt, fd, SOL_SOCKET, name, val, len) < 0) {
		err = errno;
		rn_sock_unref(s);
		return fail(err);
	}
	/*
	 * A larger buffer would make A writable before the handshake ends: fill
	 * it up too.  The engine takes s->junk at connect or listen, under the
	 * same mutex.
	 */
	pthread_mutex_lock(&s->mu);
	kind = s->kind;
	if (kind == RN_SK_NEW)
		s->junk += fill_junk(fd);
	pthread_mutex_unlock(&s->mu);
	rn_sock_unref(s);
	return 0;
}
