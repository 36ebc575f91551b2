/*
 * rn_hpass.c - one pass of a polling driver: the kit's skeleton with the
 * driver's hooks (rn_hpass.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "rn_hpass.h"

static int receive(const rn_hpass *p)
{
	rn_hconns *s = p->links;

	if (p->ops->recv)
		return p->ops->recv(s->io, p->rx, RN_HPOLL_RX_ROUNDS, p->core_now, rn_hdisp_input,
				    p->disp, p->rx_more);
	return rn_hset_pass(s->io, p->rx, RN_HPOLL_RX_ROUNDS, p->core_now, rn_hdisp_input, p->disp,
			    p->rx_more);
}

/* Link h has work: the driver's serve, the flush, the driver's settle, the monitor. */
static int service(const rn_hpass *p, void *arg, rn_hconn *h, uint64_t now)
{
	const rn_hpass_ops *o = p->ops;
	int n = o->serve(arg, h, now);

	rn_hconn_flush(p->links, h, now);
	if (o->settle)
		o->settle(arg, h, now);
	rn_hpoll_monitor(p->links->lk, h->conn, now);
	h->expiry_ns = rn_conn_expiry(h->conn);
	return n;
}

/* One live link's turn: the hello deadline, the driver's check, its timers, its service. */
static int link_turn(const rn_hpass *p, void *arg, rn_hconn *h, uint64_t now)
{
	const rn_hpass_ops *o = p->ops;

	if (o->unbound && o->unbound(h) && now - h->created_ns > RN_HPASS_UNBOUND_NS &&
	    rn_conn_state(h->conn) != RN_ST_CLOSED) {
		if (o->on_unbound_late)
			o->on_unbound_late(arg, h, now);
		rn_conn_abort(h->conn, now); /* no hello: not a peer of ours */
		h->dirty = 1;
	}
	if (o->check)
		o->check(arg, h, now);
	if (h->expiry_ns <= now)
		rn_hconn_timer(p->links, h, now);
	if (h->dirty || (o->busy && o->busy(arg, h)))
		return service(p, arg, h, now);
	return 0;
}

int rn_hpass_run(const rn_hpass *p, void *arg, uint64_t now)
{
	const rn_hpass_ops *o = p->ops;
	int n, more;

	/* time given to the core never goes back, whoever called last */
	if (now < *p->core_now)
		now = *p->core_now;
	*p->core_now = now;
	n = receive(p);
	if (n)
		now = o->now(arg);
	if (p->follow)
		rn_hfollow_poll(p->follow, now); /* a rail's address or link gone: at once */
	if (p->grow)
		rn_hgrow_run(p->grow, now);
	/*
	 * The verdict re-read comes straight after the receive rounds, before
	 * any timer: rn_hconns_verdict_due asks whether the round just read
	 * left data behind (rx_more), and the verdict then judges a rail on
	 * the receive counts of that round plus what its socket still held.
	 * The driver's timers (a connect attempt's, a nudge's) come after
	 * both receives, so an answer that was already in a socket counts
	 * before an attempt is given up.
	 */
	if (rn_hconns_verdict_due(p->links, *p->rx_more, now) && (more = receive(p)) > 0) {
		n += more;
		now = o->now(arg); /* never before the arrivals just read */
	}
	if (o->timers)
		o->timers(arg, now);
	for (rn_hconn *h = p->links->head; h; h = h->next)
		if (!h->dead)
			n += link_turn(p, arg, h, now);
	rn_hset_flush(p->links->io);
	rn_hconns_reap(p->links);
	if (o->after)
		o->after(arg, now);
	return n;
}
