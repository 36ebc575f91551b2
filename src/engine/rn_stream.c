/*
 * rn_stream.c - connections inside the engine, and the engine's side of
 * the socket commands.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium/utils.h>

#include "rn_events.h"
#include "rn_inline.h"
#include "rn_log.h"
#include "rn_stream.h"

/* how long bytes an epoll wait reported stay for its program's read (deliver) */
#define RN_HELD_NS UINT64_C(50000000)

#define SERVICE_BUDGET 1024 /* datagrams a stream may send per turn */
#define TAKE_CHUNK (256 << 10)
#define PAIR_BUF (4 << 20)  /* engine-side socketpair buffer */


static rn_stream *g_dirty, *g_dirty_tail; /* marked, for the next turn */
static rn_stream *g_turn;                 /* the rest of the turn being serviced */
static struct event *g_kick;
static uint8_t *g_scratch;   /* one datagram or one chunk of user data */

static void service(rn_stream *st, uint64_t now);

/* ---- small helpers ---- */

static int err_to_errno(int err)
{
	switch (err) {
	case RN_ERR_TIMEDOUT: return ETIMEDOUT;
	case RN_ERR_REFUSED: return ECONNREFUSED;
	case RN_ERR_NOROUTE: return ENETUNREACH;
	case RN_ERR_NOMEM: return ENOMEM;
	case RN_ERR_ABORTED: return ECONNABORTED;
	case RN_ERR_UNREACH: return ENETUNREACH;
	case RN_ERR_NOSPACE: return ENOMEM;
	default: return ECONNRESET;
	}
}

static void set_pair_buf(int fd)
{
	int v = PAIR_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

static void name_peer(rn_stream *st, rn_addr a)
{
	char ip[32];

	snprintf(st->name, sizeof(st->name), "%s:%u", rn_ip_str(a.ip, ip, sizeof(ip)), a.port);
}

static struct sockaddr_in sin_of(rn_addr a)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(a.port),
				     .sin_addr.s_addr = htonl(a.ip) };
}

/* ---- the dirty list: streams to service after a batch ---- */

void rn_engine_dirty(rn_stream *st)
{
	if (st->dirty)
		return;
	st->dirty = 1;
	st->dirty_next = NULL;
	if (g_dirty_tail)
		g_dirty_tail->dirty_next = st;
	else
		g_dirty = st;
	g_dirty_tail = st;
	/* an inline thread runs its own stream and leaves the rest to the engine */
	if (rn_host_inline())
		return;
	if (g_kick && !event_pending(g_kick, EV_TIMEOUT, NULL))
		event_active(g_kick, EV_TIMEOUT, 0);
}

void rn_stream_service_dirty(void)
{
	uint64_t now = rn_now_ns();

	/* streams marked while servicing wait for the next turn of the loop */
	g_turn = g_dirty;
	g_dirty = g_dirty_tail = NULL;
	while (g_turn) {
		rn_stream *st = g_turn;

		g_turn = st->dirty_next;
		st->dirty = 0;
		service(st, now);
	}
}

void rn_stream_each_dirty(void (*fn)(rn_stream *st))
{
	rn_stream *list = g_dirty;

	g_dirty = g_dirty_tail = NULL;
	while (list) {
		rn_stream *st = list;

		list = st->dirty_next;
		st->dirty = 0;
		fn(st);
	}
}

int rn_stream_dirty_pending(void)
{
	return g_dirty != NULL;
}

/* Takes a stream off the lists of streams to service (also before it is freed). */
void rn_stream_undirty(rn_stream *st)
{
	rn_stream **pp, *prev = NULL;

	if (!st->dirty)
		return;
	st->dirty = 0;
	for (pp = &g_turn; *pp; pp = &(*pp)->dirty_next) {
		if (*pp == st) {
			*pp = st->dirty_next;
			return;
		}
	}
	for (pp = &g_dirty; *pp; prev = *pp, pp = &(*pp)->dirty_next) {
		if (*pp == st) {
			*pp = st->dirty_next;
			if (g_dirty_tail == st)
				g_dirty_tail = prev;
			return;
		}
	}
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	rn_host_lock();
	rn_stream_service_dirty();
	rn_host_unlock();
}

static int ensure_globals(void)
{
	if (!g_scratch)
		g_scratch = malloc(TAKE_CHUNK > RN_MAX_DGRAM ? TAKE_CHUNK : RN_MAX_DGRAM);
	if (!g_kick)
		g_kick = event_new(rn_engine_base(), -1, 0, on_kick, NULL);
	return g_scratch && g_kick ? 0 : -ENOMEM;
}

/* ---- core events ---- */

static void connected(rn_stream *st);

/* Hands an event to the application's queue (ri2n_read_event). */
static void post(rn_stream *st, int type, int rail, int error, const char *cause)
{
	struct ri2n_event e = { .type = type, .fd = __atomic_load_n(&st->sock->user_fd, __ATOMIC_RELAXED), .rail = rail,
				.error = error, .time_ns = rn_now_ns(),
				.peer = sin_of(rn_conn_peer(st->conn)) };

	if (rail >= 0) {
		rn_conn_stats cs;

		rn_conn_get_stats(st->conn, &cs);
		e.local_rail = sin_of(cs.rail[rail].local);
		e.remote_rail = sin_of(cs.rail[rail].remote);
	}
	snprintf(e.cause, sizeof(e.cause), "%s", cause ? cause : "");
	rn_events_post(&e);
}

