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
#include <sodium/crypto_shorthash_siphash24.h>
#include <sodium/utils.h>
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

int rn_listener_rail_add(rn_listener *l, const rn_rail_addr *a)
{
	if (l->nrails >= RN_MAX_RAILS)
		return RN_ERR_INVAL;
	l->rails[l->nrails++] = *a;
	return 0;
}

int rn_listener_rail_set(rn_listener *l, int i, const rn_rail_addr *a)
{
	if (i < 0 || i >= l->nrails || !rn_addr_rail_valid(a))
		return RN_ERR_INVAL;
	l->rails[i] = *a;
	return 0;
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
	rn_replay_init(&l->used);
	for (int i = 0; i < RN_COOKIE_SECRET_LEN; i += 8) {
		uint64_t v = env->rng(env->user);

		memcpy(l->secret + i, &v, 8);
	}
	{
		/* from the secret, not the rng: the rng's sequence stays what it was */
		static const uint8_t label[] = "ri2n rate-limit buckets";
		uint8_t h[crypto_shorthash_siphashx24_BYTES];

		crypto_shorthash_siphashx24(h, label, sizeof(label), l->secret);
		memcpy(&l->rl_salt, h, sizeof(l->rl_salt));
	}
	return 0;
}

/*
 * A generic cell rate algorithm: a burst of `burst`, then `rate` a second;
 * *tat is when the earlier replies are paid off.
 */
static int gcra(uint64_t *tat, uint64_t now_ns, uint64_t rate, uint64_t burst)
{
	const uint64_t interval = UINT64_C(1000000000) / rate;
	uint64_t t = *tat > now_ns ? *tat : now_ns;

	if (t - now_ns >= burst * interval)
		return 0;
	*tat = t + interval;
	return 1;
}

static uint32_t src_hash(const rn_listener *l, uint32_t ip)
{
	return (ip ^ l->rl_salt) * UINT32_C(0x9e3779b1);
}

/* The trust slot of ip (another source's, or free, when ip is not trusted). */
static rn_trust *trust_slot(rn_listener *l, uint32_t ip)
{
	return &l->trust[src_hash(l, ip) >> 8 & (RN_TRUST_SLOTS - 1)];
}

/*
 * A source that echoed a valid cookie received our INIT_ACK at its address,
 * so it is no forgery: it is trusted for RN_TRUST_NS after its last such
 * handshake.  Only a verified source can take a slot, so a flood of forged
 * sources never evicts a busy honest client; two verified sources sharing a
 * slot take turns (the other falls back to its bucket and is trusted again
 * at its next handshake).
 */
static void trust_source(rn_listener *l, rn_addr from, uint64_t now_ns)
{
	uint32_t ip = rn_addr_fold(from, 128);
	rn_trust *t = trust_slot(l, ip);

	if (t->ip != ip || t->until_ns <= now_ns)
		*t = (rn_trust){ .ip = ip };
	t->until_ns = now_ns + RN_TRUST_NS;
}

/*
 * May the source have a reply (INIT_ACK, stateless reset)?  Unverified
 * sources share RN_RL_BUCKETS buckets of RN_RL_BURST, then RN_RL_RATE a
 * second: together with a reply never being larger than its trigger, a
 * listener cannot be made to flood a forged source.  A trusted source has a
 * budget of its own, RN_TRUST_RATE a second, which a busy client's
 * thousands of connects a second never reach; a forger who takes its
 * address gets no more bytes sent to it than he sends.
 */
static int reply_allowed(rn_listener *l, rn_addr from, uint64_t now_ns)
{
	/* IPv4: the address; IPv6: the whole address for trust, its /64 for the buckets */
	uint32_t ip = rn_addr_fold(from, 128), site = rn_addr_fold(from, 64);
	rn_trust *t = trust_slot(l, ip);

	if (t->ip == ip && t->until_ns > now_ns)
		return gcra(&t->tat, now_ns, RN_TRUST_RATE, RN_TRUST_BURST);
	return gcra(&l->rl_tat[src_hash(l, site) >> 24 & (RN_RL_BUCKETS - 1)], now_ns, RN_RL_RATE,
		    RN_RL_BURST);
}

