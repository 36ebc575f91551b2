/*
 * rn_inline.c - application threads driving their connections themselves
 * (see rn_inline.h): one connection served inline, epoll
 * readiness from the core, the descriptor.  Waits are in rn_inline_wait.c,
 * sending and receiving in rn_inline_io.c.
 *
 * Every call below runs under the host lock, taken with
 * rn_host_enter_inline(): while it is held the engine thread runs none of
 * its callbacks.  Calls on the user's descriptor are raw system calls, so
 * that an interposer (ri2n-run's shim, which routes read/recv here) never
 * sees them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rn_sys.h"
#include "rn_inline.h"
#include "rn_knobs.h"
#include "rn_etimer.h"
#include "rn_ev.h"
#include "rn_log.h"
#include "rn_port.h"
#include "rn_stream.h"
#include "rn_inline_int.h"
#include "rn_sys.h"

#define TAKE_CHUNK (64 << 10) /* bytes moved from the descriptor into the core at once */
#define TIMER_ROUNDS 4        /* due core timers run inline before the engine is asked */

static struct {
	struct rn_stream *held;  /* streams whose bytes a wait reported from the core */
	/*
	 * Fires when the oldest of them may be unread too long: those go to
	 * their descriptors then, whatever their connections' own timers (one
	 * with nothing to send or resend may have none).
	 */
	rn_etimer held_tm;
	uint8_t buf[TAKE_CHUNK];
} g;

static void held_fire(rn_etimer *t, uint64_t now);

/* O(1): an event loop over a thousand connections reads (and so unholds) every one. */
static void held_remove(struct rn_stream *st)
{
	if (st->held_pprev) {
		*st->held_pprev = st->held_next;
		if (st->held_next)
			st->held_next->held_pprev = st->held_pprev;
	}
	st->held = 0;
	st->held_next = NULL;
	st->held_pprev = NULL;
}

void rn_inline_unhold(struct rn_stream *st)
{
	RN_OWNS_HOST();
	if (st->held)
		held_remove(st);
}

void rn_inline_forget(void)
{
	rn_inline_wait_forget();
	g.held = NULL;
	rn_etimer_prep(&g.held_tm, held_fire); /* the parent's timers are gone (rn_etimer_forget) */
}

int rn_inline_busy_default(void)
{
	static int v = -2; /* read once; threads racing to it read the same */
	int x = __atomic_load_n(&v, __ATOMIC_RELAXED);

	if (x == -2) {
		const char *e = rn_proc_text(RN_PROC_BUSY_POLL_US);
		int64_t l = RN_BUSY_AUTO;

		if (!e || strcmp(e, "auto") != 0) /* else a number of the table's range */
			rn_proc_int(RN_PROC_BUSY_POLL_US, &l);
		x = l < 0 ? RN_BUSY_AUTO : l > RN_BUSY_POLL_MAX_US ? RN_BUSY_POLL_MAX_US : (int)l;
		__atomic_store_n(&v, x, __ATOMIC_RELAXED);
	}
	return x;
}

static RN_TLS rn_spin t_spin; /* this thread's learnt window */

int64_t rn_spin_budget(int busy_us)
{
	return rn_spin_window(&t_spin, busy_us);
}

void rn_spin_learn(int busy_us, int64_t waited_ns, int caught)
{
	rn_spin_update(&t_spin, busy_us, waited_ns, caught);
}

/* ---- one connection, inline ---- */

int rn_inline_ok_to_send(const struct rn_stream *st)
{
	/* early data too (rn_conn_set_early): after the INIT_ACK, behind the COOKIE_ECHO */
	return st && st->fd >= 0 && st->connected && !st->user_eof && !st->fin_queued &&
	       st->junk_left == 0 && rn_conn_takes_bytes(st->conn);
}

int rn_inline_ok_to_recv(const struct rn_stream *st)
{
	return st && st->fd >= 0 && st->connected && !st->eof_sent;
}

/*
 * Sends what the core owes, runs timers already due, sets the stream's
 * timer for the next.  Returns 1 if the engine must look at the stream (not established
 * or ending, more to send than one turn's budget, bytes in the core nobody
 * takes); then nothing was done if it is not established.
 */
