/*
 * rfi_hello.c - whose a stream is, and when it gives way to a newer one.
 *
 * The hello that opens an inbound link names the sending endpoint, and is
 * believed only when the connection comes from that name's own rails and
 * ports (the BTL's modex check, rn_hmon.h).  Without it, any host that
 * completes a handshake could pose as any AV peer: its messages would
 * complete receives directed at that peer, with that peer as their source.
 *
 * A second verified link in a name supersedes the first: the peer opened a
 * new stream to us (it removed us from its AV and inserted us again, or it
 * restarted on the same ports).  The old one is retired, not reset: we end
 * our side (FIN), it keeps delivering what it holds until the peer's end,
 * and the new one is read only after it, so nothing the peer saw complete
 * is lost or overtaken.  This gives an impostor nothing: a hello counts only
 * from a connection whose handshake came from the name's exact addresses
 * and ports, and the handshake's cookie only reaches those addresses, so
 * only the holder of the name's sockets can supersede a link of the name.
 *
 * Our own outbound link gives way when its peer ends it (its FIN: it retired
 * the stream or closed its endpoint), or when a retired inbound link of the
 * name is reset rather than finished: the process behind the name lost its
 * connections (it restarted on the same ports), so our stream to it is dead
 * too.  Later sends to the peer open a new connection.
 */
#include "rfi.h"
#include "rn_log.h"

/* The live inbound link bound to name nm, other than l (at most one). */
static rfi_link *holder(const rfi_link *l, const rfi_name *nm)
{
	for (rfi_link *o = rfi_links(l->ep); o; o = rfi_link_next(o))
		if (o != l && !o->peer && o->have_name && !o->h.dead && !o->retired &&
		    rfi_name_eq(&o->src, nm))
			return o;
	return NULL;
}

/* o gives way to l: our side ends; l is read after o's end. */
static void supersede(rfi_link *o, rfi_link *l)
{
	uint64_t now = l->ep->core_now;

	o->retired = RFI_RETIRED_IN;
	if (!o->hello_done && rn_conn_state(o->h.conn) == RN_ST_ESTABLISHED)
		rn_conn_shutdown(o->h.conn, now);
	o->hello_done = 1; /* our FIN is out: link_check sends no other */
	o->h.dirty = 1;
	l->after = o;
	l->ep->superseded++;
}

int rfi_link_bind(rfi_link *l, const uint8_t *hello, size_t len)
{
	rn_addr set[RN_MAX_RAILS];
	rfi_link *o;
	rfi_name nm;

	if (rfi_name_read(&nm, hello, len) != 0)
		return -FI_EINVAL;
	for (int i = 0; i < nm.n; i++)
		set[i] = rn_hpoll_peer_addr(&l->ep->io, &nm.rail[i]);
	if (!rn_hmon_rails_in(l->h.conn, set, nm.n)) {
		l->ep->hellos_refused++;
		return -FI_EACCES;
	}
	o = holder(l, &nm);
	if (o)
		supersede(o, l);
	l->src = nm;
	l->have_name = 1;
	return 0;
}

void rfi_link_retire_out(rfi_link *l, uint64_t now)
{
	rfi_peer *p = l->peer;

	if (!p)
		return;
	if (p->link == l)
		p->link = NULL;
	l->peer = NULL;
	l->retired = RFI_RETIRED_OUT;
	if (rn_conn_state(l->h.conn) == RN_ST_ESTABLISHED)
		rn_conn_shutdown(l->h.conn, now); /* after what the ring holds */
	l->h.dirty = 1;
	p->attempt = 0;
	if (p->q && rfi_peer_connect(l->ep, p, now) != 0) {
		l->ep->conn_failures++;
		rfi_peer_fail(l->ep, p, FI_EHOSTUNREACH);
	}
}

void rfi_link_retired_end(rfi_link *l, uint64_t now)
{
	rfi_ep *ep = l->ep;
	int restarted = rn_conn_error(l->h.conn) && !rn_conn_ended_clean(l->h.conn);

	if (l->retired != RFI_RETIRED_IN)
		return;
	l->retired = RFI_RETIRED_DONE;
	for (rfi_link *o = rfi_links(ep); o; o = rfi_link_next(o)) {
		if (o->after == l) {
			o->after = NULL;
			o->h.dirty = 1; /* its messages may be read now */
		}
		if (restarted && o->peer && !o->h.dead && rfi_name_eq(&o->peer->name, &l->src))
			rfi_link_retire_out(o, now);
	}
}
