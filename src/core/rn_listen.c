/*
 * rn_listen.c - the server side of the handshake, without state.
 *
 *   client                          server (listener)
 *   INIT(id_c, isn_c, rails_c) -->
 *                              <--  INIT_ACK(id_s, isn_s, rails_s, cookie)
 *   COOKIE_ECHO(params_c, cookie) -->   cookie checked, connection created
 *                              <--  COOKIE_ACK
 *
 * INIT is padded to RN_INIT_LEN and INIT_ACK is smaller, so a forged INIT
 * can never make the server send more bytes than it received.
 */
#include <string.h>

#include "rn_cookie.h"
#include "rn_wire.h"

/* 10 s: long enough for a slow client, short enough to limit replays. */
#define RN_COOKIE_LIFE_NS UINT64_C(10000000000)

/*
 * The cookie keeps its time in 32 bits of ms, which wrap every 49.7 days: the
 * key differs from one such epoch to the next, so a cookie captured in one
 * is worthless in the next (issued just before a wrap, checked just after,
 * it is taken from the epoch before).
 */
static void epoch_key(uint8_t key[RN_COOKIE_SECRET_LEN], const rn_listener *l, uint32_t epoch)
{
	memcpy(key, l->secret, RN_COOKIE_SECRET_LEN);
	key[0] ^= (uint8_t)(epoch >> 24);
	key[1] ^= (uint8_t)(epoch >> 16);
	key[2] ^= (uint8_t)(epoch >> 8);
	key[3] ^= (uint8_t)epoch;
}

static int ldrop(rn_listener *l, rn_drop why)
{
	l->drops[why]++;
	return RN_ERR_DROP;
}

int rn_listener_init(rn_listener *l, const rn_config *cfg, const rn_env *env,
		     const rn_rail_addr *rails, int nrails)
{
	const char *why;

	memset(l, 0, sizeof(*l));
	if (!cfg || !env || !env->rng || !rails || nrails <= 0 || nrails > RN_MAX_RAILS ||
	    rn_config_check(cfg, &why))
		return RN_ERR_INVAL;
	l->cfg = *cfg;
	l->env = *env;
	memcpy(l->rails, rails, sizeof(*rails) * (size_t)nrails);
	l->nrails = nrails;
	l->cookie_life_ns = RN_COOKIE_LIFE_NS;
	for (int i = 0; i < RN_COOKIE_SECRET_LEN; i += 8) {
		uint64_t v = env->rng(env->user);

		memcpy(l->secret + i, &v, 8);
	}
	return 0;
}

static int on_init(rn_listener *l, uint64_t now_ns, rn_addr from, const rn_pkt *p,
		   uint8_t *reply, size_t cap, size_t *reply_len)
{
	rn_hello client, server = { .slots = l->cfg.rcv_slots, .max_dgram = l->cfg.max_dgram,
				    .nrails = (uint8_t)l->nrails };
	uint8_t body[RN_HELLO_FIXED + RN_RAIL_WIRE_LEN * RN_MAX_RAILS + RN_COOKIE_LEN];
	uint8_t cookie[RN_COOKIE_LEN];
	rn_cookie ck;
	rn_hdr h = { .type = RN_PT_INIT_ACK, .path = 0xff, .ts = (uint32_t)(now_ns / 1000) };
	ssize_t blen, n;

	if (rn_wire_read_hello(&client, p->payload, p->len, 0))
		return ldrop(l, RN_DROP_MALFORMED);
	do
		ck.id = l->env.rng(l->env.user);
	while (ck.id == 0);
	ck.isn = (uint32_t)l->env.rng(l->env.user);
	uint8_t key[RN_COOKIE_SECRET_LEN];

	ck.t_ms = (uint32_t)(now_ns / 1000000);
	epoch_key(key, l, (uint32_t)((now_ns / 1000000) >> 32));
	rn_cookie_make(cookie, key, &ck, &client, from);
	server.id = ck.id;
	server.isn = ck.isn;
	memcpy(server.rails, l->rails, sizeof(l->rails));
	blen = rn_wire_write_hello(body, sizeof(body), &server, cookie);
	h.dst = client.id;
	n = blen < 0 ? blen : rn_wire_encode(reply, cap, &h, NULL, body, (size_t)blen);
	if (n < 0)
		return (int)n;
	*reply_len = (size_t)n;
	l->inits++;
	return RN_LISTEN_REPLY;
}

static int on_cookie_echo(rn_listener *l, uint64_t now_ns, int local_rail, rn_addr from,
			  const rn_pkt *p, rn_accept_params *a)
{
	rn_hello client;
	rn_cookie ck;
	uint8_t key[RN_COOKIE_SECRET_LEN];
	uint64_t now_ms = now_ns / 1000000;
	uint32_t epoch = (uint32_t)(now_ms >> 32);

	if (rn_wire_read_hello(&client, p->payload, p->len, 1))
		return ldrop(l, RN_DROP_MALFORMED);
	if (rn_get32(client.cookie + 12) > (uint32_t)now_ms && epoch > 0)
		epoch--; /* issued before the low 32 bits wrapped */
	epoch_key(key, l, epoch);
	if (rn_cookie_check(&ck, key, client.cookie, &client, from,
			    (uint32_t)(now_ns / 1000000),
			    (uint32_t)(l->cookie_life_ns / 1000000)) ||
	    ck.id != p->dst)
		return ldrop(l, RN_DROP_COOKIE);
	memset(a, 0, sizeof(*a));
	a->cfg = l->cfg;
	a->id = ck.id;
	a->isn = ck.isn;
	a->peer_id = client.id;
	a->peer_isn = client.isn;
	a->dgram = client.max_dgram < l->cfg.max_dgram ? client.max_dgram : l->cfg.max_dgram;
	a->peer_slots = client.slots;
	memcpy(a->local, l->rails, sizeof(l->rails));
	a->nlocal = l->nrails;
	memcpy(a->remote, client.rails, sizeof(client.rails));
	a->nremote = client.nrails;
	a->from = from;
	a->local_rail = local_rail;
	l->accepts++;
	return RN_LISTEN_ACCEPT;
}

int rn_listener_recv(rn_listener *l, uint64_t now_ns, int local_rail,
		     rn_addr from, const uint8_t *pkt, size_t len,
		     uint8_t *reply, size_t cap, size_t *reply_len,
		     rn_accept_params *accepted)
{
	rn_pkt p;
	int rc = rn_wire_decode(&p, pkt, len);

	*reply_len = 0;
	if (rc)
		return ldrop(l, (rn_drop)(-rc - 1));
	if (local_rail < 0 || local_rail >= l->nrails)
		return ldrop(l, RN_DROP_SOURCE);
	switch (p.type) {
	case RN_PT_INIT:
		return on_init(l, now_ns, from, &p, reply, cap, reply_len);
	case RN_PT_COOKIE_ECHO:
		return on_cookie_echo(l, now_ns, local_rail, from, &p, accepted);
	default:
		return ldrop(l, RN_DROP_UNKNOWN_CONN);
	}
}