static int service_x(struct rn_stream *st, uint64_t now, int bytes_count);

int rn_inline_service(struct rn_stream *st, uint64_t now)
{
	return service_x(st, now, 1);
}

/*
 * Whether bytes may reach the descriptor past the fast path: a plain
 * write, or a signal handler's (rn_sock.plain_writes, desc_first).
 */
static int pair_written(const rn_sock *s)
{
	return __atomic_load_n(&s->plain_writes, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&s->desc_first, __ATOMIC_ACQUIRE);
}

/* The same; bytes_count 0: bytes waiting in the core are no reason (an epoll wait reported them). */
static int service_x(struct rn_stream *st, uint64_t now, int bytes_count)
{
	const uint8_t *d;
	uint64_t exp;
	int more;

	RN_OWNS_HOST();
	if (!st->connected || st->fd < 0)
		return 1;
	if (rn_conn_state(st->conn) != RN_ST_ESTABLISHED) {
		/*
		 * Handshakes, endings: the engine's (they touch events, ids).  But
		 * early data goes at once: sending it touches neither (its timers
		 * wait for the COOKIE_ACK, which the engine takes).
		 */
		if (rn_conn_state(st->conn) == RN_ST_COOKIE_SENT && rn_conn_takes_bytes(st->conn))
			return rn_stream_flush(st, now);
		return 1;
	}
	more = 0;
	/*
	 * Bytes written into the descriptor (a plain writer, or a fast one that
	 * ran out of room) move up as ACKs make room: here if the engine is not
	 * watching the descriptor (it stops while the ring is full) or a fast
	 * writer left some; and the engine is asked to watch it again.  A
	 * descriptor only fast sends write (ri2n-run's) holds none: no receive
	 * that finds it empty, for each connection an inline call serves.
	 */
	if (rn_inline_ok_to_send(st) && (st->pair_tx || (!st->rd_on && pair_written(st->sock))) &&
	    rn_inline_take_pair(st, now) < 0)
		more = 1; /* the user's end of stream, or an error: the engine's */
	if (rn_inline_ok_to_send(st) && !st->rd_on && rn_conn_write_space(st->conn) > 0)
		more = 1;
	more |= rn_stream_flush(st, now);
	/* the deadlines are worked out once a pass (each look walks every timer and rail) */
	exp = rn_conn_expiry(st->conn);
	for (int i = 0; i < TIMER_ROUNDS && exp <= now; i++) {
		if (rn_conn_verdict_pending(st->conn, now)) {
			rn_port_read(st->port); /* the suspect rail's packets may wait in its socket */
			now = rn_core_time(now);
		}
		rn_conn_on_timer(st->conn, now);
		more |= rn_stream_flush(st, now);
		exp = rn_conn_expiry(st->conn);
	}
	rn_stream_arm(st, exp);
	return more || rn_conn_state(st->conn) != RN_ST_ESTABLISHED ||
	       (bytes_count && rn_conn_peek(st->conn, &d) != RN_ERR_AGAIN);
}

/*
 * A connection whose datagrams an inline thread read for someone else:
 * its bytes go into its descriptor (where poll, epoll or a read finds
 * them), what it owes goes out; the rest is the engine's.
 */
static void serve_other(struct rn_stream *st, void *ctx)
{
	uint64_t now = rn_now_ns();

	(void)ctx;
	RN_OWNS_HOST();
	if (rn_inline_ok_to_recv(st) && rn_conn_state(st->conn) == RN_ST_ESTABLISHED)
		rn_inline_deliver_to_pair(st, now);
	if (rn_inline_service(st, now))
		rn_engine_dirty(st);
}

/*
 * The end of an inline call: every connection touched is served (bytes left
 * in the core go to the descriptor, where a plain read or poll finds them),
 * and the engine is woken if anything is left for it.
 */
void rn_inline_finish(rn_sock *s)
{
	struct rn_stream *st = s ? s->stream : NULL;

	if (st) {
		/* a stream an epoll wait reports keeps its bytes for the next read */
		if (service_x(st, rn_now_ns(), !st->held))
			rn_engine_dirty(st);
		else
			rn_stream_undirty(st);
	}
	rn_stream_each_dirty(serve_other, NULL);
	if (rn_stream_dirty_pending())
		rn_host_kick();
}

