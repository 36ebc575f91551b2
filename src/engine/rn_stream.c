/*
 * rn_stream.c - connections inside the engine: their life (made, connected,
 * ended, freed) and the data pump between the user's socketpair and the
 * core; the core's events are told in rn_stream_events.c.  Listeners and the connection budget are in
 * rn_accept.c, the socket commands in rn_cmd.c, the dirty list and the rail
 * sockets' reports in rn_stream_dirty.c (rn_stream_int.h joins them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
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
#include "rn_hpeer.h"
#include "rn_inline.h"
#include "rn_ev.h"
#include "rn_log.h"
#include "rn_pairname.h"
#include "rn_stream.h"
#include "rn_handover.h"
#include "rn_stream_int.h"
#include "rn_sys.h"

#define SERVICE_BUDGET 1024 /* datagrams a stream may send per turn */
#define PAIR_BUF (4 << 20)  /* engine-side socketpair buffer */

/*
 * The process's peers (rn_hpeer.h): every established stream joins the
 * rail monitor of its peer, so an idle one sends nothing of its own.
 */
static rn_hpeers g_peers;
static int g_peers_ready;
uint8_t *rn_stream_scratch;   /* one datagram or one chunk of user data */

/* ---- small helpers ---- */

void rn_stream_pair_buf(int fd)
{
	int v = PAIR_BUF;

	if (rn_sys_setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) < 0)
		rn_sys_setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

static void name_peer(rn_stream *st, rn_addr a)
{
	rn_addrport_str(a, st->name, sizeof(st->name));
}

rn_hsa rn_stream_sin(rn_addr a)
{
	rn_hsa sa;

	rn_hsock_sa_of(&sa, a);
	return sa;
}

/* ---- stream life ---- */

/* An established stream joins its peer's rail monitor (once: a failed join costs nothing). */
static void join_peer(rn_stream *st, uint64_t now)
{
	if (st->peer_tried || rn_conn_state(st->conn) != RN_ST_ESTABLISHED)
		return;
	st->peer_tried = 1;
	if (!g_peers_ready && rn_hpeers_init(&g_peers) == 0)
		g_peers_ready = 1;
	if (g_peers_ready)
		rn_hpeer_join(&g_peers, st->conn, now);
}

/* Out of its peer before it goes: a member that becomes the keeper arms its timers now. */
static void leave_peer(rn_stream *st)
{
	rn_conn *keeper = g_peers_ready ? rn_hpeer_leave(&g_peers, st->conn) : NULL;

	if (keeper && rn_conn_user(keeper))
		rn_engine_dirty(rn_conn_user(keeper));
}

/*
 * A rail appeared (rn_netlink.c), or the peer's moved (another process
 * took the connection over: a RAILS from there, rn_conn_rails.c): its paths
 * are no longer its peer's monitor's; it joins the one of its rails now.
 * At once, whoever drives it (the engine or a thread inline): left in the
 * old peer it would go on keeping it, or muted by it, with verdicts about
 * other paths than its own.
 */
static void follow_peer(rn_stream *st, uint64_t now)
{
	if (rn_conn_peer_of(st->conn) && !rn_peer_matches(rn_conn_peer_of(st->conn), st->conn)) {
		leave_peer(st);
		st->peer_tried = 0;
	}
	join_peer(st, now);
}

/* DATA of st's after its peer's idleness: the keeper's keepalives quicken now. */
static void wake_keeper(rn_stream *st)
{
	rn_conn *keeper = rn_peer_take_wake(st->conn);

	if (keeper && rn_conn_user(keeper))
		rn_engine_dirty(rn_conn_user(keeper));
}