static void on_core_event(void *user, const rn_event *ev)
{
	rn_stream *st = user;
	rn_conn_stats cs;

	if (!st) /* rn_conn_accept reports ESTABLISHED before the stream exists */
		return;
	switch (ev->type) {
	case RN_EV_ESTABLISHED:
		if (st->sock)
			connected(st);
		break;
	case RN_EV_RAIL_DOWN:
	case RN_EV_RAIL_UP: {
		char l[32], r[32];

		rn_conn_get_stats(st->conn, &cs);
		rn_log(RN_LOG_WARN, "connection %s: rail %d (%s -> %s) %s: %s", st->name, ev->rail,
		       rn_ip_str(cs.rail[ev->rail].local.ip, l, sizeof(l)),
		       rn_ip_str(cs.rail[ev->rail].remote.ip, r, sizeof(r)),
		       ev->type == RN_EV_RAIL_DOWN ? "down" : "up again", rn_cause_name(ev->cause));
		post(st, ev->type == RN_EV_RAIL_DOWN ? RI2N_EVENT_RAIL_DOWN : RI2N_EVENT_RAIL_UP,
		     ev->rail, 0, rn_cause_name(ev->cause));
		break;
	}
	case RN_EV_FAILED:
		if (ev->err != RN_ERR_ABORTED && st->connected)
			rn_warn("connection %s failed: %s", st->name, rn_strerror(ev->err));
		else if (ev->err == RN_ERR_TIMEDOUT && (rn_conn_get_stats(st->conn, &cs), cs.keyed))
			rn_warn("connect to %s failed: no answer within the connect timeout; with a "
				"cluster key this is also what a listener with another key, or none, "
				"looks like (it logs the refusal)", st->name);
		else if (ev->err != RN_ERR_ABORTED)
			rn_info("connect to %s failed: %s", st->name,
				ev->err == RN_ERR_TIMEDOUT ? "no answer within the connect timeout" :
							     rn_strerror(ev->err));
		post(st, RI2N_EVENT_FAILED, -1, err_to_errno(ev->err), rn_strerror(ev->err));
		break;
	case RN_EV_CLOSED:
		rn_info("connection %s closed", st->name);
		post(st, RI2N_EVENT_CLOSED, -1, 0, "closed");
		break;
	default:
		break;
	}
}

/* ---- stream life ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg);
static void on_user_readable(evutil_socket_t fd, short what, void *arg);
static void on_user_writable(evutil_socket_t fd, short what, void *arg);

/*
 * The process's budget of accepted connections.  Each holds two descriptors
 * (its socketpair) and rings that grow with use, all made before the
 * application calls ri2n_accept, so a flood of completed handshakes must
 * meet a limit: RI2N_MAX_CONNS, else half of the descriptors the process may
 * open, after 64 left to the application.  Past it a handshake is refused
 * at once (the client's connect fails with ECONNREFUSED), counted on the
 * listener, logged (at most once a second), and the next ri2n_accept fails
 * with EMFILE; so does a socketpair the kernel refuses.
 */
static long g_conns;           /* (atomic) accepted connections alive */
static long g_conn_cap = -1;
static uint64_t g_refuse_logged_ns;

static long conn_cap(void)
{
	const char *v = getenv("RI2N_MAX_CONNS");
	struct rlimit rl;

	if (g_conn_cap >= 0)
		return g_conn_cap;
	if (v && *v && atol(v) > 0)
		g_conn_cap = atol(v);
	else if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		g_conn_cap = rl.rlim_cur > 128 ? (long)(rl.rlim_cur - 64) / 2 : 32;
	else
		g_conn_cap = 1L << 20;
	return g_conn_cap;
}

/* Takes one connection from the budget; -1 when none is left. */
static int budget_take(void)
{
	if (__atomic_add_fetch(&g_conns, 1, __ATOMIC_RELAXED) > conn_cap()) {
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		return -1;
	}
	return 0;
}

static void budget_give(rn_stream *st)
{
	if (st->budgeted)
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
	st->budgeted = 0;
}