/* What rn_inline_serve_others passes on: the caller's stream, and whether it was marked. */
struct others {
	struct rn_stream *self;
	int self_marked;
};

static void serve_not_self(struct rn_stream *st, void *ctx)
{
	struct others *o = ctx;

	if (st == o->self)
		o->self_marked = 1;
	else
		serve_other(st, NULL);
}

void rn_inline_serve_others(struct rn_stream *self)
{
	struct others o = { self, 0 };

	RN_OWNS_HOST();
	if (!rn_stream_dirty_pending())
		return;
	rn_stream_each_dirty(serve_not_self, &o);
	if (rn_stream_dirty_pending())
		rn_host_kick(); /* more than one turn's worth: the engine goes on with them */
	if (o.self_marked)
		rn_engine_dirty(self); /* as it was: rn_inline_finish serves it */
}

/* ---- epoll readiness from the core (ri2n-run) ---- */

/*
 * A wait being ended: where its reports go (serve_watch's context).  An
 * epoll wait names its set (ep_id); a poll or select wait its sockets asked
 * for bytes (socks[0..ns), in[i] set for those reported).
 */
struct wait_reports {
	uint64_t ep_id;
	rn_ready *out;
	int max, n;
	rn_sock *const *socks;
	int ns;
	uint8_t *in;
};

int rn_inline_epoll_note(rn_sock *s, uint64_t ep_id, uint32_t events, uint64_t data,
			 rn_railref *out, int max)
{
	int n = 0;

	rn_host_lock();
	if (events) {
		s->ep_id = ep_id;
		s->ep_events = events;
		s->ep_data = data;
	} else if (s->ep_id == ep_id) {
		s->ep_id = 0;
		s->ep_events = 0;
	}
	if (out && max > 0)
		n = rn_inline_rails_of(s, out, max);
	rn_host_unlock();
	return n;
}

/*
 * Whether the stream's bytes can be reported to a wait straight from the
 * core: its socket open, nothing of it in the descriptor, bytes waiting.
 */
static int poll_reportable(const struct rn_stream *st)
{
	const rn_sock *s = st ? st->sock : NULL;
	const uint8_t *d;

	return s && !__atomic_load_n(&s->closed, __ATOMIC_ACQUIRE) && rn_inline_ok_to_recv(st) &&
	       !st->pair_rx && rn_conn_state(st->conn) == RN_ST_ESTABLISHED &&
	       rn_conn_peek(st->conn, &d) > 0;
}

/*
 * Whether the stream's bytes can be reported to epoll set ep_id straight
 * from the core: registered there for EPOLLIN (not one-shot: the kernel
 * would disarm it), nothing of it in the descriptor, bytes waiting.
 */
static int reportable(const struct rn_stream *st, uint64_t ep_id)
{
	const rn_sock *s = st->sock;

	return ep_id && s && s->ep_id == ep_id && (s->ep_events & EPOLLIN) &&
	       !(s->ep_events & EPOLLONESHOT) && poll_reportable(st);
}

/* Whether st's held bytes are still for its program's read (not RN_HELD_NS unread). */
static int young(const struct rn_stream *st)
{
	return rn_now_ns() - st->held_ns < RN_HELD_NS;
}

/*
 * The held timer: streams unread for RN_HELD_NS leave the list, and the
 * engine, servicing them, moves their bytes to the descriptor (deliver in
 * rn_stream.c); it is set again for the oldest left.
 */
static void held_fire(rn_etimer *t, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	(void)t;
	(void)now;
	RN_OWNS_HOST();
	for (struct rn_stream *st = g.held, *after; st; st = after) {
		after = st->held_next;
		if (young(st)) {
			if (st->held_ns + RN_HELD_NS < next)
				next = st->held_ns + RN_HELD_NS;
			continue;
		}
		held_remove(st);
		rn_engine_dirty(st);
	}
	rn_etimer_set(&g.held_tm, next);
}

