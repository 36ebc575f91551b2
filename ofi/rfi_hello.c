/*
 * rfi_hello.c - who speaks on an inbound link: the hello that opens it
 * names the sending endpoint, and is believed only when the connection
 * comes from that name's own rails (the BTL's modex check, rn_hmon.h).
 *
 * Without it, any host that completes a handshake could pose as any AV
 * peer: its messages would complete receives directed at that peer, with
 * that peer as their source.  A second live link in a name is refused as
 * well: a process has one stream to us at a time, and a stream that died
 * on its side dies on ours too (reset, port unreachable, dead-peer timeout).
 */
#include "rfi.h"
#include "rn_log.h"

/* Another inbound link of the endpoint, alive and bound to name nm. */
static int name_taken(const rfi_link *l, const rfi_name *nm)
{
	for (const rfi_link *o = l->ep->links; o; o = o->next)
		if (o != l && !o->peer && o->have_name && !o->dead && !o->eof &&
		    rn_conn_state(o->conn) == RN_ST_ESTABLISHED && rfi_name_eq(&o->src, nm))
			return 1;
	return 0;
}

int rfi_link_bind(rfi_link *l, const uint8_t *hello, size_t len)
{
	rn_addr set[RN_MAX_RAILS];
	rfi_name nm;

	if (rfi_name_read(&nm, hello, len) != 0)
		return -FI_EINVAL;
	for (int i = 0; i < nm.n; i++)
		set[i] = (rn_addr){ nm.rail[i].ip, nm.rail[i].port };
	if (!rn_hmon_rails_in(l->conn, set, nm.n) || name_taken(l, &nm)) {
		l->ep->hellos_refused++;
		return -FI_EACCES;
	}
	l->src = nm;
	l->have_name = 1;
	return 0;
}
