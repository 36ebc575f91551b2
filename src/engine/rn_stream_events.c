/*
 * rn_stream_events.c - what the core tells of a connection (established, a
 * rail down or up, failed, closed), passed on to the log and to the
 * application's event queue (ri2n_read_event).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "rn_events.h"
#include "rn_log.h"
#include "rn_stream.h"
#include "rn_stream_int.h"

/* a into the event's IPv4 field or its IPv6 one, as its family is. */
static void put(struct sockaddr_in *v4, struct sockaddr_in6 *v6, rn_addr a)
{
	rn_hsa sa = rn_stream_sin(a);

	if (a.v6)
		*v6 = sa.v6;
	else
		*v4 = sa.v4;
}

/*
 * Hands an event to the application's queue (ri2n_read_event).  Under the
 * host lock, which ri2n_accept takes to renumber an accepted connection's
 * events (rn_stream_accept_fd): its number cannot change in between.
 */
void rn_stream_post(rn_stream *st, int type, int rail, int error, const char *cause)
{
	struct ri2n_event e = { .type = type, .fd = __atomic_load_n(&st->sock->user_fd, __ATOMIC_RELAXED), .rail = rail,
				.error = error, .time_ns = rn_now_ns() };

	RN_OWNS_HOST();
	put(&e.peer, &e.peer6, rn_conn_peer(st->conn));
	if (rail >= 0) {
		rn_conn_stats cs;

		rn_conn_get_stats(st->conn, &cs);
		put(&e.local_rail, &e.local_rail6, cs.rail[rail].local);
		put(&e.remote_rail, &e.remote_rail6, cs.rail[rail].remote);
	}
	snprintf(e.cause, sizeof(e.cause), "%s", cause ? cause : "");
	rn_events_post(&e, st->sock->cookie);
}

void rn_stream_on_core_event(void *user, const rn_event *ev)
{
	rn_stream *st = user;
	rn_conn_stats cs;

	if (!st) /* rn_conn_accept reports ESTABLISHED before the stream exists */
		return;
	switch (ev->type) {
	case RN_EV_ANSWERED: /* the user's connect returns here, as TCP's at its SYN-ACK */
		if (st->sock && !st->connected)
			st->answered = 1; /* once the COOKIE_ECHO is out (rn_stream_input) */
		break;
	case RN_EV_ESTABLISHED: /* bytes written since the answer go at the service rn_stream_input asks */
		if (st->sock && !st->connected)
			rn_stream_connected(st);
		break;
	case RN_EV_RAIL_DOWN:
	case RN_EV_RAIL_UP: {
		char l[RN_ADDR_STRLEN], r[RN_ADDR_STRLEN];

		rn_conn_get_stats(st->conn, &cs);
		/* the member that judged it warned already: the others take it quietly */
		rn_log(ev->cause == RN_CAUSE_SHARED ? RN_LOG_INFO : RN_LOG_WARN,
		       "connection %s: rail %d (%s -> %s) %s: %s", st->name, ev->rail,
		       rn_addr_str(cs.rail[ev->rail].local, l, sizeof(l)),
		       rn_addr_str(cs.rail[ev->rail].remote, r, sizeof(r)),
		       ev->type == RN_EV_RAIL_DOWN ? "down" : "up again", rn_cause_name(ev->cause));
		rn_stream_post(st, ev->type == RN_EV_RAIL_DOWN ? RI2N_EVENT_RAIL_DOWN : RI2N_EVENT_RAIL_UP,
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
		rn_stream_post(st, RI2N_EVENT_FAILED, -1, rn_errno(ev->err), rn_strerror(ev->err));
		break;
	case RN_EV_CLOSED:
		rn_info("connection %s closed", st->name);
		rn_stream_post(st, RI2N_EVENT_CLOSED, -1, 0, "closed");
		break;
	default:
		break;
	}
}
