/*
 * rn_hpeer.c - the process's peers (see rn_hpeer.h).
 *
 * Peers are found by a hash of their rail pairs in the host kit's id table;
 * peers whose hashes collide are chained behind the first.
 */
#include <errno.h>
#include <stdlib.h>

#include "rn_hpeer.h"

typedef struct hpeer {
	rn_peer p;         /* first: the core's peer is the node */
	uint64_t key;
	struct hpeer *next; /* the next peer with the same key */
} hpeer;

/* FNV-1a over the pairs, never 0 (the table's empty mark). */
static uint64_t key_of(const rn_conn *c)
{
	rn_conn_stats st;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	rn_conn_get_stats(c, &st);
	for (int k = 0; k < st.npaths; k++) {
		/* an IPv4 address is its own fold: the same key as before IPv6 */
		uint64_t v[2] = { (uint64_t)rn_addr_fold(st.rail[k].local, 128) << 16 |
					  st.rail[k].local.port,
				  (uint64_t)rn_addr_fold(st.rail[k].remote, 128) << 16 |
					  st.rail[k].remote.port };

		for (int i = 0; i < 2; i++)
			for (int b = 0; b < 6; b++) {
				h ^= (v[i] >> (8 * b)) & 0xff;
				h *= UINT64_C(0x100000001b3);
			}
	}
	return h ? h : 1;
}

int rn_hpeers_init(rn_hpeers *t)
{
	t->npeers = 0;
	return rn_htab_init(&t->tab, 16);
}

void rn_hpeers_free(rn_hpeers *t)
{
	rn_htab_free(&t->tab);
}

int rn_hpeer_join(rn_hpeers *t, rn_conn *c, uint64_t now_ns)
{
	uint64_t key;
	hpeer *first, *n;
	int rc;

	if (rn_conn_peer_of(c) || rn_conn_state(c) != RN_ST_ESTABLISHED)
		return -EINVAL;
	key = key_of(c);
	first = rn_htab_get(&t->tab, key);
	for (n = first; n; n = n->next)
		if (rn_peer_matches(&n->p, c))
			return rn_conn_join_peer(c, &n->p, now_ns) ? -EINVAL : 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (rn_peer_init(&n->p, c)) {
		free(n);
		return -EINVAL;
	}
	n->key = key;
	if (first) {
		n->next = first->next;
		first->next = n;
	} else if ((rc = rn_htab_add(&t->tab, key, n)) != 0) {
		free(n);
		return rc;
	}
	t->npeers++;
	return rn_conn_join_peer(c, &n->p, now_ns) ? -EINVAL : 0;
}

rn_conn *rn_hpeer_leave(rn_hpeers *t, rn_conn *c)
{
	hpeer *n = (hpeer *)rn_conn_peer_of(c), *first;
	rn_conn *keeper;

	if (!n)
		return NULL;
	keeper = rn_conn_leave_peer(c);
	if (n->p.nmembers)
		return keeper;
	first = rn_htab_get(&t->tab, n->key);
	if (first == n) {
		rn_htab_del(&t->tab, n->key, n);
		if (n->next)
			rn_htab_add(&t->tab, n->key, n->next); /* room: one went */
	} else {
		while (first && first->next != n)
			first = first->next;
		if (first)
			first->next = n->next;
	}
	t->npeers--;
	free(n);
	return NULL;
}
