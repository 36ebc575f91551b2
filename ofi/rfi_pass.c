/*
 * rfi_pass.c - an endpoint's connections and the protocol pass the
 * application's progress calls run (receive, timers, deliver, send, flush),
 * as btl_ri2n's progress does; and the rail sockets (the host kit) it reads.
 *
 * Outbound connections belong to peers (rfi_peer): the first send to a
 * peer connects to one of its rails; no answer within FI_RI2N_ATTEMPT_MS
 * and the next rail is tried, until the core's connect timeout.  Inbound
 * connections come through the listener and are named by their hello.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfi.h"
#include "rn_knobs.h"
#include "rn_log.h"

/* ---- links ---- */

static rfi_link *link_new(rfi_ep *ep, rn_conn *c, rfi_peer *p, uint64_t now)
{
	rfi_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->ep = ep;
	l->peer = p;
	l->src_addr = FI_ADDR_NOTAVAIL;
	l->src_gen = UINT64_MAX;
	if (rn_hconns_add(&ep->links, &l->h, c, now) != 0) {
		free(l);
		return NULL;
	}
	return l;
}

/* A link the kit reaped (rn_hconns.on_reap): what points at it lets go. */
static void link_gone(void *arg, rn_hconn *h)
{
	rfi_ep *ep = arg;
	rfi_link *l = (rfi_link *)h;

	for (rfi_link *o = rfi_links(ep); o; o = rfi_link_next(o))
		if (o->after == l)
			o->after = NULL;
	rfi_link_forget(l);
	if (l->peer && l->peer->link == l)
		l->peer->link = NULL;
	free(l);
}

void rfi_links_reap(rfi_ep *ep)
{
	rn_hconns_reap(&ep->links);
}

/* ---- peers ---- */

rfi_peer *rfi_peer_get(rfi_ep *ep, fi_addr_t a)
{
	const rfi_name *nm = rfi_av_get(ep->av, a);
	rfi_peer *p;

	if (!nm)
		return NULL;
	if (a >= ep->npeers) {
		size_t n = ep->npeers ? ep->npeers : 64;
		rfi_peer **v;

		while (n <= a)
			n *= 2;
		v = realloc(ep->peers, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + ep->npeers, 0, (n - ep->npeers) * sizeof(*v));
		ep->peers = v;
		ep->npeers = n;
	}
	p = ep->peers[a];
	if (p && !rfi_name_eq(&p->name, nm)) {
		/* the AV slot names someone else now (removed, inserted again) */
		if (p->link) {
			rn_conn_abort(p->link->h.conn, rfi_ep_now(ep));
			p->link->peer = NULL;
			p->link->h.dead = 1;
		}
		rfi_peer_fail(ep, p, FI_ECANCELED);
		free(p);
		p = ep->peers[a] = NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->addr = a;
		p->name = *nm;
		ep->peers[a] = p;
	}
	return p;
}

int rfi_peer_connect(rfi_ep *ep, rfi_peer *p, uint64_t now)
{
	const rn_hdial d = { .io = &ep->io, .cfg = &ep->cfg, .env = &ep->env,
			     .peer = p->name.rail, .npeer = p->name.n };
	rn_conn *c;
	rfi_link *l;
	int rc;

	if (!p->attempt)
		p->give_up_ns = now + ep->cfg.connect_timeout_ns;
	/* the peer's rails in turn, from the one after the last attempt's */
	rc = rn_hconn_dial(&c, &d, &p->attempt, now);
	if (rc < 0)
		return rc == RN_ERR_NOROUTE ? -FI_EHOSTUNREACH : -FI_ENOMEM;
	l = link_new(ep, c, p, now);
	if (!l) {
		rn_conn_del(c);
		return -FI_ENOMEM;
	}
	p->link = l;
	p->attempt_end_ns = now + rfi_k.attempt_ns;
	l->h.dirty = 1;
	return 0;
}

/* A connect attempt unanswered in time gives way to the next rail (rn_hpass_ops.timers). */
static void peer_timers(void *arg, uint64_t now)
{
	rfi_ep *ep = arg;

	for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l)) {
		rfi_peer *p = l->peer;

		if (!p || l->h.dead || now < p->attempt_end_ns ||
		    rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED || l->hello_done)
			continue;
		l->peer = NULL;
		l->h.dead = 1;
		p->link = NULL;
		if (now >= p->give_up_ns || rfi_peer_connect(ep, p, now) != 0) {
			rn_warn("ri2n provider: no answer from any rail of a peer within the "
				"connect timeout; failing its %zu queued sends", p->queued);
			ep->conn_failures++;
			rfi_peer_fail(ep, p, FI_ETIMEDOUT);
			p->attempt = 0;
		}
	}
}