static int on_init(rn_listener *l, uint64_t now_ns, rn_addr from, const rn_pkt *p,
		   uint8_t *reply, size_t cap, size_t *reply_len)
{
	/* the window a newcomer gets beside those receiving now (rn_config_rcv_share) */
	uint32_t slots = rn_config_rcv_share(l->env.rcvpool, l->cfg.rcv_slots, l->cfg.max_dgram,
					  l->env.rcvpool ? l->env.rcvpool->active : 0);
	rn_hello client, server = { .slots = slots, .max_dgram = l->cfg.max_dgram,
				    .nrails = (uint8_t)l->nrails };
	uint8_t body[RN_HELLO_FIXED + RN_RAIL_WIRE_MAX * RN_MAX_RAILS + RN_COOKIE_LEN];
	uint8_t cookie[RN_COOKIE_LEN];
	rn_cookie ck;
	rn_hdr h = { .type = RN_PT_INIT_ACK, .path = 0xff, .ts = (uint32_t)(now_ns / 1000) };
	ssize_t blen, n;

	if (rn_wire_read_hello(&client, p->payload, p->len, 0))
		return ldrop(l, RN_DROP_MALFORMED);
	if (!reply_allowed(l, from, now_ns))
		return ldrop(l, RN_DROP_RATE);
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
	/* a cookie builds one connection: a recorded COOKIE_ECHO sent again builds none */
	if (rn_replay_seen(&l->used, ck.id, ck.t_ms, (uint32_t)now_ms,
			   (uint32_t)(l->cookie_life_ns / 1000000)))
		return ldrop(l, RN_DROP_REPLAY);
	rn_replay_add(&l->used, ck.id, ck.t_ms, (uint32_t)now_ms,
		      (uint32_t)(l->cookie_life_ns / 1000000));
	trust_source(l, from, now_ns);
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

uint64_t rn_listener_take_bad_key(rn_listener *l, uint64_t now_ns, rn_addr *from)
{
	uint64_t n = l->bad_key_inits;

	if (n == 0 || (l->bad_key_told_ns && now_ns - l->bad_key_told_ns < UINT64_C(1000000000)))
		return 0;
	*from = l->bad_key_from;
	l->bad_key_inits = 0;
	l->bad_key_told_ns = now_ns;
	return n;
}

void rn_listener_wipe(rn_listener *l)
{
	sodium_memzero(l->cfg.key, sizeof(l->cfg.key));
	sodium_memzero(l->secret, sizeof(l->secret));
}

void rn_listener_forget(rn_listener *l, const rn_accept_params *accepted)
{
	if (l->accepts > 0)
		l->accepts--;
	rn_replay_forget(&l->used, accepted->id);
}

/* Where a keyed listener's resets on rail i come from: their tags name it. */
static rn_addr rail_addr(const rn_listener *l, int i) { return rn_addr_of_rail(&l->rails[i]); }

/*
 * A datagram for a connection id nobody here holds: its sender still
 * believes in a connection this host lost (the process restarted on the
 * same port, or the connection was freed).  A stateless reset tells it at
 * once, where it would otherwise wait for its dead-peer timeout (30 s).  The
 * reset names the id the datagram was sent to and is addressed to no id
 * (the sender's own id is not in its datagrams; its driver hands the reset
 * to the connections on the port and the one whose peer has that id and
 * that address takes it, rn_conn_recv).  Who can make one:
 *   - with a cluster key, only this host for its own rail: the reset's tag
 *     covers this rail's address (on_sealed, rn_wire_seal_reset), so a
 *     reset drawn from another host's listener is refused by the peer;
 *   - without, only who has seen the 64-bit id, which travels on the
 *     connection's rails alone: a host on the path (which can forge a RESET
 *     anyway), never one off it.
 * A reset is never larger than its trigger, never answers a reset or a
 * datagram without an id, and shares the source's INIT_ACK rate limit, so
 * a listener cannot be made to flood or amplify toward a forged source.
 */
static int on_unknown(rn_listener *l, uint64_t now_ns, rn_addr from, const rn_pkt *p,
		      size_t got, uint8_t *reply, size_t cap, size_t *reply_len)
{
	uint8_t body[RN_SRESET_LEN];
	rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff, .ts = (uint32_t)(now_ns / 1000) };
	size_t need = rn_wire_size(0, 0, sizeof(body)) + (l->cfg.keyed ? RN_MAC_LEN : 0);
	ssize_t n;

	switch (p->type) {
	case RN_PT_DATA:
	case RN_PT_ACK:
	case RN_PT_LINK_STATE:
	case RN_PT_LINK_ACK:
	case RN_PT_RAILS:
	case RN_PT_RAILS_ACK:
	case RN_PT_HEARTBEAT:
	case RN_PT_KEEPALIVE:
		break;
	default: /* handshake replies go to clients; resets are never answered */
		return ldrop(l, RN_DROP_UNKNOWN_CONN);
	}
	l->drops[RN_DROP_UNKNOWN_CONN]++;
	/* early data whose COOKIE_ECHO is late or lost: its client sends it again once established */
	if (p->type == RN_PT_DATA && (p->flags & RN_F_EARLY)) {
		l->early_dropped++;
		return RN_ERR_DROP;
	}
	if (p->dst == 0 || got < need)
		return RN_ERR_DROP;
	if (!reply_allowed(l, from, now_ns)) {
		l->resets_limited++;
		return RN_ERR_DROP;
	}
	rn_put64(body, p->dst);
	n = rn_wire_encode(reply, cap, &h, NULL, body, sizeof(body));
	if (n < 0)
		return (int)n;
	*reply_len = (size_t)n;
	l->resets++;
	return RN_LISTEN_REPLY;
}

