/*
 * rn_hpoll.c - the polling drivers' sockets and link table (rn_hpoll.h).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include <stdio.h>
#include <string.h>

#include "rn_hpoll.h"

int rn_hpoll_open(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab, const rn_hpoll_rails *r, char *err,
		  size_t errlen)
{
	rn_hsock_opts o = r->opts;
	int rc = rn_hset_init(io, o.dgram, 0);

	if (rc == 0)
		rc = rn_htab_init(tab, 16);
	/* a GRO run needs 64 KiB; else one datagram */
	if (rc == 0)
		rc = rn_hrxbuf_init(rx, o.gro ? RN_HGRO_BUF : (o.dgram < 2048 ? 2048 : o.dgram), 4);
	if (rc) {
		snprintf(err, errlen, "out of memory for socket buffers");
		return rc;
	}
	for (int i = 0; i < r->n; i++) {
		const rn_rail_info *ri = &r->rails[i];

		o.dev = ri->pin ? ri->name : NULL; /* rails sharing a subnet */
		rc = rn_hsock_open(&io->s[i], ri->ip, r->bind ? r->bind[i].port : 0, ri->prefix, &o);
		io->s[i].addr.backup = ri->backup; /* "if:backup" in the rail list */
		io->n = i + 1;
		if (rc) {
			snprintf(err, errlen, "cannot open a UDP socket on rail %s: %s", ri->name,
				 strerror(-rc));
			return rc;
		}
	}
	io->gso = r->gso && io->n > 0 && rn_hsock_probe_gso(io->s[0].fd);
	return 0;
}

void rn_hpoll_close(rn_hset *io, rn_hrxbuf *rx, rn_htab *tab)
{
	rn_hset_free(io);
	rn_hrxbuf_free(rx);
	rn_htab_free(tab);
}

void rn_hpoll_rekey(rn_htab *tab, uint64_t *id, rn_conn *c, void *v)
{
	uint64_t now_id = rn_conn_id(c);

	if (now_id != *id && rn_htab_rekey(tab, *id, now_id, v) == 0)
		*id = now_id;
}

