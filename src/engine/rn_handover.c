/*
 * rn_handover.c - a prefork worker takes over the connections it accepts,
 * a forked child the one its parent accepted (rn_handover.h says why and
 * how): the owner's request socket and its
 * answers, the ids of the connections a port handed over, and the taker's
 * side (the request, then the connection made again on its own rails).
 *
 * The owner listens on an abstract AF_UNIX datagram socket named after its
 * pid.  A request names a connection by listening port and id and carries
 * the asker's copy of the connection's descriptor (SCM_RIGHTS): holding it
 * is the proof (as it is for reading and writing the connection at all),
 * which the owner checks against the socketpair end A it made.  The answer
 * carries the exported connection and, as SCM_RIGHTS, the owner's end B of
 * the socketpair.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "rn_ev.h"
#include "rn_events.h"
#include "rn_handover.h"
#include "rn_inline.h"
#include "rn_inline_int.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_stream.h"
#include "rn_stream_int.h"
#include "rn_sys.h"

#define TAKE_MAGIC 0x726e7431u        /* "rnt1" */
#define MOVED_MAX 4096u               /* handed-over ids a port remembers... */
#define MOVED_NS UINT64_C(3000000000) /* ...for this long at most */
#define TAKE_WAIT_MS 2000             /* the owner's answer: its engine answers in microseconds */

typedef struct take_req {
	uint32_t magic;
	uint32_t blob_size;   /* rn_conn_move_size(): the same build */
	uint64_t id;
	uint16_t port;
	uint8_t nrails;
	rn_rail_addr rails[RN_MAX_RAILS]; /* the taker's, in its port's order */
} take_req;

typedef struct take_rep {
	uint32_t magic;
	int32_t err;          /* 0: the connection follows, B attached; else an errno */
	uint64_t id;
} take_rep;

/* The taker's state between its two engine commands. */
typedef struct take_ctx {
	const rn_take_from *from;
	rn_port *port;        /* referenced by the first command, given to the stream by the second */
	rn_rail_addr rails[RN_MAX_RAILS];
	int nrails;
	uint8_t *blob;
	size_t blob_len;
} take_ctx;

static int g_ctl = -1;              /* the owner's request socket (engine) */
static struct event *g_ctl_ev;
static pthread_mutex_t g_ask_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_ask = -1;              /* the taker's answer socket (g_ask_mu) */
static uint64_t g_taken, g_kept;    /* (atomic) counted for the log */
static unsigned long g_took;        /* (atomic) taken over here */

unsigned long rn_handover_took(void)
{
	return __atomic_load_n(&g_took, __ATOMIC_RELAXED);
}

/*
 * The taker's measure of its connections' lives: a running mean (an eighth
 * weight) of how long those it took lived, and the accepts since it last
 * took one while they were short.
 */
#define RN_TAKE_SHORT_NS UINT64_C(20000000) /* 20 ms: a few requests at most */
#define RN_TAKE_SAMPLE 32u
static uint64_t g_life_ns;         /* (atomic) 0: none ended yet */
static unsigned g_skipped;         /* (atomic) */

int rn_handover_want(void)
{
	uint64_t life = __atomic_load_n(&g_life_ns, __ATOMIC_RELAXED);

	if (!life || life >= RN_TAKE_SHORT_NS)
		return 1;
	return __atomic_add_fetch(&g_skipped, 1, __ATOMIC_RELAXED) % RN_TAKE_SAMPLE == 0;
}

void rn_handover_ended(uint64_t life_ns)
{
	uint64_t m = __atomic_load_n(&g_life_ns, __ATOMIC_RELAXED);

	m = m ? m - m / 8 + life_ns / 8 : life_ns;
	__atomic_store_n(&g_life_ns, m ? m : 1, __ATOMIC_RELAXED);
}

static socklen_t ctl_name(struct sockaddr_un *a, pid_t pid)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ri2n-take %d", (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Room for one descriptor in a message's ancillary data. */
typedef union fd_room {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
} fd_room;