static void hold(struct rn_stream *st)
{
	RN_OWNS_HOST();
	if (st->held)
		return;
	st->held_ns = rn_now_ns();
	st->held = 1;
	st->held_next = g.held;
	st->held_pprev = &g.held;
	if (g.held)
		g.held->held_pprev = &st->held_next;
	g.held = st;
	if (!g.held_tm.fn)
		rn_etimer_prep(&g.held_tm, held_fire);
	if (g.held_tm.at == UINT64_MAX) /* else it is due before this one */
		rn_etimer_set(&g.held_tm, st->held_ns + RN_HELD_NS);
}

/* Whether a poll wait asked for st's bytes. */
static int polled(const struct wait_reports *w, const struct rn_stream *st)
{
	for (int i = 0; i < w->ns; i++)
		if (w->socks[i] && w->socks[i]->stream == st)
			return 1;
	return 0;
}

/* A connection whose datagrams the wait read: reported, else as serve_other. */
static void serve_watch(struct rn_stream *st, void *ctx)
{
	struct wait_reports *w = ctx;

	if ((w->n < w->max && reportable(st, w->ep_id)) ||
	    (w->ns && polled(w, st) && poll_reportable(st))) {
		if (!w->ns)
			w->out[w->n++] = (rn_ready){ EPOLLIN, st->sock->ep_data };
		hold(st);
		if (service_x(st, rn_now_ns(), 0))
			rn_engine_dirty(st);
		return;
	}
	serve_other(st, NULL);
}

/*
 * Under the host lock: which of w's sockets have bytes held in the core
 * (w->in); one held before whose bytes are gone, or went to the
 * descriptor, is held no more (what is left goes there too).
 */
static int poll_mark(struct wait_reports *w)
{
	int k = 0;

	for (int i = 0; i < w->ns; i++) {
		struct rn_stream *st = w->socks[i] ? w->socks[i]->stream : NULL;

		w->in[i] = 0;
		if (!st || !st->held)
			continue;
		if (poll_reportable(st) && young(st)) {
			w->in[i] = 1; /* level-triggered: until read */
			k++;
			continue;
		}
		held_remove(st);
		serve_other(st, NULL);
	}
	return k;
}

static void watch_end(void **h, int n, const uint8_t *ready, struct wait_reports *w)
{
	uint64_t now;

	rn_host_enter_inline();
	now = rn_now_ns();
	for (int i = 0; i < n; i++) {
		rn_usock *u = h[i];

		if (!u)
			continue;
		rn_port_wait_end(u->port, now);
		if (ready[i] && u->fd >= 0)
			rn_port_read_some(u->port, 1u << u->idx);
	}
	rn_stream_each_dirty(serve_watch, w); /* neither epoll set nor poll sockets: serve_other */
	if (w->ns)
		poll_mark(w);
	rn_inline_finish(NULL);
	for (int i = 0; i < n; i++)
		if (h[i])
			rn_port_unref(((rn_usock *)h[i])->port);
	rn_host_leave_inline();
}

void rn_inline_watch_end(void **h, int n, const uint8_t *ready, uint64_t ep_id, rn_ready *out,
			 int max, int *nout)
{
	struct wait_reports w = { .ep_id = ep_id, .out = out, .max = max };

	watch_end(h, n, ready, &w);
	if (nout)
		*nout = w.n;
}

void rn_inline_poll_end(void **h, int n, const uint8_t *ready, rn_sock *const *s, int ns,
			uint8_t *in)
{
	struct wait_reports w = { .socks = s, .ns = ns, .in = in };

	watch_end(h, n, ready, &w);
}

int rn_inline_poll_held(rn_sock *const *s, int ns, uint8_t *in)
{
	struct wait_reports w = { .socks = s, .ns = ns, .in = in };
	int k;

	rn_host_enter_inline();
	k = poll_mark(&w);
	rn_inline_finish(NULL);
	rn_host_leave_inline();
	return k;
}