/* A handshake this process cannot take: the client hears it, the application too. */
static void refuse_accept(rn_port *p, const rn_accept_params *ap, int err, uint64_t now)
{
	rn_sock *ls = p->lsock;
	uint8_t reply[128];
	size_t n = rn_listener_refuse(p->lis, now, ap, reply, sizeof(reply));
	int wake;

	if (n)
		rn_port_send_now(p, ap->local_rail, ap->from, reply, n);
	p->refused++;
	if (now - g_refuse_logged_ns >= UINT64_C(1000000000) || !g_refuse_logged_ns) {
		g_refuse_logged_ns = now;
		rn_warn("refusing connections on port %u: %s (%ld accepted connections alive, "
			"the most is %ld: RI2N_MAX_CONNS or the descriptor limit); %llu refused so far",
			p->number, strerror(err), __atomic_load_n(&g_conns, __ATOMIC_RELAXED),
			conn_cap(), (unsigned long long)p->refused);
	}
	pthread_mutex_lock(&ls->mu);
	wake = ls->acc_err == 0;
	if (wake)
		ls->acc_err = err;
	pthread_mutex_unlock(&ls->mu);
	/* a record, as for a connection: the listening descriptor polls readable */
	if (wake) {
		rn_accept_rec rec = { .tag = 'e', .err = err };

		if (send(ls->eng_fd, &rec, sizeof(rec), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			rn_debug("accept error record not written: %s", strerror(errno));
	}
}

static rn_stream *stream_new(rn_conn *c, rn_port *p, rn_sock *s)
{
	rn_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->conn = c;
	st->port = p;
	st->sock = s;
	st->fd = s->eng_fd;
	st->id = rn_conn_id(c);
	st->armed_ns = UINT64_MAX;
	st->tev = evtimer_new(rn_engine_base(), on_timer, st);
	st->rev = event_new(rn_engine_base(), st->fd, EV_READ | EV_PERSIST, on_user_readable, st);
	st->wev = event_new(rn_engine_base(), st->fd, EV_WRITE, on_user_writable, st);
	if (!st->tev || !st->rev || !st->wev || rn_port_add(p, st, st->id)) {
		if (st->tev)
			event_free(st->tev);
		if (st->rev)
			event_free(st->rev);
		if (st->wev)
			event_free(st->wev);
		free(st);
		return NULL;
	}
	rn_port_ref(p);
	name_peer(st, rn_conn_peer(c));
	st->created_ns = rn_now_ns();
	return st;
}

/*
 * Makes the user's read() fail with ECONNRESET: closing our end while it
 * still has unread bytes does that (AF_UNIX), so put a byte there through a
 * duplicate of the user's descriptor, taken only if it still is the same
 * socket (the user may have closed it and reused the number).
 */
static void close_with_reset(rn_stream *st)
{
	rn_sock *s = st->sock;
	struct stat sb;
	/* raw calls: an interposer (ri2n-run's) must neither see nor follow this duplicate */
	int d = (int)syscall(SYS_fcntl, __atomic_load_n(&s->user_fd, __ATOMIC_RELAXED),
			     F_DUPFD_CLOEXEC, 0);

	if (d >= 0) {
		if (fstat(d, &sb) == 0 && sb.st_ino == s->ino && sb.st_dev == s->dev) {
			if (syscall(SYS_sendto, d, "!", 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0) < 0) {
				/* full: then bytes are already waiting, which does the same */
			}
		}
		syscall(SYS_close, d);
	}
}

static void close_user_end(rn_stream *st, int reset)
{
	if (st->fd < 0)
		return;
	if (reset)
		close_with_reset(st);
	event_del(st->rev);
	event_del(st->wev);
	/* not connected yet: the close watch is on this end too; off the loop before
	 * the close frees the number for another thread's next socket */
	if (st->sock->watch_ev) {
		event_free(st->sock->watch_ev);
		st->sock->watch_ev = NULL;
	}
	rn_fd_close(st->fd);
	st->fd = -1;
	st->sock->eng_fd = -1;
}

/*
 * Records that the connection ended, and why, where the API reads it.  Must
 * come before the user's end is closed: a user woken by that close (poll
 * after a non-blocking connect, read) must find SO_ERROR already set.
 */
static void record_end(rn_stream *st)
{
	rn_sock *s = st->sock;
	int err = rn_conn_error(st->conn);

	pthread_mutex_lock(&s->mu);
	if (s->kind != RN_SK_DEAD) {
		s->kind = RN_SK_DEAD;
		if (err && err != RN_ERR_ABORTED) {
			/* SO_ERROR tells why: ECONNREFUSED, ETIMEDOUT, ECONNRESET */
			s->dead_error = err_to_errno(err);
			s->so_error = s->dead_error;
		}
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void stream_free(rn_stream *st)
{
	rn_sock *s = st->sock;
	int err = rn_conn_error(st->conn);

	/* the state first: a user woken by the close below must see why */
	record_end(st);
	if (st->connected && !s->final && (s->final = malloc(sizeof(*s->final))))
		rn_conn_get_stats(st->conn, s->final);
	pthread_mutex_lock(&s->mu);
	s->stream = NULL;
	pthread_mutex_unlock(&s->mu);
	/*
	 * an unconnected end still holds the junk bytes: closing it resets
	 * anyway; a user given the clean end of the stream keeps it (reads
	 * return 0, writes fail with EPIPE), as after TCP's RST in CLOSE_WAIT
	 */
	close_user_end(st, err != 0 && st->connected && !st->eof_sent);
	if (s->watch_ev) {
		event_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	rn_stream_undirty(st);
	rn_inline_stream_gone(st);
	rn_port_remove(st->port, st, st->id);
	rn_port_unref(st->port);
	event_free(st->tev);
	event_free(st->rev);
	event_free(st->wev);
	rn_conn_del(st->conn);
	budget_give(st);
	st->gone = 1;
	rn_sock_unref(s); /* the engine's reference */
	free(st);
}

/* The client's handshake finished: the user's descriptor opens for writing. */
static void connected(rn_stream *st)
{
	rn_sock *s = st->sock;
	rn_conn_stats cs;

	st->connected = 1;
	rn_conn_get_stats(st->conn, &cs);
	/* the state before the junk goes: a user woken by writability must find it */
	pthread_mutex_lock(&s->mu);
	s->kind = RN_SK_CONNECTED;
	for (int k = 0; k < cs.npaths; k++) {
		if (cs.rail[k].remote.ip == rn_conn_peer(st->conn).ip) {
			s->local = sin_of(cs.rail[k].local);
			break;
		}
	}
	s->peer = sin_of(rn_conn_peer(st->conn));
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	/* discard the bytes that held the user's descriptor unwritable */
	while (st->junk_left > 0) {
		ssize_t n = recv(st->fd, g_scratch, st->junk_left < TAKE_CHUNK ? st->junk_left :
								     TAKE_CHUNK, MSG_DONTWAIT);

		if (n <= 0)
			break;
		st->junk_left -= (size_t)n;
	}
	if (s->watch_ev) {
		event_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	rn_info("connected to %s over %d rail%s", st->name, cs.npaths, cs.npaths == 1 ? "" : "s");
	post(st, RI2N_EVENT_CONNECTED, -1, 0, "connected");
	rn_engine_dirty(st);
}

/* ---- moving data ---- */

/* Bytes the core has in order go to the user; then EOF or the error. */
static void deliver(rn_stream *st, uint64_t now)
{
	while (st->fd >= 0 && !st->eof_sent) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(st->conn, &d), w;

		if (n == RN_ERR_AGAIN)
			return;
		/*
		 * An epoll wait reported these from the core: its program reads them
		 * there (no copy through the descriptor); unless it has stopped
		 * asking for a while, then the descriptor gets them after all.
		 */
		if (n > 0 && st->held && now - st->held_ns < RN_HELD_NS)
			return;
		if (n == 0) {
			shutdown(st->fd, SHUT_WR); /* the user reads a clean end of stream */
			st->eof_sent = 1;
			st->pair_rx = 1;
			return;
		}
		if (n < 0) { /* the connection died: the user reads an error, never EOF */
			record_end(st); /* SO_ERROR set before the close wakes the user */
			close_user_end(st, 1);
			return;
		}
		w = send(st->fd, d, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			rn_conn_consume(st->conn, now, (size_t)w);
			st->pair_rx = 1;
			continue;
		}
		if (errno == EAGAIN) {
			event_add(st->wev, NULL);
			return;
		}
		/* EPIPE / ECONNRESET: the user closed and nobody will read this */
		rn_conn_abort(st->conn, now);
		close_user_end(st, 0);
		return;
	}
}

/* Whether the user closed its end for good (POLLHUP), not just shut down writing. */
static int user_gone(rn_stream *st)
{
	struct pollfd pf = { .fd = st->fd };

	return poll(&pf, 1, 0) == 1 && (pf.revents & POLLHUP);
}

static void user_closed(rn_stream *st, uint64_t now)
{
	st->user_eof = 1;
	event_del(st->rev);
	st->rd_on = 0;
	if (__atomic_load_n(&st->sock->abort_close, __ATOMIC_RELAXED) && user_gone(st)) {
		/* SO_LINGER {1, 0}: an abortive close, as TCP's: the peer gets a RESET */
		rn_conn_abort(st->conn, now);
		return;
	}
	if (rn_conn_shutdown(st->conn, now) == 0)
		st->fin_queued = 1;
}

/* Bytes the user wrote go into the core's send ring, as far as it has room. */
static void take(rn_stream *st, uint64_t now)
{
	size_t space;

	if (st->fd < 0 || st->user_eof || !st->connected ||
	    rn_conn_state(st->conn) != RN_ST_ESTABLISHED) {
		if (st->rd_on) {
			event_del(st->rev);
			st->rd_on = 0;
		}
		return;
	}
	while ((space = rn_conn_write_space(st->conn)) > 0) {
		ssize_t n = recv(st->fd, g_scratch, space < TAKE_CHUNK ? space : TAKE_CHUNK,
				 MSG_DONTWAIT);

		if (n > 0) {
			rn_conn_write(st->conn, now, g_scratch, (size_t)n);
			continue;
		}
		if (n == 0) {
			user_closed(st, now);
			return;
		}
		if (errno == EAGAIN)
			break;
		/* ECONNRESET: the user closed with data unread: reset, as TCP does */
		rn_conn_abort(st->conn, now);
		close_user_end(st, 0);
		return;
	}
	/* read more when there is room; stop reading when there is none (back-pressure) */
	if (space > 0 && !st->rd_on) {
		event_add(st->rev, NULL);
		st->rd_on = 1;
	} else if (space == 0 && st->rd_on) {
		event_del(st->rev);
		st->rd_on = 0;
	}
}

/* Datagrams the core wants sent go to the port's queues. */
int rn_stream_flush(rn_stream *st, uint64_t now)
{
	rn_port *p = st->port;
	int sent = 0;

	while (sent < SERVICE_BUDGET) {
		rn_tx tx;
		uint32_t w = rn_port_writable(p);
		ssize_t n;

		if (!w)
			break;
		n = rn_conn_write_pkt(st->conn, now, w, g_scratch, p->dgram, &tx);
		if (n <= 0)
			break;
		rn_port_queue(p, tx.local_rail, st, tx.to, g_scratch, (size_t)n); /* sends a full queue */
		sent++;
	}
	rn_port_flush(p);
	return sent == SERVICE_BUDGET;
}

static void arm_timer(rn_stream *st, uint64_t now)
{
	uint64_t exp = rn_conn_expiry(st->conn);

	if (rn_host_inline()) { /* no libevent here: the inline timer stands in */
		rn_inline_arm(st, now);
		return;
	}

	if (exp == st->armed_ns)
		return;
	st->armed_ns = exp;
	if (exp == UINT64_MAX) {
		evtimer_del(st->tev);
	} else {
		uint64_t d = exp > now ? exp - now : 0;
		struct timeval tv = { (time_t)(d / 1000000000), (suseconds_t)(d % 1000000000 / 1000) };

		evtimer_add(st->tev, &tv);
	}
}

/*
 * The user closed its end for good (not just shut down writing) while the
 * peer keeps the connection open: like TCP's orphaned FIN_WAIT_2, wait for
 * the peer's FIN up to the dead-peer timeout, then reset.  Data arriving
 * meanwhile finds nobody to read it and resets at once (deliver).
 */
static void check_orphan(rn_stream *st, uint64_t now)
{
	if (!st->user_eof || st->fd < 0 || rn_conn_state(st->conn) != RN_ST_ESTABLISHED)
		return;
	if (!st->orphan_ns) {
		if (user_gone(st))
			st->orphan_ns = now;
		return;
	}
	if (now - st->orphan_ns >= st->sock->cfg.dead_peer_ns) {
		rn_info("connection %s: closed by this side, the peer never closed: reset", st->name);
		rn_conn_abort(st->conn, now);
	}
}

static void prune_taken(rn_sock *ls);

static void service(rn_stream *st, uint64_t now)
{
	int more;

	/* its record may have gone to a prefork worker: the engine's copy of A must go */
	if (__atomic_load_n(&st->sock->queued, __ATOMIC_RELAXED) && st->port->lsock)
		prune_taken(st->port->lsock);

	deliver(st, now);
	/* while the descriptor is watched, what the user writes there says so itself */
	if (!st->rd_on || st->user_ready) {
		st->user_ready = 0;
		take(st, now);
	}
	if (st->user_eof && !st->fin_queued && rn_conn_shutdown(st->conn, now) == 0)
		st->fin_queued = 1;
	check_orphan(st, now);
	more = rn_stream_flush(st, now);
	deliver(st, now);
	if (rn_conn_state(st->conn) == RN_ST_CLOSED) {
		/* reset after the peer's whole stream: it still goes to the user first */
		if (st->fd < 0 || st->eof_sent ||
		    (rn_conn_error(st->conn) && !rn_conn_ended_clean(st->conn))) {
			rn_stream_flush(st, now); /* a RESET may still be owed */
			stream_free(st);
			return;
		}
	}
	/* both ends are done with the socketpair: close ours early */
	if (st->fd >= 0 && st->eof_sent && st->user_eof)
		close_user_end(st, 0);
	if (more)
		rn_engine_dirty(st);
	arm_timer(st, now);
}

void rn_stream_input(rn_stream *st, int idx, rn_addr from, const uint8_t *d, size_t len,
		     uint64_t now)
{
	rn_conn_recv(st->conn, now, idx, from, d, len);
	rn_engine_dirty(st);
}

int rn_stream_sreset_input(rn_stream *st, int idx, rn_addr from, const uint8_t *d, size_t len,
			   uint64_t now)
{
	if (rn_conn_recv(st->conn, now, idx, from, d, len))
		return 0;
	rn_engine_dirty(st);
	return 1;
}

void rn_stream_fire_timer(rn_stream *st, uint64_t now)
{
	st->armed_ns = UINT64_MAX;
	if (rn_conn_verdict_pending(st->conn))
		rn_port_read(st->port); /* the suspect rail's packets may wait in its socket */
	now = rn_core_time(now); /* the caller's may predate datagrams read since */
	rn_conn_on_timer(st->conn, now);
	if (rn_conn_id(st->conn) != st->id) { /* the handshake restarted: a new id */
		rn_port_remove(st->port, st, st->id);
		st->id = rn_conn_id(st->conn);
		rn_port_add(st->port, st, st->id);
	}
	service(st, now);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	rn_stream *st = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	/* datagrams an inline thread left unread come before the timer's verdicts */
	rn_port_catch_up(st->port);
	rn_stream_fire_timer(st, rn_now_ns());
	rn_stream_service_dirty();
	rn_host_unlock();
}

static void on_user_readable(evutil_socket_t fd, short what, void *arg)
{
	rn_stream *st = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	st->user_ready = 1;
	service(st, rn_now_ns());
	rn_host_unlock();
}

static void on_user_writable(evutil_socket_t fd, short what, void *arg)
{
	rn_stream *st = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	service(st, rn_now_ns());
	rn_host_unlock();
}

void rn_stream_send_error(rn_stream *st, int idx, int err)
{
	if (!st)
		return;
	rn_debug("connection %s: send on rail socket %d failed: %s", st->name, idx, strerror(err));
	rn_conn_rail_error(st->conn, rn_now_ns(), idx);
	rn_engine_dirty(st);
}

static void mark_dirty(rn_stream *st)
{
	rn_engine_dirty(st);
}

void rn_stream_port_writable(rn_port *p)
{
	rn_port_each(p, mark_dirty);
}

/* The address a port unreachable named (rn_port_each's callback takes no argument). */
static rn_addr g_refused_to;

static void refused_one(rn_stream *st)
{
	rn_addr a = rn_conn_peer(st->conn);

	/* only the connection whose INIT went there: a forged error naming another does nothing */
	if (a.ip != g_refused_to.ip || a.port != g_refused_to.port)
		return;
	rn_conn_refused(st->conn, rn_now_ns());
	rn_engine_dirty(st);
}

void rn_stream_refused(rn_port *p, int idx, rn_addr to)
{
	(void)idx;
	/* only a connection still sending INIT takes it (rn_conn_refused) */
	g_refused_to = to;
	if (!p->lis)
		rn_port_each(p, refused_one);
}

/* ---- listening ---- */

static int make_pair(rn_sock *s)
{
	int sv[2];
	struct stat sb;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (fstat(sv[0], &sb) < 0 || fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	s->user_fd = sv[0];
	s->eng_fd = sv[1];
	rn_fd_own(sv[0]); /* until ri2n_accept hands it to the user */
	rn_fd_own(sv[1]);
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->cookie = rn_fd_cookie(sv[0]);
	set_pair_buf(sv[1]);
	return 0;
}

/* Tells the listener's user end of connection ns: an rn_accept_rec with ns's descriptor A. */
static int send_accept_rec(int eng_fd, const rn_sock *ns)
{
	rn_accept_rec rec = { .tag = 'a', .peer = ns->peer };
	struct iovec iov = { &rec, sizeof(rec) };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &ns->user_fd, sizeof(int));
	return sendmsg(eng_fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(rec) ? 0 : -1;
}

/*
 * Connections whose accept record was read, counted from what is still
 * unread on the listener's descriptor (records are read in order): the ones
 * no longer in the queue of the listening process went to a process that
 * inherited the listener (a prefork worker), which holds its own copy of
 * end A now; the engine lets go of its copy.  Otherwise they would fill the
 * backlog of a listening process that never accepts.
 */
static void prune_taken(rn_sock *ls)
{
	rn_sock *gone = NULL, **tail = &gone;
	int ufd = __atomic_load_n(&ls->user_fd, __ATOMIC_RELAXED), unread = 0;
	struct stat sb;

	/* raw: the number is the program's; it must still be the listener */
	if (ufd < 0 || syscall(SYS_fstat, ufd, &sb) < 0 || sb.st_ino != ls->ino ||
	    sb.st_dev != ls->dev)
		return;
	/* counted under the mutex an accept in this process reads its record under */
	pthread_mutex_lock(&ls->mu);
	if (syscall(SYS_ioctl, ufd, FIONREAD, &unread) < 0) {
		pthread_mutex_unlock(&ls->mu);
		return;
	}
	unread /= (int)sizeof(rn_accept_rec);
	while (ls->accq_len > unread && ls->accq_head) {
		rn_sock *ns = ls->accq_head;

		ls->accq_head = ns->acc_next;
		if (!ls->accq_head)
			ls->accq_tail = NULL;
		ls->accq_len--;
		ns->acc_next = NULL;
		__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
		*tail = ns;
		tail = &ns->acc_next;
	}
	pthread_mutex_unlock(&ls->mu);
	while (gone) {
		rn_sock *next = gone->acc_next;

		gone->acc_next = NULL;
		rn_fd_disown(gone->user_fd);
		syscall(SYS_close, gone->user_fd); /* raw: not the program's close */
		rn_sock_unref(gone);
		gone = next;
	}
}

/* Returns 0, or -1 when the connection could not be made (the client will retry). */
static int accept_conn(rn_port *p, const rn_accept_params *ap, uint64_t now)
{
	rn_sock *ls = p->lsock, *ns;
	rn_env env = *rn_engine_env();
	rn_conn *c;
	rn_stream *st;
	int full, rc;

	prune_taken(ls);
	pthread_mutex_lock(&ls->mu);
	full = ls->accq_len >= ls->backlog;
	pthread_mutex_unlock(&ls->mu);
	if (full) {
		/* the client resends its COOKIE_ECHO; it may fit later */
		p->drops_backlog++;
		return -1;
	}
	if (budget_take()) {
		refuse_accept(p, ap, EMFILE, now);
		return 0; /* answered: not to be forgotten */
	}
	ns = rn_sock_new();
	rc = ns ? make_pair(ns) : -ENOMEM;
	if (rc) {
		if (ns)
			rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		refuse_accept(p, ap, rc == -ENOMEM || rc == -ENOBUFS ? ENOBUFS : EMFILE, now);
		return 0;
	}
	ns->cfg = ap->cfg;
	env.on_event = on_core_event;
	env.user = NULL;
	if (rn_conn_accept(&c, ap, &env, now)) {
		rn_fd_close(ns->user_fd);
		rn_fd_close(ns->eng_fd);
		rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		refuse_accept(p, ap, ENOBUFS, now);
		return 0;
	}
	st = stream_new(c, p, ns);
	if (!st) {
		rn_conn_del(c);
		rn_fd_close(ns->user_fd);
		rn_fd_close(ns->eng_fd);
		rn_sock_unref(ns);
		__atomic_sub_fetch(&g_conns, 1, __ATOMIC_RELAXED);
		refuse_accept(p, ap, ENOBUFS, now);
		return 0;
	}
	st->budgeted = 1;
	rn_conn_set_user(c, st);
	st->connected = 1;
	st->server = 1;
	ns->stream = st;
	ns->kind = RN_SK_CONNECTED;
	ns->peer = sin_of(ap->from);
	ns->local = sin_of((rn_addr){ p->addrs[ap->local_rail].ip, p->addrs[ap->local_rail].port });
	rn_sock_ref(ns); /* one for the engine (the stream), one for the accept queue */
	pthread_mutex_lock(&ls->mu);
	if (ls->accq_tail)
		ls->accq_tail->acc_next = ns;
	else
		ls->accq_head = ns;
	ls->accq_tail = ns;
	ls->accq_len++;
	__atomic_store_n(&ns->queued, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ls->mu);
	/*
	 * One record per waiting connection, carrying its end A: the listening
	 * descriptor polls readable, and whichever process reads the record
	 * (the listener's, or a prefork worker that inherited it) holds the
	 * connection.  The engine keeps its copy of A until the record is read
	 * (rn_api_accept, prune_taken).
	 */
	if (send_accept_rec(ls->eng_fd, ns) < 0)
		rn_debug("accept record not written: %s", strerror(errno));
	rn_info("accepted connection from %s", st->name);
	post(st, RI2N_EVENT_CONNECTED, -1, 0, "accepted");
	rn_engine_dirty(st);
	return 0;
}

/* Keyed listener: INITs under another cluster key (or none) are refused unanswered; say so. */
static void warn_bad_key(rn_listener *l, uint64_t now)
{
	rn_addr from;
	uint64_t n = rn_listener_take_bad_key(l, now, &from);
	char a[32];

	if (n)
		rn_warn("refused %llu connection attempt(s), the last from %s:%u: the client's "
			"cluster key differs from this listener's, or it has none (RI2N_KEY / "
			"RI2N_KEY_FILE)", (unsigned long long)n, rn_ip_str(from.ip, a, sizeof(a)),
			from.port);
}

void rn_stream_listen_input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len,
			    uint64_t now)
{
	uint8_t reply[512];
	size_t rlen;
	rn_accept_params ap;
	int rc = rn_listener_recv(p->lis, now, idx, from, d, len, reply, sizeof(reply), &rlen, &ap);

	if (rc == RN_LISTEN_REPLY)
		rn_port_send_now(p, idx, from, reply, rlen);
	else if (rc == RN_LISTEN_ACCEPT && accept_conn(p, &ap, now))
		rn_listener_forget(p->lis, &ap); /* its COOKIE_ECHO may come again */
	if (rc == RN_LISTEN_ACCEPT)
		sodium_memzero(ap.cfg.key, sizeof(ap.cfg.key)); /* a copy of the key */
	warn_bad_key(p->lis, now);
}

/* Aborts the connections queued on a listening socket nobody will accept. */
static void drop_accept_queue(rn_sock *ls)
{
	prune_taken(ls); /* those went to other processes: they live */
	for (;;) {
		rn_sock *ns;

		pthread_mutex_lock(&ls->mu);
		ns = ls->accq_head;
		if (ns) {
			ls->accq_head = ns->acc_next;
			if (!ls->accq_head)
				ls->accq_tail = NULL;
			ls->accq_len--;
			__atomic_store_n(&ns->queued, 0, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&ls->mu);
		if (!ns)
			return;
		if (ns->stream) {
			rn_conn_abort(ns->stream->conn, rn_now_ns());
			rn_engine_dirty(ns->stream);
		}
		rn_fd_close(ns->user_fd);
		rn_sock_unref(ns);
	}
}

/* The user closed a socket the engine watches (not connected yet, or listening). */
static void watched_closed(rn_sock *s)
{
	if (s->watch_ev) {
		event_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	if (s->stream) { /* connecting: give up */
		rn_conn_abort(s->stream->conn, rn_now_ns());
		service(s->stream, rn_now_ns());
		return;
	}
	if (s->port) {
		if (s->port->lsock == s) {
			free(s->port->lis);
			s->port->lis = NULL;
			s->port->lsock = NULL;
			drop_accept_queue(s);
			rn_sock_unref(s); /* the listener's reference */
		}
		if (s->port->owner == s)
			s->port->owner = NULL;
		rn_port_unref(s->port);
		s->port = NULL;
	}
	pthread_mutex_lock(&s->mu);
	s->kind = RN_SK_DEAD;
	pthread_mutex_unlock(&s->mu);
	rn_fd_close(s->eng_fd);
	s->eng_fd = -1;
	rn_sock_unref(s); /* the engine's reference */
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
	rn_sock *s = arg;
	char buf[256];

	if (what & EV_READ) { /* listening: discard what the user writes, see EOF */
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0 || (n < 0 && errno == EAGAIN))
			return;
	}
	rn_host_lock();
	watched_closed(s);
	rn_stream_service_dirty();
	rn_host_unlock();
}

static int watch(rn_sock *s, short what)
{
	if (s->watch_ev)
		event_free(s->watch_ev);
	s->watch_ev = event_new(rn_engine_base(), s->eng_fd, what | EV_PERSIST, on_watch, s);
	if (!s->watch_ev)
		return -ENOMEM;
	event_add(s->watch_ev, NULL);
	return 0;
}

/* ---- commands ---- */

int rn_stream_cmd_create(rn_sock *s)
{
	int rc = ensure_globals();

	if (rc)
		return rc;
	rn_sock_ref(s); /* the engine's, dropped when it closes its end */
	rc = watch(s, EV_CLOSED);
	if (rc)
		rn_sock_unref(s);
	return rc;
}

static uint32_t rails_for(uint32_t ip, int *err)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails);

	if (ip == INADDR_ANY)
		return n >= 32 ? UINT32_MAX : (1u << n) - 1;
	for (int i = 0; i < n; i++)
		if (rails[i].ip == ip)
			return 1u << i;
	*err = -EADDRNOTAVAIL;
	return 0;
}

int rn_stream_cmd_bind(rn_sock *s, const struct sockaddr_in *a)
{
	int err = 0;
	uint32_t mask = rails_for(ntohl(a->sin_addr.s_addr), &err);
	uint16_t number = ntohs(a->sin_port);
	rn_port *p;

	if (!mask)
		return err;
	if (s->bound || s->kind != RN_SK_NEW)
		return -EINVAL;
	p = number ? rn_port_find_number(number) : NULL;
	if (p) {
		/*
		 * Held only by connections of a closed listener (lingering, or still
		 * running): a new listener may take it over, as TCP's SO_REUSEADDR
		 * lets it; the connections go on, demultiplexed by id.
		 */
		if (p->owner || p->mask != mask)
			return -EADDRINUSE;
		rn_port_ref(p);
	} else {
		p = rn_port_open(mask, number, 1, &err);
		if (!p)
			return err;
	}
	p->owner = s;
	s->port = p;
	pthread_mutex_lock(&s->mu);
	s->bound = 1;
	s->local = sin_of((rn_addr){ ntohl(a->sin_addr.s_addr), p->number });
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int rn_stream_cmd_listen(rn_sock *s)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	rn_env env = *rn_engine_env();
	rn_listener *l;
	int rc;

	if (s->kind == RN_SK_LISTEN)
		return 0;
	if (s->kind != RN_SK_NEW)
		return -EINVAL;
	if (!s->port && (rc = rn_stream_cmd_bind(s, &any)) != 0)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (rn_listener_init(l, &s->cfg, &env, s->port->addrs, s->port->nsock)) {
		free(l);
		return -EINVAL;
	}
	s->port->lis = l;
	s->port->lsock = s;
	rn_sock_ref(s); /* the listener's */
	/* the user's end is never written to by ri2n: drop what held it back */
	pthread_mutex_lock(&s->mu);
	while (s->junk > 0) {
		ssize_t n = recv(s->eng_fd, g_scratch, s->junk < TAKE_CHUNK ? s->junk : TAKE_CHUNK,
				 MSG_DONTWAIT);

		if (n <= 0)
			break;
		s->junk -= (size_t)n;
	}
	s->kind = RN_SK_LISTEN;
	pthread_mutex_unlock(&s->mu);
	return watch(s, EV_READ);
}

int rn_stream_cmd_connect(rn_sock *s, const struct sockaddr_in *a)
{
	rn_addr peer = { ntohl(a->sin_addr.s_addr), ntohs(a->sin_port) };
	rn_env env = *rn_engine_env();
	uint64_t now = rn_now_ns();
	rn_conn *c;
	rn_stream *st;
	int rc, err = 0;

	if (s->kind == RN_SK_CONNECTING)
		return -EALREADY;
	if (s->kind != RN_SK_NEW)
		return s->kind == RN_SK_CONNECTED ? -EISCONN : -EINVAL;
	if (peer.ip == 0 || peer.port == 0)
		return -EINVAL;
	if (!s->port) {
		const rn_rail_info *rails;
		int n = rn_engine_rails(&rails);

		s->port = rn_port_client(n >= 32 ? UINT32_MAX : (1u << n) - 1, &err);
		if (!s->port)
			return err;
	}
	env.on_event = on_core_event;
	env.user = NULL;
	rc = rn_conn_connect(&c, &s->cfg, &env, s->port->addrs, s->port->nsock, peer, now);
	if (rc)
		return rc == RN_ERR_NOROUTE ? -ENETUNREACH : rc == RN_ERR_NOMEM ? -ENOMEM : -EINVAL;
	st = stream_new(c, s->port, s);
	if (!st) {
		rn_conn_del(c);
		return -ENOMEM;
	}
	rn_conn_set_user(c, st);
	rn_port_unref(s->port); /* the stream holds the port now */
	s->stream = st;
	pthread_mutex_lock(&s->mu);
	st->junk_left = s->junk; /* set_sndbuf adds to it under the mutex */
	s->junk = 0;
	s->kind = RN_SK_CONNECTING;
	s->peer = *a;
	pthread_mutex_unlock(&s->mu);
	rn_engine_dirty(st);
	return 0;
}

int rn_stream_cmd_stats(rn_sock *s, rn_conn_stats *out)
{
	if (!s->stream && s->final) { /* ended: its last counters and why */
		*out = *s->final;
		return 0;
	}
	if (!s->stream)
		return -ENOTCONN;
	rn_conn_get_stats(s->stream->conn, out);
	return 0;
}

void rn_stream_get_info(rn_stream *st, rn_stream_info *out)
{
	out->name = st->name;
	out->fd = __atomic_load_n(&st->sock->user_fd, __ATOMIC_RELAXED);
	out->server = st->server;
	out->created_ns = st->created_ns;
	pthread_mutex_lock(&st->sock->mu);
	out->local = st->sock->local;
	out->peer = st->sock->peer;
	pthread_mutex_unlock(&st->sock->mu);
	rn_conn_get_stats(st->conn, &out->cs);
}

static int g_pending, g_exit_mode;

/*
 * At exit (see drain_at_exit in ri2n_api.c), by mode:
 *   RN_EXIT_OWED   connections that still owe the peer bytes, a FIN, an ACK,
 *                  or are lingering: the ACK of the peer's FIN may have been
 *                  lost, and only a process still here can send it again when
 *                  the peer resends its FIN (what TCP's TIME_WAIT does in the
 *                  kernel); a linger lasts 1 s
 *   RN_EXIT_OPEN   connections whose peer has not closed its side yet
 *   RN_EXIT_RESET  reset those (nobody will answer them once we are gone),
 *                  then count what still has a RESET or ACK to send
 */
static void count_pending(rn_stream *st)
{
	int state = rn_conn_state(st->conn);

	if (g_exit_mode == RN_EXIT_OPEN) {
		g_pending += state == RN_ST_ESTABLISHED;
		return;
	}
	if (g_exit_mode == RN_EXIT_RESET && state == RN_ST_ESTABLISHED) {
		rn_conn_abort(st->conn, rn_now_ns());
		rn_engine_dirty(st);
		g_pending++;
		return;
	}

	if (state == RN_ST_LINGER) {
		g_pending++;
		return;
	}
	if (state == RN_ST_CLOSED) {
		g_pending += rn_conn_owes(st->conn); /* a last RESET to send */
		return;
	}
	if (state != RN_ST_ESTABLISHED)
		return;
	/* the user's bytes are not all read, sent and acknowledged with the FIN, or an ACK is owed */
	if (!st->user_eof || !st->fin_queued || rn_conn_owes(st->conn))
		g_pending++;
}

int rn_stream_cmd_pending(int mode)
{
	g_pending = 0;
	g_exit_mode = mode;
	rn_port_each_all(count_pending);
	return g_pending;
}

void rn_stream_forget_all(void)
{
	g_dirty = g_dirty_tail = g_turn = NULL;
	g_kick = NULL;
}