/* m (its control buffer r) carries descriptor fd (SCM_RIGHTS). */
static void put_fd(struct msghdr *m, fd_room *r, int fd)
{
	struct cmsghdr *c;

	memset(r, 0, sizeof(*r));
	m->msg_control = r->buf;
	m->msg_controllen = sizeof(r->buf);
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

/* The descriptor a received message carried, or -1. */
static int got_fd(struct msghdr *m)
{
	int fd = -1;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* ---- the ids a port handed over ---- */

void rn_handover_moved(rn_port *p, uint64_t id, uint64_t now)
{
	rn_moved *m = p->moved;

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m || rn_htab_init(&m->tab, 64) || !(m->ring = calloc(MOVED_MAX, sizeof(*m->ring)))) {
			if (m)
				rn_htab_free(&m->tab);
			free(m);
			return; /* its late datagrams are answered with a reset: the taker's peer resends there */
		}
		p->moved = m;
	}
	if (m->len == MOVED_MAX) { /* the oldest goes */
		rn_htab_del(&m->tab, m->ring[m->head].id, p);
		m->head = (m->head + 1) % MOVED_MAX;
		m->len--;
	}
	if (rn_htab_add(&m->tab, id, p) == 0) {
		m->ring[(m->head + m->len) % MOVED_MAX] = (struct rn_moved_ent){ id, now };
		m->len++;
	}
}

int rn_handover_is_moved(rn_port *p, uint64_t id, uint64_t now)
{
	rn_moved *m = p->moved;

	if (!m || !id)
		return 0;
	while (m->len && now - m->ring[m->head].at > MOVED_NS) {
		rn_htab_del(&m->tab, m->ring[m->head].id, p);
		m->head = (m->head + 1) % MOVED_MAX;
		m->len--;
	}
	if (!rn_htab_get(&m->tab, id))
		return 0;
	m->dropped++;
	return 1;
}

void rn_handover_free(rn_port *p)
{
	if (!p->moved)
		return;
	rn_htab_free(&p->moved->tab);
	free(p->moved->ring);
	free(p->moved);
	p->moved = NULL;
}

/* ---- the owner ---- */

void rn_handover_fill(rn_take_from *f, const rn_sock *ns)
{
	if (g_ctl < 0 || !ns->take_port)
		return; /* owner 0: whoever holds it is served through the descriptor */
	f->owner = rn_pid();
	f->port = ns->take_port;
	f->mask = ns->take_mask;
	f->id = ns->take_id;
	f->peer = ns->peer;
}

