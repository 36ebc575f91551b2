/*
 * rn_port_handoff.c - who reads a port's rail sockets: the engine, woken
 * by their readiness, or an inline thread waiting on them.  While threads
 * drive the port inline the engine keeps off its sockets and looks again
 * at a fallback timer; a thread about to sleep on what only the engine
 * serves takes them back for it.  The sockets themselves are in rn_port.c.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "rn_ev.h"
#include "rn_knobs.h"
#include "rn_port.h"
#include "rn_port_int.h"
#include "rn_stream.h"
#include "rn_sys.h"

void rn_port_rx_set(rn_port *p, int on)
{
	for (int i = 0; i < p->nsock; i++) {
		if (!p->s[i].rev)
			continue;
		if (on)
			rn_ev_add(p->s[i].rev, NULL);
		else
			rn_ev_del(p->s[i].rev);
	}
	p->rx_off = (uint8_t)!on;
	if (on)
		p->check_ns = 0; /* the engine's again: the next hand-off starts at the shortest period */
}

static uint64_t handoff_ns(const rn_port *p)
{
	return rn_handoff_ns(p->turn_ns);
}

void rn_port_wait_begin(rn_port *p, uint64_t now)
{
	RN_OWNS_HOST();
	if (p->nwait++ == 0) /* the program's own work since it last waited: one turn */
		rn_handoff_turn(&p->turn_ns, p->inline_ns, now);
}

void rn_port_wait_end(rn_port *p, uint64_t now)
{
	RN_OWNS_HOST();
	p->nwait--;
	rn_port_wait_left(p, now);
}

void rn_port_wait_left(rn_port *p, uint64_t now)
{
	RN_OWNS_HOST();
	p->inline_ns = now;
	/* a thread asleep in accept needs the engine on the sockets (see rn_port_inline_driven) */
	if (!p->nwait && p->lsock && __atomic_load_n(&p->lsock->acc_sleeper, __ATOMIC_RELAXED))
		rn_port_take_back(p);
}

/*
 * Whether threads drive the port inline: one waits on its sockets now, or
 * one came back from such a wait less than handoff_ns ago (an event loop
 * between two epoll waits, a ping-pong between a reply and the next
 * receive).  Then the engine keeps off the sockets: a datagram wakes one
 * thread, and the engine does not contend for the host lock with a busy
 * one.  Only waits count (p->inline_ns is set when a wait ends or reads):
 * a non-blocking read never looks at the rails, so a program that reads
 * inline but waits elsewhere keeps the engine on duty.
 */
int rn_port_inline_driven(const rn_port *p, uint64_t now)
{
	if (p->nwait > 0)
		return 1;
	/*
	 * A thread asleep in ri2n_accept waits for handshakes only the engine
	 * completes: the bet is off while it sleeps (else each connection's
	 * INIT waited out the hand-off of the thread serving the one before).
	 */
	if (p->lsock && __atomic_load_n(&p->lsock->acc_sleeper, __ATOMIC_RELAXED))
		return 0;
	return p->inline_ns && now - p->inline_ns < handoff_ns(p);
}

/*
 * The engine looks again when the hand-off would run out, but not before
 * its period (rn_handoff_check: doubling while threads keep the port).
 */
static void arm_fallback(rn_port *p, uint64_t now)
{
	uint64_t d = p->check_ns ? p->check_ns : RN_HANDOFF_NS;

	if (!p->nwait && p->inline_ns && now - p->inline_ns < handoff_ns(p) &&
	    p->inline_ns + handoff_ns(p) - now > d)
		d = p->inline_ns + handoff_ns(p) - now;
	if (d < 100000)
		d = 100000;
	rn_etimer_set(&p->fallback, now + d);
}

/* Any socket of the port readable: read them, unless inline threads do. */
void rn_port_on_readable(evutil_socket_t fd, short what, void *arg)
{
	rn_usock *u = arg;
	rn_port *p = u->port;

	(void)fd;
	(void)what;
	rn_host_lock();
	if (rn_port_inline_driven(p, rn_now_ns())) {
		/* one wake-up per datagram, the inline thread's: stay off until it leaves */
		rn_port_rx_set(p, 0);
		arm_fallback(p, rn_now_ns());
	} else {
		rn_port_read_ready(p, UINT32_MAX, 1u << u->idx); /* all rails, interleaved */
		rn_stream_service_dirty();
	}
	rn_host_unlock();
}

void rn_port_catch_up(rn_port *p)
{
	if (p->rx_off && !rn_port_inline_driven(p, rn_now_ns())) {
		rn_port_rx_set(p, 1);
		rn_port_read(p);
	}
}

/*
 * The hand-off bets that a thread which waited inline on the port waits
 * there again soon.  A thread about to sleep on what only the engine serves
 * (a connect's handshake, an accept) loses that bet at once: the engine
 * reads the sockets from now on, or the handshake's replies would lie in
 * them until its fallback look (up to RN_HANDOFF_MAX_NS plus a period: the
 * ~10 ms a connect per request took).  Threads in an inline wait keep it.
 */
void rn_port_take_back(rn_port *p)
{
	RN_OWNS_HOST();
	p->inline_ns = 0;
	if (!p->rx_off || p->nwait)
		return;
	if (rn_engine_self()) {
		rn_port_rx_set(p, 1); /* what waits in the sockets wakes the engine (level-triggered) */
	} else { /* libevent is the engine thread's alone (rn_ev.h): it re-arms them */
		p->want_rx = 1;
		rn_port_sync_later();
		rn_host_kick();
	}
}

void rn_port_sock_sleeps(rn_sock *s)
{
	rn_host_lock();
	if (s->port)
		rn_port_take_back(s->port);
	rn_host_unlock();
}

/*
 * The engine kept off the port for inline threads: take it back once they
 * are gone (an engine timer: under the host lock, the dirty serviced after).
 */
void rn_port_on_fallback(rn_etimer *t, uint64_t now)
{
	rn_port *p = (rn_port *)((char *)t - offsetof(rn_port, fallback));

	if (!p->rx_off)
		return;
	/* a thread back within the period will wait again: keep off (no toggling) */
	if (rn_port_inline_driven(p, now)) {
		p->check_ns = rn_handoff_check(p->check_ns);
		arm_fallback(p, now);
	} else {
		rn_port_rx_set(p, 1);
		rn_port_read(p);
	}
}

static void wake(const rn_waiter *w)
{
	uint64_t one = 1;

	if (rn_sys_write(w->efd, &one, sizeof(one)) < 0) {
		/* saturated: it is awake anyway */
	}
}

void rn_port_wake_waiters(rn_port *p)
{
	for (rn_waiter *w = p->waiters; w; w = w->next)
		wake(w);
}

void rn_port_wake_sock(rn_port *p, const struct rn_sock *s)
{
	for (rn_waiter *w = p->waiters; w; w = w->next)
		if (w->s == s)
			wake(w);
}

/* Whether the read loop of w's thread (rn_inline_io.c) would end its wait now. */
static int waiter_due(const rn_waiter *w)
{
	const uint8_t *d;

	if (!w->s || w->s->stream != w->st || !w->st)
		return 1;
	return rn_conn_peek(w->st->conn, &d) != RN_ERR_AGAIN;
}

void rn_port_wake_ready(rn_port *p)
{
	RN_OWNS_HOST();
	for (rn_waiter *w = p->waiters; w; w = w->next)
		if (w != p->leader && waiter_due(w))
			wake(w);
	rn_port_wake_leader(p);
}

void rn_port_wake_leader(rn_port *p)
{
	if (!p->leader && p->waiters)
		wake(p->waiters);
}
