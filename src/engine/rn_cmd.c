/*
 * rn_cmd.c - the engine's side of the socket commands (create, bind,
 * listen, connect, stats), the watch on sockets not connected yet, and the
 * count of what is still owed at exit.
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
#include "rn_handover.h"
#include "rn_inline.h"
#include "rn_ev.h"
#include "rn_knobs.h"
#include "rn_log.h"
#include "rn_stream.h"
#include "rn_stream_int.h"
#include "rn_sys.h"

static void watched_closed(rn_sock *s)
{
	if (s->watch_ev) {
		rn_ev_free(s->watch_ev);
		s->watch_ev = NULL;
	}
	if (s->stream) { /* connecting: give up */
		rn_conn_abort(s->stream->conn, rn_now_ns());
		rn_stream_service(s->stream, rn_now_ns());
		return;
	}
	if (s->port) {
		if (s->port->lsock == s) {
			free(s->port->lis);
			s->port->lis = NULL;
			s->port->lsock = NULL;
			rn_stream_drop_accept_queue(s);
			rn_sock_unref(s); /* the listener's reference */
		}
		if (s->port->owner == s)
			s->port->owner = NULL;
		rn_port_unref(s->port);
		s->port = NULL;
	}
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&s->kind, RN_SK_DEAD, __ATOMIC_RELEASE);
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
		ssize_t n = rn_sys_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0 || (n < 0 && errno == EAGAIN))
			return;
	}
	rn_host_lock();
	if (s->stream && s->stream->connected) {
		/* connected by an inline thread, which left this watch to us: the stream's now */
		rn_ev_free(s->watch_ev);
		s->watch_ev = NULL;
		rn_engine_dirty(s->stream);
		rn_stream_service_dirty();
		rn_host_unlock();
		return;
	}
	watched_closed(s);
	rn_stream_service_dirty();
	rn_host_unlock();
}

static int watch(rn_sock *s, short what)
{
	if (s->watch_ev)
		rn_ev_free(s->watch_ev);
	s->watch_ev = event_new(rn_engine_base(), s->eng_fd, what | EV_PERSIST, on_watch, s);
	if (!s->watch_ev)
		return -ENOMEM;
	rn_ev_add(s->watch_ev, NULL);
	return 0;
}

/* ---- commands ---- */

static int create(rn_sock *s)
{
	int rc;

	/* a connect made inline before this ran (rn_inline_connect) already ended: the
	 * engine's end is closed, its reference dropped */
	if (s->eng_fd < 0)
		return 0;
	rc = rn_stream_globals();
	if (rc == 0)
		rc = watch(s, EV_CLOSED);
	if (rc && s->stream) { /* connected inline before this ran (rn_inline_connect): give up */
		watched_closed(s);
		return rc;
	}
	if (rc) {
		/* nobody waits for the answer: the socket dies, its user's end reads EOF */
		pthread_mutex_lock(&s->mu);
		__atomic_store_n(&s->kind, RN_SK_DEAD, __ATOMIC_RELEASE);
		s->so_error = -rc;
		pthread_mutex_unlock(&s->mu);
		rn_fd_close(s->eng_fd);
		s->eng_fd = -1;
		rn_sock_unref(s); /* the engine's */
	}
	return rc;
}

/* The engine takes its end of a new socket; drops the command's reference (ri2n_socket). */
int rn_stream_cmd_create(rn_sock *s)
{
	int rc = create(s);

	rn_sock_unref(s); /* the command's */
	return rc;
}

/*
 * The rails address a binds: every rail for the wildcard of either family
 * (0.0.0.0 or ::), else the rail that has it.  0 with *err set: none.
 */
static uint32_t rails_for(rn_addr a, int *err)
{
	const rn_rail_info *rails;
	int n = rn_engine_rails(&rails);

	a.port = 1; /* rn_addr_unset asks about the address only */
	if (rn_addr_unset(a))
		return n >= 32 ? UINT32_MAX : (1u << n) - 1;
	for (int i = 0; i < n; i++)
		if (rn_rails_has_addr(&rails[i]) && rn_rails_is(&rails[i], a))
			return 1u << i;
	*err = -EADDRNOTAVAIL;
	return 0;
}