static void on_timer(rn_etimer *t, uint64_t now);
static void on_user_readable(evutil_socket_t fd, short what, void *arg);
static void on_user_writable(evutil_socket_t fd, short what, void *arg);
rn_stream *rn_stream_new(rn_conn *c, rn_port *p, rn_sock *s)
{
	rn_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->conn = c;
	st->port = p;
	st->sock = s;
	st->fd = s->eng_fd;
	st->id = rn_conn_id(c);
	rn_etimer_prep(&st->tm, on_timer);
	st->rev = event_new(rn_engine_base(), st->fd, EV_READ | EV_PERSIST, on_user_readable, st);
	st->wev = event_new(rn_engine_base(), st->fd, EV_WRITE, on_user_writable, st);
	if (!st->rev || !st->wev || rn_port_add(p, st, st->id)) {
		if (st->rev)
			rn_ev_free(st->rev);
		if (st->wev)
			rn_ev_free(st->wev);
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
	int d = rn_sys_fcntl(__atomic_load_n(&s->user_fd, __ATOMIC_RELAXED), F_DUPFD_CLOEXEC, 0);

	if (d >= 0) {
		if (rn_sys_fstat(d, &sb) == 0 && sb.st_ino == s->ino && sb.st_dev == s->dev) {
			if (rn_sys_send(d, "!", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* full: then bytes are already waiting, which does the same */
			}
		}
		rn_sys_close(d);
	}
}

/*
 * A's send buffer gets the size it had before ri2n_socket shrank it (size:
 * what SO_SNDBUF read then), through a duplicate of the user's descriptor
 * taken only if it still is the same socket; a user who closed it has no
 * use for the buffer.
 */
static void grow_user_sndbuf(rn_sock *s, int size)
{
	int half = size / 2; /* the kernel doubles what it is given (socket(7)) */
	struct stat sb;
	int d = rn_sys_dup_high(__atomic_load_n(&s->user_fd, __ATOMIC_RELAXED));

	if (d < 0)
		return;
	if (rn_sys_fstat(d, &sb) == 0 && sb.st_ino == s->ino && sb.st_dev == s->dev &&
	    rn_sys_setsockopt(d, SOL_SOCKET, SO_SNDBUF, &half, sizeof(half)) < 0) {
		/* a smaller buffer: only slower */
	}
	rn_sys_close(d);
}

static void close_user_end(rn_stream *st, int reset)
{
	if (st->fd < 0)
		return;
	if (reset)
		close_with_reset(st);
	rn_ev_del(st->rev);
	rn_ev_del(st->wev);
	/* not connected yet: the close watch is on this end too; off the loop before
	 * the close frees the number for another thread's next socket */
	if (st->sock->watch_ev) {
		rn_ev_free(st->sock->watch_ev);
		st->sock->watch_ev = NULL;
	}
	rn_fd_close(st->fd);
	st->fd = -1;
	st->sock->eng_fd = -1;
	/*
	 * what the budget counts (the engine's descriptor, the rings) is gone
	 * or going: a lingering connection must not keep a busy server from
	 * accepting (a second of linger at 9,000 connections a second)
	 */
	rn_stream_budget_give(st);
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
		__atomic_store_n(&s->kind, RN_SK_DEAD, __ATOMIC_RELEASE);
		if (err && err != RN_ERR_ABORTED) {
			/* SO_ERROR tells why: ECONNREFUSED, ETIMEDOUT, ECONNRESET */
			s->dead_error = rn_errno(err);
			s->so_error = s->dead_error;
		}
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void stream_release(rn_stream *st);

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
	stream_release(st);
}

/*
 * Another process took st over (rn_handover.c), with end B: st goes
 * without a word to the peer or the user, its id remembered so that what
 * still arrives for it is dropped, not answered with a reset.
 */
void rn_stream_moved(rn_stream *st, uint64_t now)
{
	rn_sock *s = st->sock;

	rn_handover_moved(st->port, st->id, now);
	if (__atomic_load_n(&s->queued, __ATOMIC_RELAXED) && st->port->lsock)
		rn_stream_unqueue(st->port->lsock, s);
	pthread_mutex_lock(&s->mu);
	s->stream = NULL;
	__atomic_store_n(&s->kind, RN_SK_DEAD, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	close_user_end(st, 0); /* our copy of B: the taker holds its own */
	stream_release(st);
}

/* What every stream's end frees, after its user's end is dealt with. */
static void stream_release(rn_stream *st)
{
	rn_sock *s = st->sock;

	if (s->watch_ev) {
		rn_ev_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	rn_stream_undirty(st);
	rn_inline_unhold(st);
	leave_peer(st);
	rn_port_remove(st->port, st, st->id);
	rn_port_unref(st->port);
	rn_etimer_set(&st->tm, UINT64_MAX);
	rn_ev_free(st->rev);
	rn_ev_free(st->wev);
	rn_conn_del(st->conn);
	rn_stream_budget_give(st);
	st->gone = 1;
	rn_sock_unref(s); /* the engine's reference */
	free(st);
}

int rn_stream_local_of(const rn_conn_stats *cs, rn_addr peer, rn_hsa *out)
{
	for (int k = 0; k < cs->npaths; k++) {
		if (rn_addr_same_host(&cs->rail[k].remote, &peer)) {
			*out = rn_stream_sin(cs->rail[k].local);
			return 1;
		}
	}
	return 0;
}

/* The client's handshake finished: the user's descriptor opens for writing. */
void rn_stream_connected(rn_stream *st)
{
	rn_sock *s = st->sock;
	rn_conn_stats cs;
	rn_hsa local, peer;
	int sndbuf;

	st->connected = 1;
	rn_conn_get_stats(st->conn, &cs);
	/* the state before the junk goes: a user woken by writability must find it */
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&s->kind, RN_SK_CONNECTED, __ATOMIC_RELEASE);
	rn_stream_local_of(&cs, rn_conn_peer(st->conn), &s->local);
	s->peer = rn_stream_sin(rn_conn_peer(st->conn));
	local = s->local;
	peer = s->peer;
	sndbuf = s->sndbuf;
	s->sndbuf = 0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	rn_pairname_set(st->fd, &local, &peer); /* for a process the descriptor is handed to */
	/*
	 * Its size back first: writable then, A takes a whole buffer's worth at
	 * once, after the junk (discarded just below; the fast path waits for that)
	 */
	if (sndbuf)
		grow_user_sndbuf(s, sndbuf);
	/* discard the bytes that held the user's descriptor unwritable */
	while (st->junk_left > 0) {
		ssize_t n = rn_sys_recv(st->fd, rn_stream_scratch, st->junk_left < TAKE_CHUNK ? st->junk_left :
								     TAKE_CHUNK, MSG_DONTWAIT);

		if (n <= 0)
			break;
		st->junk_left -= (size_t)n;
	}
	/*
	 * The close watch is done with.  An inline thread that read the
	 * handshake's last datagram for another connection may not touch
	 * libevent: the engine frees it at its next service of the stream (the
	 * watch itself ignores a close once the socket is connected).
	 */
	if (s->watch_ev && !rn_host_inline()) {
		rn_ev_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	rn_info("connected to %s over %d rail%s", st->name, cs.npaths, cs.npaths == 1 ? "" : "s");
	rn_stream_post(st, RI2N_EVENT_CONNECTED, -1, 0, "connected");
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
			rn_sys_shutdown(st->fd, SHUT_WR); /* the user reads a clean end of stream */
			st->eof_sent = 1;
			st->pair_rx = 1;
			return;
		}
		if (n < 0) { /* the connection died: the user reads an error, never EOF */
			record_end(st); /* SO_ERROR set before the close wakes the user */
			close_user_end(st, 1);
			return;
		}
		w = rn_sys_send(st->fd, d, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			rn_conn_consume(st->conn, now, (size_t)w);
			st->pair_rx = 1;
			continue;
		}
		if (errno == EAGAIN) {
			rn_ev_add(st->wev, NULL);
			return;
		}
		/* EPIPE / ECONNRESET: the user closed and nobody will read this */
		rn_conn_abort(st->conn, now);
		close_user_end(st, 0);
		return;
	}
}

/* Whether the user closed its end for good (POLLHUP), not just shut down writing. */
int rn_stream_user_gone(rn_stream *st)
{
	struct pollfd pf = { .fd = st->fd };

	return rn_sys_ppoll(&pf, 1, &(struct timespec){ 0, 0 }) == 1 && (pf.revents & POLLHUP);
}

static void user_closed(rn_stream *st, uint64_t now)
{
	rn_engine_churn();
	st->user_eof = 1;
	rn_ev_del(st->rev);
	st->rd_on = 0;
	if (__atomic_load_n(&st->sock->abort_close, __ATOMIC_RELAXED) && rn_stream_user_gone(st)) {
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

	if (st->fd < 0 || st->user_eof || !st->connected || !rn_conn_takes_bytes(st->conn)) {
		if (st->rd_on) {
			rn_ev_del(st->rev);
			st->rd_on = 0;
		}
		return;
	}
	while ((space = rn_conn_write_space(st->conn)) > 0) {
		ssize_t n = rn_sys_recv(st->fd, rn_stream_scratch, space < TAKE_CHUNK ? space : TAKE_CHUNK,
				 MSG_DONTWAIT);

		if (n > 0) {
			rn_conn_write(st->conn, now, rn_stream_scratch, (size_t)n);
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
		rn_ev_add(st->rev, NULL);
		st->rd_on = 1;
	} else if (space == 0 && st->rd_on) {
		rn_ev_del(st->rev);
		st->rd_on = 0;
	}
}

/* Datagrams the core wants sent go to the port's queues. */
int rn_stream_flush(rn_stream *st, uint64_t now)
{
	rn_port *p = st->port;
	int sent = 0;

	RN_OWNS_HOST();
	while (sent < SERVICE_BUDGET) {
		rn_tx tx;
		uint32_t w = rn_port_writable(p);
		ssize_t n;

		if (!w)
			break;
		/* built in the queue's spare buffer: queueing swaps it in, no copy */
		n = rn_conn_write_pkt(st->conn, now, w, rn_hset_spare(&p->hs), p->dgram, &tx);
		if (n <= 0)
			break;
		rn_port_queue(p, tx.local_rail, st, tx.to, (size_t)n); /* sends a full queue */
		sent++;
	}
	rn_port_flush(p);
	return sent == SERVICE_BUDGET;
}

void rn_stream_arm(rn_stream *st, uint64_t exp)
{
	if (exp != st->tm.at)
		rn_etimer_set(&st->tm, exp);
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
		if (rn_stream_user_gone(st))
			st->orphan_ns = now;
		return;
	}
	if (now - st->orphan_ns >= st->sock->cfg.dead_peer_ns) {
		rn_info("connection %s: closed by this side, the peer never closed: reset", st->name);
		rn_conn_abort(st->conn, now);
	}
}

void rn_stream_service(rn_stream *st, uint64_t now)
{
	int more;

	RN_OWNS_HOST();
	rn_stream_answered(st, now); /* answered through another path than rn_stream_input */
	if (st->connected && st->sock->watch_ev) { /* connected inline (see rn_stream_connected()) */
		rn_ev_free(st->sock->watch_ev);
		st->sock->watch_ev = NULL;
	}
	/*
	 * Its record may have gone to a prefork worker: the engine's copy of A
	 * must go.  Only a listener another process may hold has such readers
	 * (else its records are this process's accepts', which dequeue them).
	 */
	if (__atomic_load_n(&st->sock->queued, __ATOMIC_RELAXED) && st->port->lsock &&
	    __atomic_load_n(&st->port->lsock->shared, __ATOMIC_RELAXED))
		rn_stream_prune_taken(st->port->lsock);

	follow_peer(st, now);
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
	wake_keeper(st);
	/* a lingering or closed keeper keeps nothing judged: another member takes over now */
	if (rn_conn_state(st->conn) >= RN_ST_LINGER) {
		leave_peer(st);
		if (st->taken == 1) { /* its life, for the next accepts' choice (rn_handover_want) */
			rn_handover_ended(now - st->created_ns);
			st->taken = 2;
		}
	}
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
	rn_stream_arm(st, rn_conn_expiry(st->conn));
}

void rn_stream_input(rn_stream *st, int idx, rn_addr from, const uint8_t *d, size_t len,
		     uint64_t now)
{
	rn_conn_recv(st->conn, now, idx, from, d, len);
	follow_peer(st, now);
	rn_stream_answered(st, now);
	rn_engine_dirty(st);
}

void rn_stream_answered(rn_stream *st, uint64_t now)
{
	if (!st->answered)
		return;
	st->answered = 0;
	/*
	 * The COOKIE_ECHO first: the user's side of connecting costs a while.
	 * And on the wire before connect returns: early data the program
	 * writes next, from a thread whose send is not held for a leave of
	 * the lock, must not overtake it (the listener, not knowing the id
	 * yet, would drop it, and it would go again only an RTO later).
	 */
	rn_stream_flush(st, now);
	rn_port_flush_now(st->port);
	if (!st->connected && rn_conn_state(st->conn) != RN_ST_CLOSED)
		rn_stream_connected(st);
}

void rn_stream_fire_timer(rn_stream *st, uint64_t now)
{
	rn_etimer_set(&st->tm, UINT64_MAX);
	if (rn_conn_verdict_pending(st->conn, now))
		rn_port_read(st->port); /* the suspect rail's packets may wait in its socket */
	now = rn_core_time(now); /* the caller's may predate datagrams read since */
	rn_conn_on_timer(st->conn, now);
	if (rn_conn_id(st->conn) != st->id) { /* the handshake restarted: a new id */
		rn_port_remove(st->port, st, st->id);
		st->id = rn_conn_id(st->conn);
		rn_port_add(st->port, st, st->id);
	}
	rn_stream_service(st, now);
}

/* The engine's timer (rn_etimer.c: under the host lock, the dirty serviced after). */
static void on_timer(rn_etimer *t, uint64_t now)
{
	rn_stream *st = (rn_stream *)((char *)t - offsetof(rn_stream, tm));

	(void)now;
	/* datagrams an inline thread left unread come before the timer's verdicts */
	rn_port_catch_up(st->port);
	rn_stream_fire_timer(st, rn_now_ns());
}

static void on_user_readable(evutil_socket_t fd, short what, void *arg)
{
	rn_stream *st = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	st->user_ready = 1;
	rn_stream_service(st, rn_now_ns());
	rn_host_unlock();
}

static void on_user_writable(evutil_socket_t fd, short what, void *arg)
{
	rn_stream *st = arg;

	(void)fd;
	(void)what;
	rn_host_lock();
	rn_stream_service(st, rn_now_ns());
	rn_host_unlock();
}