int rn_inline_held(uint64_t ep_id, rn_ready *out, int max)
{
	int n = 0;

	rn_host_enter_inline();
	for (struct rn_stream *st = g.held, *after; st; st = after) {
		after = st->held_next;
		if (st->sock && st->sock->ep_id == ep_id && !(st->sock->ep_events & EPOLLET) &&
		    reportable(st, ep_id) && young(st) && n < max) {
			out[n++] = (rn_ready){ EPOLLIN, st->sock->ep_data }; /* level-triggered */
			continue;
		}
		if (st->sock && st->sock->ep_id == ep_id && reportable(st, ep_id) && young(st))
			continue; /* edge-triggered, or no room: still held */
		/*
		 * Another set's (a thread of its own, memcached's): its waits
		 * report it, the held timer ends it if nobody does.  Moving its
		 * bytes to the descriptor here made each thread's wait push the
		 * others' into their socketpairs.
		 */
		if (st->sock && st->sock->ep_id && st->sock->ep_id != ep_id)
			continue;
		/*
		 * read, no longer watched there, or unread too long (a reader
		 * ri2n does not see): what is left goes to the descriptor
		 */
		held_remove(st);
		if (st->sock && (st->sock->ep_id != ep_id || reportable(st, ep_id)))
			serve_other(st, NULL);
	}
	rn_inline_finish(NULL);
	rn_host_leave_inline();
	return n;
}

void rn_inline_to_descriptor(rn_sock *s)
{
	rn_host_enter_inline();
	if (rn_inline_ok_to_recv(s->stream))
		rn_inline_deliver_to_pair(s->stream, rn_now_ns());
	rn_inline_finish(s);
	rn_host_leave_inline();
}

int rn_inline_connect(rn_sock *s, const rn_hsa *a)
{
	struct rn_stream *st;
	uint64_t now;
	int rc;

	/*
	 * Only if the lock is free: threads connecting at once (or a busy
	 * engine) would queue on it one by one, where the engine takes their
	 * connects in one turn.
	 */
	if (!rn_host_try_inline())
		return RN_CMD_ENGINE_ONLY;
	rc = rn_stream_cmd_connect(s, a);
	st = s->stream;
	if (rc == 0 && st) {
		/*
		 * The INIT goes out from here, its resend on the engine's timer;
		 * the rest of the handshake is the engine's, woken by the INIT_ACK.
		 */
		now = rn_core_time(rn_now_ns());
		if (!rn_stream_flush(st, now))
			rn_stream_undirty(st);
		rn_stream_arm(st, rn_conn_expiry(st->conn));
	}
	rn_inline_finish(NULL);
	rn_host_leave_inline();
	return rc;
}

void rn_inline_closed(rn_sock *s)
{
	__atomic_store_n(&s->closed, 1, __ATOMIC_RELEASE);
	rn_host_lock();
	/* the kernel dropped it from the program's epoll sets: no report may name it now */
	s->ep_id = 0;
	s->ep_events = 0;
	if (s->stream && s->stream->port->nwait)
		rn_port_wake_sock(s->stream->port, s);
	rn_host_unlock();
}

/* ---- the descriptor ---- */


/*
 * Bytes the user wrote into the descriptor (the plain path) go into the core
 * before any inline byte.  1: none left there; 0: the core is full first;
 * -1: the user shut the descriptor down for writing (the plain path says so).
 */
int rn_inline_take_pair(struct rn_stream *st, uint64_t now)
{
	for (;;) {
		size_t space = rn_conn_write_space(st->conn);
		ssize_t n;

		if (space == 0)
			return 0;
		n = rn_sys_recv(st->fd, g.buf, space < TAKE_CHUNK ? space : TAKE_CHUNK, MSG_DONTWAIT);
		if (n > 0) {
			rn_conn_write(st->conn, now, g.buf, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 1;
		return -1;
	}
}


/* The core's bytes go into the descriptor (for a call the inline path does not serve). */
void rn_inline_deliver_to_pair(struct rn_stream *st, uint64_t now)
{
	for (;;) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(st->conn, &d), w;

		if (n <= 0)
			return;
		w = rn_sys_send(st->fd, d, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0)
			return;
		rn_conn_consume(st->conn, now, (size_t)w);
		st->pair_rx = 1;
	}
}