/* After the core ran: connection deaths and closes. */
static void link_check(rfi_link *l, uint64_t now)
{
	rfi_ep *ep = l->ep;
	int err = rn_conn_error(l->h.conn), st = rn_conn_state(l->h.conn);
	rfi_peer *p = l->peer;

	if (!l->peer && l->eof && st == RN_ST_ESTABLISHED && !l->hello_done) {
		rn_conn_shutdown(l->h.conn, now); /* the peer finished: finish ours (nothing sent) */
		l->hello_done = 1;
		l->h.dirty = 1;
	}
	if (!err && st != RN_ST_CLOSED)
		return;
	l->h.dead = 1;
	if (!p) {
		if (err)
			rfi_link_lost(l, rfi_err_from_rn(err));
		return;
	}
	p->link = NULL;
	l->peer = NULL;
	if (!err)
		return;
	if (rn_conn_state(l->h.conn) != RN_ST_ESTABLISHED && now < p->give_up_ns &&
	    p->attempt < 2 * RN_MAX_RAILS && !l->hello_done && rfi_peer_connect(ep, p, now) == 0)
		return; /* refused or unanswered before it was up: the next rail */
	ep->conn_failures++;
	p->err = rfi_err_from_rn(err);
	rfi_peer_fail(ep, p, p->err);
	p->attempt = 0;
}

/* ---- datagrams ---- */

static uint64_t core_now(void *arg) { return ((rfi_ep *)arg)->core_now; }

static void to_link(void *arg, void *v, int rail, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t now)
{
	rfi_link *l = v;

	(void)arg;
	rn_conn_recv(l->h.conn, now, rail, from, d, len);
	l->h.dirty = 1;
}

/* An accepted link that has not said who it is (rn_hpoll_accept). */
static int unbound_link(const void *v)
{
	const rfi_link *l = v;

	return !l->peer && !l->have_name && !l->h.dead && !l->retired;
}

/* A connection the listener accepted becomes a link (rn_hpoll_accept). */
static void *accept_link(void *arg, const rn_accept_params *ap, uint64_t now)
{
	rfi_ep *ep = arg;
	rfi_link *l = NULL;
	rn_conn *c;

	if (rn_conn_accept(&c, ap, &ep->env, now) == 0) {
		l = link_new(ep, c, NULL, now);
		if (l)
			l->h.dirty = 1; /* COOKIE_ACK to send */
		else
			rn_conn_del(c);
	}
	return l;
}

/* A datagram no link has (rn_hdisp took the stateless resets): the listener's. */
static int to_listener(void *arg, int rail, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t now)
{
	rfi_ep *ep = arg;
	const rn_hpoll_accept acc = { .max_unbound = RN_HPOLL_MAX_UNBOUND, .unbound = unbound_link,
				      .on_accept = accept_link, .arg = ep };

	if (!ep->have_lis)
		return -1;
	rn_hpoll_listen(&ep->lis, &ep->io, &ep->idtab, &acc, rail, from, d, len, now);
	return 0;
}

/* ---- the pass ---- */

/* The peer ended our outbound stream (it never writes on it otherwise). */
static int peer_ended(rfi_link *l)
{
	const uint8_t *d;

	return !l->ep->closing && rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED &&
	       rn_conn_peek(l->h.conn, &d) == 0;
}

static uint64_t pass_now(void *arg) { return rfi_ep_now(arg); }

/* An accepted link's unexpected messages wait on the application: a stall is its failure. */
static void link_stall(void *arg, rn_hconn *h, uint64_t now)
{
	rfi_link *l = (rfi_link *)h;

	(void)arg;
	if (!l->peer && l->ux)
		rfi_link_stall_check(l, now);
}

/* Sends queued for the peer, or input the application has not taken. */
static int link_busy(void *arg, rn_hconn *h)
{
	rfi_link *l = (rfi_link *)h;

	(void)arg;
	return (l->peer && l->peer->q) || (!l->peer && (l->ux || l->into));
}

static int link_serve(void *arg, rn_hconn *h, uint64_t now)
{
	rfi_link *l = (rfi_link *)h;

	(void)arg;
	h->dirty = 0;
	if (l->peer && peer_ended(l))
		rfi_link_retire_out(l, now);
	if (l->retired == RFI_RETIRED_OUT) {
		; /* nothing to send or read: it ends after what it holds */
	} else if (l->peer) {
		rfi_link_hello(l, now);
		if (l->hello_done && l->peer && l->peer->q)
			rfi_peer_push(l->ep, l->peer, now);
	} else {
		rfi_link_deliver(l, now);
	}
	return 0;
}

static void link_settle(void *arg, rn_hconn *h, uint64_t now)
{
	rfi_link *l = (rfi_link *)h;

	(void)arg;
	link_check(l, now);
	if (l->retired == RFI_RETIRED_IN && (l->h.dead || l->eof))
		rfi_link_retired_end(l, now);
}