static void answer(const struct sockaddr_un *to, socklen_t tolen, uint64_t id, int err,
		   const void *blob, size_t len, int bfd)
{
	take_rep rep = { .magic = TAKE_MAGIC, .err = err, .id = id };
	struct iovec iov[2] = { { &rep, sizeof(rep) }, { (void *)blob, len } };
	fd_room r;
	struct msghdr m = { .msg_name = (void *)to, .msg_namelen = tolen, .msg_iov = iov,
			    .msg_iovlen = err ? 1 : 2 };

	if (!err)
		put_fd(&m, &r, bfd);
	if (rn_sys_sendmsg(g_ctl, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		rn_debug("handover answer not sent: %s", strerror(errno));
}

/* Whether the taker's rails are ours (same addresses, same order): else it could not go on. */
static int same_rails(const rn_port *p, const take_req *q)
{
	if (q->nrails != p->nsock)
		return 0;
	for (int i = 0; i < p->nsock; i++) {
		rn_addr a = rn_addr_of_rail(&p->addrs[i]), b = rn_addr_of_rail(&q->rails[i]);

		if (!rn_addr_same_host(&a, &b))
			return 0;
	}
	return 1;
}

/*
 * Host lock: one request, with the asker's copy of the descriptor (afd,
 * checked against st's end A, then closed); answered either way, so the
 * taker never waits out its bound.
 */
static void take_one(const take_req *q, int afd, const struct sockaddr_un *from, socklen_t fromlen)
{
	rn_port *p = q->port ? rn_port_find_number(q->port) : NULL;
	rn_stream *st = p ? rn_htab_get(&p->tab, q->id) : NULL;
	uint64_t now = rn_core_time(rn_now_ns());
	size_t cap = rn_conn_move_size();
	struct stat sb;
	uint8_t *blob;
	ssize_t n;
	int held = afd >= 0 && rn_sys_fstat(afd, &sb) == 0;

	if (afd >= 0)
		rn_sys_close(afd);
	if (!st || !st->server || st->fd < 0 || !held || sb.st_dev != st->sock->dev ||
	    sb.st_ino != st->sock->ino || q->blob_size != cap || !same_rails(p, q)) {
		answer(from, fromlen, q->id, EINVAL, NULL, 0, -1);
		return;
	}
	/* a forked child asks while its parent still holds it: later (TCP's sharing, until then) */
	if (__atomic_load_n(&st->sock->in_app, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&st->sock->closed, __ATOMIC_ACQUIRE)) {
		answer(from, fromlen, q->id, EBUSY, NULL, 0, -1);
		return;
	}
	/* what arrived for it goes into the descriptor first: the taker reads it there */
	rn_conn_cookie_ack_now(st->conn);
	rn_stream_service(st, now);
	st = rn_htab_get(&p->tab, q->id); /* the service may have ended it */
	blob = malloc(cap);
	if (!st || !blob || st->fd < 0 || st->user_eof || st->fin_queued || st->eof_sent || st->held ||
	    (n = rn_conn_export(st->conn, blob, cap)) < 0) {
		__atomic_add_fetch(&g_kept, 1, __ATOMIC_RELAXED);
		answer(from, fromlen, q->id, blob ? EAGAIN : ENOMEM, NULL, 0, -1);
		free(blob);
		return;
	}
	answer(from, fromlen, q->id, 0, blob, (size_t)n, st->fd);
	sodium_memzero(blob, cap);
	free(blob);
	/*
	 * Sent or not, it is the taker's now: an answer lost on the way leaves
	 * the connection to die with its descriptor, never two processes
	 * driving one sequence space.
	 */
	rn_info("connection from %s handed over (id %llx)", st->name, (unsigned long long)st->id);
	__atomic_add_fetch(&g_taken, 1, __ATOMIC_RELAXED);
	rn_stream_moved(st, now);
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	for (int i = 0; i < 64; i++) {
		take_req q;
		struct sockaddr_un from;
		struct iovec iov = { &q, sizeof(q) };
		fd_room r;
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				    .msg_iovlen = 1, .msg_control = r.buf, .msg_controllen = sizeof(r.buf) };
		ssize_t n = rn_sys_recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int afd;

		if (n < 0)
			return;
		afd = got_fd(&m);
		if (n != (ssize_t)sizeof(q) || q.magic != TAKE_MAGIC || m.msg_namelen <= sizeof(sa_family_t)) {
			if (afd >= 0) /* not a taker's: no one to answer */
				rn_sys_close(afd);
			continue;
		}
		rn_host_lock();
		take_one(&q, afd, &from, m.msg_namelen);
		rn_stream_service_dirty();
		rn_host_unlock();
	}
}

int rn_handover_owner_init(void)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd;

	if (g_ctl >= 0 || !rn_proc_get(RN_PROC_HANDOVER))
		return 0;
	fd = rn_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	fd = rn_fd_own_high(fd);
	len = ctl_name(&a, rn_pid());
	if (rn_sys_bind(fd, (struct sockaddr *)&a, len) < 0) {
		int err = errno;

		rn_fd_close(fd);
		rn_debug("no handover socket: %s", strerror(err));
		return -err;
	}
	g_ctl_ev = event_new(rn_engine_base(), fd, EV_READ | EV_PERSIST, on_ctl, NULL);
	if (!g_ctl_ev) {
		rn_fd_close(fd);
		return -ENOMEM;
	}
	g_ctl = fd;
	rn_ev_add(g_ctl_ev, NULL);
	return 0;
}

void rn_handover_forget(void)
{
	/* the descriptors were the parent's engine's: the child closed them (rn_fd_own) */
	g_ctl = -1;
	g_ctl_ev = NULL;
	g_ask = -1;
	g_took = 0;
	g_life_ns = 0;
	g_skipped = 0;
	pthread_mutex_init(&g_ask_mu, NULL);
}

/* ---- the taker ---- */

int rn_handover_cmd_port(void *arg)
{
	take_ctx *t = arg;
	int err = 0;

	t->port = rn_port_client(t->from->mask, &err);
	if (!t->port)
		return err ? err : -ENOMEM;
	t->nrails = t->port->nsock;
	memcpy(t->rails, t->port->addrs, sizeof(t->rails));
	return 0;
}