size_t rn_listener_refuse(rn_listener *l, uint64_t now_ns, const rn_accept_params *accepted,
			  uint8_t *reply, size_t cap)
{
	uint8_t body[RN_SRESET_LEN];
	rn_hdr h = { .type = RN_PT_SRESET, .path = 0xff, .ts = (uint32_t)(now_ns / 1000) };
	ssize_t n;

	rn_listener_forget(l, accepted);
	if (!reply_allowed(l, accepted->from, now_ns))
		return 0;
	rn_put64(body, accepted->id);
	n = rn_wire_encode(reply, l->cfg.keyed ? cap - RN_MAC_LEN : cap, &h, NULL, body,
			   sizeof(body));
	if (n > 0 && l->cfg.keyed)
		n = rn_wire_seal_reset(reply, (size_t)n, cap, l->cfg.key,
				       rail_addr(l, accepted->local_rail));
	if (n <= 0)
		return 0;
	l->resets++;
	return (size_t)n;
}

/*
 * Keyed: a datagram sealed under a connection's keys, which no listener
 * holds.  It cannot tell a key holder's datagram from a forgery, so anyone
 * may draw a reset with one; the reset's tag names this rail's address
 * (rn_wire_seal_reset), which only helps the peer of a connection this host
 * really lost.  Its header is read as it stands (the body is sealed).
 */
static int on_sealed(rn_listener *l, uint64_t now_ns, int local_rail, rn_addr from,
		     const uint8_t *pkt, size_t len, uint8_t *reply, size_t cap,
		     size_t *reply_len)
{
	rn_pkt p;
	ssize_t n;
	int rc;

	memset(&p, 0, sizeof(p));
	if (pkt[0] != RN_WIRE_VERSION)
		return ldrop(l, RN_DROP_VERSION);
	if (local_rail < 0 || local_rail >= l->nrails)
		return ldrop(l, RN_DROP_SOURCE);
	if (cap < RN_MAC_LEN)
		return RN_ERR_NOBUF;
	p.type = pkt[1];
	p.flags = pkt[2]; /* in the clear, as the type: the header is the tag's associated data */
	p.dst = rn_wire_peek_dst(pkt, len);
	rc = on_unknown(l, now_ns, from, &p, len, reply, cap - RN_MAC_LEN, reply_len);
	if (rc != RN_LISTEN_REPLY)
		return rc;
	n = rn_wire_seal_reset(reply, *reply_len, cap, l->cfg.key, rail_addr(l, local_rail));
	if (n < 0)
		return (int)n;
	*reply_len = (size_t)n;
	return rc;
}

int rn_listener_recv(rn_listener *l, uint64_t now_ns, int local_rail,
		     rn_addr from, const uint8_t *pkt, size_t len,
		     uint8_t *reply, size_t cap, size_t *reply_len,
		     rn_accept_params *accepted)
{
	rn_pkt p;
	size_t got = len, room = cap;
	int rc;

	*reply_len = 0;
	if (l->cfg.keyed && len >= RN_HDR_LEN && !rn_wire_cluster_sealed(pkt[1]))
		return on_sealed(l, now_ns, local_rail, from, pkt, len, reply, cap, reply_len);
	if (l->cfg.keyed) {
		ssize_t n = rn_wire_open(pkt, len, l->cfg.key, rn_config_seal_mode(&l->cfg));

		if (n < 0 && len >= RN_HDR_LEN && pkt[1] == RN_PT_INIT) {
			l->bad_key_inits++; /* a client with another key: drivers tell the operator */
			l->bad_key_from = from;
		}
		if (n < 0)
			return ldrop(l, RN_DROP_AUTH);
		len = (size_t)n;
	}
	rc = rn_wire_decode(&p, pkt, len);
	if (rc)
		return ldrop(l, (rn_drop)(-rc - 1));
	if (local_rail < 0 || local_rail >= l->nrails)
		return ldrop(l, RN_DROP_SOURCE);
	if (p.type == RN_PT_COOKIE_ECHO)
		return on_cookie_echo(l, now_ns, local_rail, from, &p, accepted);
	if (l->cfg.keyed) {
		if (cap < RN_MAC_LEN)
			return RN_ERR_NOBUF;
		room = cap - RN_MAC_LEN; /* the tag goes after the reply */
	}
	if (p.type == RN_PT_INIT)
		rc = on_init(l, now_ns, from, &p, reply, room, reply_len);
	else
		rc = on_unknown(l, now_ns, from, &p, got, reply, room, reply_len);
	if (rc == RN_LISTEN_REPLY && l->cfg.keyed) {
		ssize_t n = rn_wire_seal(reply, *reply_len, cap, l->cfg.key, rn_config_seal_mode(&l->cfg));

		if (n < 0)
			return (int)n;
		*reply_len = (size_t)n;
	}
	return rc;
}