static void pass_after(void *arg, uint64_t now)
{
	rfi_ep *ep = arg;

	rfi_stat_pass(ep, now);
	__atomic_store_n(&ep->last_pass_ns, now, __ATOMIC_RELAXED);
}

static const rn_hpass_ops pass_ops = {
	.now = pass_now, .timers = peer_timers, .unbound = unbound_link, .check = link_stall,
	.busy = link_busy, .serve = link_serve, .settle = link_settle, .after = pass_after,
};

void rfi_ep_pass(rfi_ep *ep)
{
	if (!ep->enabled || ep->in_pass)
		return;
	ep->in_pass = 1;
	rn_hpass_run(&ep->pass, ep, rfi_ep_now(ep));
	ep->in_pass = 0;
}

/* ---- the rail sockets ---- */

/* A rail gone or back (rn_hfollow_fn): every link hears it. */
static int rail_changed(void *arg, int rail, int usable, rn_cause cause)
{
	rfi_ep *ep = arg;
	int idx = rn_hpoll_sock_of(&ep->io, rail); /* none yet: a rail waiting for an address */

	return idx < 0 ? 0 : rn_hconns_rail(&ep->links, idx, usable, cause, ep->core_now);
}

int rfi_ep_io_open(rfi_ep *ep, char *err, size_t errlen)
{
	/* RI2N_GRO=0 / RI2N_GSO=0 turn the offloads off, as for the engine */
	rn_rail_addr addrs[RN_MAX_RAILS];
	int rc;

	ep->lk = (rn_hpoll_links){ .tab = &ep->idtab, .mon = &ep->mon,
				   .conn_of = rn_hconn_conn_of, .mark = rn_hconn_mark,
				   .now = core_now, .due = rn_hconn_due, .arg = ep };
	ep->links = (rn_hconns){ .tab = &ep->idtab, .io = &ep->io, .lk = &ep->lk,
				 .on_reap = link_gone, .arg = ep };
	ep->open = (rn_hpoll_rails){ .rails = ep->rails, .n = ep->nrails, .bind = ep->bind,
				     .gso = rn_proc_get(RN_PROC_GSO) != 0, .links = &ep->lk,
				     .opts = { .dgram = ep->cfg.max_dgram,
					       .gro = rn_proc_get(RN_PROC_GRO) != 0, .rx_ts = 1,
					       .recverr = 1 } };
	rc = rn_hpoll_open(&ep->io, &ep->rx, &ep->idtab, &ep->open, err, errlen);
	ep->disp = (rn_hdisp){ .tab = &ep->idtab, .to_conn = to_link, .to_listener = to_listener,
			       .conn_of = rn_hconn_conn_of, .on_reset = rn_hconn_on_reset, .arg = ep };
	ep->pass = (rn_hpass){ .links = &ep->links, .rx = &ep->rx, .disp = &ep->disp,
			       .follow = &ep->follow, .grow = &ep->grow, .core_now = &ep->core_now,
			       .rx_more = &ep->rx_more, .ops = &pass_ops };
	rn_hfollow_init(&ep->follow, ep->rails, ep->nrails, rail_changed, ep);
	ep->follow.each = rn_hgrow_event; /* a waiting rail may get its address */
	ep->follow.each_arg = &ep->grow;
	ep->follow.moved = rn_hgrow_moved; /* a rail whose address changed */
	ep->follow.moved_arg = &ep->grow;
	ep->grow = (rn_hgrow){ .rails = ep->rails, .open = &ep->open, .links = &ep->links,
			       .lis = &ep->lis, .follow = &ep->follow };
	if (rc)
		return rc;
	rn_hfollow_open(&ep->follow); /* a rail's address or link gone: at once, not by silence */
	for (int i = 0; i < ep->io.n; i++)
		addrs[i] = ep->io.s[i].addr;
	if (rn_listener_init(&ep->lis, &ep->cfg, &ep->env, addrs, ep->io.n) != 0) {
		snprintf(err, errlen, "cannot set up the listener");
		return -1;
	}
	ep->have_lis = 1;
	ep->name.n = ep->io.n;
	for (int i = 0; i < ep->io.n; i++) {
		ep->name.rail[i] = addrs[i];
		ep->name.rail[i].backup = 0; /* ours to know, not in the name */
	}
	if (!rfi_name_fits(&ep->name)) {
		snprintf(err, errlen, "the rails' addresses do not fit in an endpoint name (%d "
			 "bytes: 2 IPv6 rails and 2 IPv4 ones at most; RI2N_RAILS names fewer)",
			 RFI_NAME_LEN);
		return -1;
	}
	return 0;
}