int rn_handover_cmd_import(rn_sock *ns, void *arg)
{
	take_ctx *t = arg;
	rn_env env = *rn_engine_env();
	uint64_t now = rn_core_time(rn_now_ns());
	rn_port *p = t->port;
	rn_conn_stats cs;
	rn_conn *c;
	rn_stream *st;
	int rc;

	if (!ns) { /* the owner kept it: the port goes back */
		rn_port_unref(p);
		return 0;
	}
	if (rn_host_inline() ? !rn_stream_scratch : rn_stream_globals() != 0)
		return rn_host_inline() ? RN_CMD_ENGINE_ONLY : -ENOMEM;
	env.on_event = rn_stream_on_core_event;
	env.owns = rn_host_owns;
	env.user = NULL;
	if (
	    rn_conn_import(&c, t->blob, t->blob_len, t->rails, t->nrails, &env, now) != 0) {
		rn_port_unref(p);
		return -EPROTO;
	}
	st = rn_stream_new(c, p, ns);
	rn_port_unref(p); /* the stream holds its own */
	if (!st) {
		rn_conn_del(c);
		return -ENOMEM;
	}
	rc = rn_stream_budget_take();
	st->budgeted = rc == 0; /* over the budget: it is taken all the same, it exists already */
	rn_conn_set_user(c, st);
	st->connected = 1;
	st->server = 1;
	st->taken = 1;
	st->pair_rx = 1; /* what the owner read for it waits in the descriptor: that comes first */
	rn_conn_get_stats(c, &cs);
	pthread_mutex_lock(&ns->mu);
	ns->stream = st;
	/* the listener's address, as TCP's accepted socket tells: the rail the peer is on */
	if (rn_stream_local_of(&cs, rn_conn_peer(c), &ns->local))
		rn_hsa_set_port(&ns->local, t->from->port);
	__atomic_store_n(&ns->kind, RN_SK_CONNECTED, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ns->mu);
	rn_sock_ref(ns); /* the engine's (the stream) */
	rn_stream_flush(st, now); /* the RAILS that tells the peer where it is now */
	rn_stream_post(st, RI2N_EVENT_CONNECTED, -1, 0, "handed over");
	rn_engine_dirty(st);
	rn_stream_arm(st, rn_conn_expiry(c));
	return 0;
}

/*
 * A step of the taker's in the calling thread when the host lock is free
 * (a connection per request must not wait on the engine thread twice),
 * else in the engine.  Only the engine opens a port.
 */
static int take_step(int type, rn_sock *ns, take_ctx *t)
{
	int rc = RN_CMD_ENGINE_ONLY;

	if (!rn_host_held_here() && rn_host_try_inline()) {
		if (type == RN_CMD_TAKE_IMPORT) {
			rc = rn_handover_cmd_import(ns, t);
		} else if ((t->port = rn_port_client_find(t->from->mask)) != NULL) {
			t->nrails = t->port->nsock;
			memcpy(t->rails, t->port->addrs, sizeof(t->rails));
			rc = 0;
		}
		rn_inline_finish(NULL);
		rn_host_leave_inline();
		if (rc != RN_CMD_ENGINE_ONLY)
			return rc;
	}
	return rn_engine_call(type, ns, t);
}

/* The answer socket, made once (g_ask_mu held). */
static int ask_socket(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (g_ask >= 0)
		return g_ask;
	fd = rn_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	fd = rn_fd_own_high(fd);
	/* an abstract name of the kernel's choosing: the owner answers there */
	if (rn_sys_bind(fd, (struct sockaddr *)&a, sizeof(sa_family_t)) < 0) {
		int err = errno;

		rn_fd_close(fd);
		return -err;
	}
	g_ask = fd;
	return fd;
}

/* Reads the answer about id (g_ask_mu held): 0 with the blob and *bfd, or -errno. */
static int read_answer(int fd, uint64_t id, take_ctx *t, int *bfd)
{
	size_t cap = rn_conn_move_size();

	*bfd = -1;
	for (;;) {
		take_rep rep;
		struct iovec iov[2] = { { &rep, sizeof(rep) }, { t->blob, cap } };
		fd_room r;
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = r.buf,
				    .msg_controllen = sizeof(r.buf) };
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		struct timespec ts = { TAKE_WAIT_MS / 1000, (TAKE_WAIT_MS % 1000) * 1000000L };
		int got;
		ssize_t n;

		if (rn_sys_ppoll(&pf, 1, &ts) <= 0)
			return -ETIMEDOUT;
		n = rn_sys_recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
		got = got_fd(&m);
		if (n < (ssize_t)sizeof(rep) || rep.magic != TAKE_MAGIC || rep.id != id) {
			if (got >= 0) /* a late answer to an earlier ask that gave up: that one is lost */
				rn_sys_close(got);
			continue;
		}
		if (rep.err) {
			if (got >= 0)
				rn_sys_close(got);
			return -rep.err;
		}
		if (got < 0 || n != (ssize_t)(sizeof(rep) + cap)) {
			if (got >= 0)
				rn_sys_close(got);
			return -EPROTO;
		}
		t->blob_len = cap;
		*bfd = got;
		return 0;
	}
}