int rn_stream_cmd_bind(rn_sock *s, const rn_hsa *a)
{
	int err = 0;
	rn_addr at = rn_hsock_sa_addr(a);
	uint32_t mask = rails_for(at, &err);
	uint16_t number = at.port;
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
	at.port = p->number;
	s->local = rn_stream_sin(at);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int rn_stream_cmd_listen(rn_sock *s)
{
	rn_hsa any = { .v4 = { .sin_family = AF_INET } };
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
	rn_handover_owner_init(); /* without it, a worker's accepts are served through the descriptor */
	rn_sock_ref(s); /* the listener's */
	/* the user's end is never written to by ri2n: drop what held it back */
	pthread_mutex_lock(&s->mu);
	while (s->junk > 0) {
		ssize_t n = rn_sys_recv(s->eng_fd, rn_stream_scratch, s->junk < TAKE_CHUNK ? s->junk : TAKE_CHUNK,
				 MSG_DONTWAIT);

		if (n <= 0)
			break;
		s->junk -= (size_t)n;
	}
	__atomic_store_n(&s->kind, RN_SK_LISTEN, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->mu);
	return watch(s, EV_READ);
}

int rn_stream_cmd_connect(rn_sock *s, const rn_hsa *a)
{
	rn_addr peer = rn_hsock_sa_addr(a);
	rn_env env = *rn_engine_env();
	uint64_t now = rn_now_ns();
	rn_conn *c;
	rn_stream *st;
	int rc, err = 0;

	rn_engine_churn();
	if (s->kind == RN_SK_CONNECTING)
		return -EALREADY;
	if (s->kind != RN_SK_NEW)
		return s->kind == RN_SK_CONNECTED ? -EISCONN : -EINVAL;
	if (rn_addr_unset(peer))
		return -EINVAL;
	if (!s->port) {
		const rn_rail_info *rails;
		int n = rn_engine_rails(&rails);
		uint32_t all = n >= 32 ? UINT32_MAX : (1u << n) - 1;

		/* opening a port arms libevent's events: the engine's work (rn_ev.h) */
		s->port = rn_host_inline() ? rn_port_client_find(all) : rn_port_client(all, &err);
		if (!s->port)
			return rn_host_inline() ? RN_CMD_ENGINE_ONLY : err;
	}
	env.on_event = rn_stream_on_core_event;
	env.owns = rn_host_owns;
	env.user = NULL;
	rc = rn_conn_connect(&c, &s->cfg, &env, s->port->addrs, s->port->nsock, peer, now);
	if (rc)
		return -rn_errno(rc);
	/* what the user writes once connect returned goes behind the COOKIE_ECHO (take) */
	rn_conn_set_early(c, rn_proc_get(RN_PROC_EARLY_DATA));
	st = rn_stream_new(c, s->port, s);
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
	__atomic_store_n(&s->kind, RN_SK_CONNECTING, __ATOMIC_RELEASE);
	s->peer = *a;
	pthread_mutex_unlock(&s->mu);
	/*
	 * A caller that sleeps in connect waits for the engine to finish the
	 * handshake: the engine reads the rails from now on.  A non-blocking
	 * one waits in its own poll or epoll, which reads them inline (the
	 * rail sockets join the wait of a descriptor still connecting): taking
	 * them back cost the engine a wake-up and four epoll changes a connect.
	 */
	if (!s->connect_nb)
		rn_port_take_back(s->port);
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

struct pending {
	int mode, n;
	uint64_t now;
};

/*
 * At exit (see drain_at_exit in ri2n_api.c), by mode:
 *   RN_EXIT_OWED   connections that still owe the peer bytes, a FIN, an ACK,
 *                  or are lingering: the ACK of the peer's FIN may have been
 *                  lost, and only a process still here can send it again when
 *                  the peer resends its FIN (what TCP's TIME_WAIT does in the
 *                  kernel), for a few RTOs (rn_conn_exit_linger), not the
 *                  whole linger (1 s)
 *   RN_EXIT_OPEN   connections whose peer has not closed its side yet
 *   RN_EXIT_RESET  reset those (nobody will answer them once we are gone),
 *                  then count what still has a RESET or ACK to send
 *   RN_EXIT_CLOSED as RN_EXIT_OWED, but only connections every holder of the
 *                  descriptor closed (_exit: what TCP's kernel would go on
 *                  delivering; one still held dies with the process)
 *   RN_EXIT_HALF   those whose peer has not closed its side yet
 */
static void count_pending(rn_stream *st, void *ctx)
{
	struct pending *pd = ctx;
	int state = rn_conn_state(st->conn);

	/*
	 * a connect that returned to the user (RN_EV_ANSWERED) counts as
	 * established, also back in INIT_SENT for a fresh cookie
	 */
	if ((state == RN_ST_COOKIE_SENT || state == RN_ST_INIT_SENT) && st->connected)
		state = RN_ST_ESTABLISHED;
	if (pd->mode == RN_EXIT_OPEN || pd->mode == RN_EXIT_HALF) {
		pd->n += state == RN_ST_ESTABLISHED && (pd->mode == RN_EXIT_OPEN || st->user_eof);
		return;
	}
	if (pd->mode == RN_EXIT_RESET && state == RN_ST_ESTABLISHED) {
		rn_conn_abort(st->conn, rn_now_ns());
		rn_engine_dirty(st);
		pd->n++;
		return;
	}

	if (state == RN_ST_LINGER) {
		pd->n += rn_conn_exit_linger(st->conn, pd->now);
		return;
	}
	if (state == RN_ST_CLOSED) {
		pd->n += rn_conn_owes(st->conn); /* a last RESET to send */
		return;
	}
	if (state != RN_ST_ESTABLISHED)
		return;
	/* the end of stream not read yet: closed (counted), or still held (not ours to wait for) */
	if (pd->mode == RN_EXIT_CLOSED && !st->user_eof) {
		pd->n += st->fd >= 0 && rn_stream_user_gone(st);
		return;
	}
	/* the user's bytes are not all read, sent and acknowledged with the FIN, or an ACK is owed */
	if (!st->user_eof || !st->fin_queued || rn_conn_owes(st->conn))
		pd->n++;
}

int rn_stream_cmd_pending(int mode)
{
	struct pending pd = { mode, 0, rn_now_ns() };

	rn_port_each_all(count_pending, &pd);
	return pd.n;
}