/* Asks the owner (g_ask_mu held), showing it afd: 0 with the blob and *bfd, or -errno. */
static int ask(int afd, const rn_take_from *f, take_ctx *t, int *bfd)
{
	take_req q = { .magic = TAKE_MAGIC, .blob_size = (uint32_t)rn_conn_move_size(),
		       .id = f->id, .port = f->port, .nrails = (uint8_t)t->nrails };
	struct sockaddr_un a;
	struct iovec iov = { &q, sizeof(q) };
	fd_room r;
	struct msghdr m = { .msg_name = &a, .msg_namelen = ctl_name(&a, f->owner), .msg_iov = &iov,
			    .msg_iovlen = 1 };
	int fd = ask_socket();

	if (fd < 0)
		return fd;
	memcpy(q.rails, t->rails, sizeof(q.rails));
	put_fd(&m, &r, afd);
	if (rn_sys_sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
		return -errno;
	return read_answer(fd, f->id, t, bfd);
}

int rn_handover_take(int afd, const rn_take_from *f, rn_sock **out)
{
	take_ctx t = { .from = f };
	struct stat sb;
	rn_sock *ns;
	int rc, bfd = -1, ct;

	*out = NULL;
#ifdef RN_TSAN_H
	/*
	 * A TSan build: TSan stops a forked child of a threaded process that
	 * starts a thread (its die_after_fork), as taking a connection over
	 * starts this process's engine.  The owner serves them, as without.
	 */
	return -ENOTSUP;
#endif
	if (!f->owner || !f->port || f->owner == rn_pid() || !rn_proc_get(RN_PROC_HANDOVER))
		return -ENOTSUP;
	rc = rn_engine_start();
	if (rc == 0)
		rc = take_step(RN_CMD_TAKE_PORT, NULL, &t);
	if (rc)
		return rc;
	t.blob = malloc(rn_conn_move_size());
	/* the answer's wait is bounded and ends in one state or the other: not cancellable */
	ct = rn_sys_nocancel_begin();
	pthread_mutex_lock(&g_ask_mu);
	rc = t.blob ? ask(afd, f, &t, &bfd) : -ENOMEM;
	pthread_mutex_unlock(&g_ask_mu);
	rn_sys_nocancel_end(ct);
	ns = rc == 0 ? rn_sock_new() : NULL;
	if (rc == 0 && (!ns || rn_sys_fstat(afd, &sb) < 0))
		rc = -ENOMEM;
	if (rc) {
		take_step(RN_CMD_TAKE_IMPORT, NULL, &t); /* the port goes back */
		if (bfd >= 0) /* the owner let go of it: the descriptor alone carries nothing now */
			rn_sys_close(bfd);
		if (ns)
			rn_sock_unref(ns);
		goto out;
	}
	ns->user_fd = afd;
	ns->eng_fd = rn_fd_own_high_cloexec(bfd);
	ns->dev = sb.st_dev;
	ns->ino = sb.st_ino;
	ns->cookie = rn_fd_cookie(afd);
	ns->cfg = *rn_engine_config();
	ns->peer = f->peer;
	rc = take_step(RN_CMD_TAKE_IMPORT, ns, &t);
	if (rc) {
		rn_fd_close(ns->eng_fd);
		ns->eng_fd = -1;
		rn_sock_unref(ns);
		goto out;
	}
	*out = ns;
	__atomic_add_fetch(&g_took, 1, __ATOMIC_RELAXED);
out:
	if (t.blob) {
		sodium_memzero(t.blob, rn_conn_move_size());
		free(t.blob);
	}
	if (rc == -EAGAIN || rc == -EINVAL || rc == -EBUSY)
		rn_debug("connection from the listening process %d not handed over: %s", (int)f->owner,
			 strerror(-rc));
	else if (rc && rc != -ENOTSUP)
		rn_warn("connection not taken over from the listening process %d: %s (it serves it "
			"through the descriptor)", (int)f->owner, strerror(-rc));
	return rc;
}
