/*
 * rn_wire.c - encode and strictly decode datagrams.
 */
#include <sodium/crypto_generichash_blake2b.h>
#include <sodium/utils.h>
#include <string.h>

#include "rn_wire.h"

#define BAD(reason) (-(1 + (int)(reason)))

/* Payload length each type must have; -1: variable, checked elsewhere. */
static int fixed_payload_len(uint8_t type)
{
	switch (type) {
	case RN_PT_ACK:
	case RN_PT_COOKIE_ACK:
		return 0;
	case RN_PT_LINK_STATE:
		return RN_LINK_STATE_LEN;
	case RN_PT_LINK_ACK:
		return RN_LINK_ACK_LEN;
	case RN_PT_RAILS_ACK:
		return RN_RAILS_ACK_LEN;
	case RN_PT_RESET:
		return RN_RESET_LEN;
	case RN_PT_SRESET:
		return RN_SRESET_LEN;
	case RN_PT_PROBE_ACK:
		return RN_PROBE_ACK_LEN;
	default:
		return -1;
	}
}

static int check_type_rules(const rn_pkt *p, size_t dgram_len)
{
	int fixed = fixed_payload_len(p->type);

	if (fixed >= 0 && p->len != fixed)
		return BAD(RN_DROP_MALFORMED);
	if ((p->flags & RN_F_FIN) && (p->type != RN_PT_DATA || p->len != 0))
		return BAD(RN_DROP_MALFORMED);
	/* a FIN is never bundled: it goes alone */
	if ((p->flags & RN_F_MULTI) && (p->type != RN_PT_DATA || p->len < RN_MULTI_HDR))
		return BAD(RN_DROP_MALFORMED);
	if ((p->flags & RN_F_COPY) && (p->type != RN_PT_DATA || (p->flags & RN_F_MULTI)))
		return BAD(RN_DROP_MALFORMED);
	if ((p->flags & RN_F_LATE) && (p->type != RN_PT_DATA || !(p->flags & RN_F_ACK)))
		return BAD(RN_DROP_MALFORMED);
	/* before the COOKIE_ACK a client has nothing to acknowledge and no FIN to send */
	if ((p->flags & RN_F_EARLY) &&
	    (p->type != RN_PT_DATA || (p->flags & (RN_F_ACK | RN_F_FIN))))
		return BAD(RN_DROP_MALFORMED);
	switch (p->type) {
	case RN_PT_DATA:
		if (p->len == 0 && !(p->flags & RN_F_FIN))
			return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_ACK:
		if (!(p->flags & RN_F_ACK))
			return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_HEARTBEAT:
	case RN_PT_KEEPALIVE:
		/* padded with zeros to the rail's full size: only zeros may follow */
		for (uint16_t i = 0; i < p->len; i++)
			if (p->payload[i])
				return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_PROBE:
		if (p->len < RN_PROBE_LEN)
			return BAD(RN_DROP_MALFORMED);
		for (uint16_t i = RN_PROBE_LEN; i < p->len; i++)
			if (p->payload[i])
				return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_INIT:
		/* padded so that no reply is larger than the request */
		if (p->dst != 0 || dgram_len < RN_INIT_LEN || (p->flags & RN_F_ACK))
			return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_INIT_ACK:
	case RN_PT_COOKIE_ECHO:
		if (p->len < RN_HELLO_FIXED + RN_COOKIE_LEN || (p->flags & RN_F_ACK))
			return BAD(RN_DROP_MALFORMED);
		break;
	case RN_PT_RAILS: {
		rn_rails_msg m;

		if (rn_wire_read_rails(&m, p->payload, p->len) != 0)
			return BAD(RN_DROP_MALFORMED);
		break;
	}
	case RN_PT_SRESET:
		/* addressed to nobody: the sender knows no id of ours */
		if (p->dst != 0 || (p->flags & RN_F_ACK) || rn_get64(p->payload) == 0)
			return BAD(RN_DROP_MALFORMED);
		break;
	default:
		break;
	}
	if (p->type != RN_PT_INIT && p->type != RN_PT_SRESET && p->dst == 0)
		return BAD(RN_DROP_MALFORMED);
	return 0;
}

int rn_wire_decode(rn_pkt *p, const uint8_t *buf, size_t len)
{
	size_t off = RN_HDR_LEN;

	memset(p, 0, sizeof(*p));
	if (len < RN_HDR_LEN || len > RN_MAX_DGRAM)
		return BAD(RN_DROP_MALFORMED);
	if (buf[0] != RN_WIRE_VERSION)
		return BAD(RN_DROP_VERSION);
	p->type = buf[1];
	p->flags = buf[2];
	p->path = buf[3];
	if (p->type == 0 || p->type > RN_PT__MAX)
		return BAD(RN_DROP_TYPE);
	if ((p->flags & ~RN_F__ALL) || rn_get16(buf + 22) != 0)
		return BAD(RN_DROP_MALFORMED);
	p->dst = rn_get64(buf + 4);
	p->seq = rn_get32(buf + 12);
	p->ts = rn_get32(buf + 16);
	p->len = rn_get16(buf + 20);
	if (p->flags & RN_F_ACK) {
		if (len - off < RN_ACKBLK_LEN)
			return BAD(RN_DROP_MALFORMED);
		p->ack = rn_get32(buf + off);
		p->wnd = rn_get32(buf + off + 4);
		p->ts_echo = rn_get32(buf + off + 8);
		p->ts_rx = rn_get32(buf + off + 12);
		p->echo_path = buf[off + 16];
		p->nwords = rn_get16(buf + off + 18);
		if (buf[off + 17] != 0 || p->nwords > RN_MAX_SACK_WORDS)
			return BAD(RN_DROP_MALFORMED);
		off += RN_ACKBLK_LEN;
		if (len - off < 8u * p->nwords)
			return BAD(RN_DROP_MALFORMED);
		p->sack = buf + off;
		off += 8u * p->nwords;
	}
	if (len - off != p->len)
		return BAD(RN_DROP_MALFORMED);
	p->payload = buf + off;
	return check_type_rules(p, len);
}

uint64_t rn_wire_sack_word(const rn_pkt *p, unsigned i)
{
	return i < p->nwords ? rn_get64(p->sack + 8u * i) : 0;
}

ssize_t rn_wire_encode(uint8_t *buf, size_t cap, const rn_hdr *h,
		       const rn_ackblk *ab, const void *payload, size_t len)
{
	size_t need = rn_wire_size(ab != NULL, ab ? ab->nwords : 0, len);
	size_t off = RN_HDR_LEN;

	if (need > cap || len > UINT16_MAX)
		return RN_ERR_NOBUF;
	buf[0] = RN_WIRE_VERSION;
	buf[1] = h->type;
	buf[2] = (uint8_t)((h->flags & ~RN_F_ACK) | (ab ? RN_F_ACK : 0));
	buf[3] = h->path;
	rn_put64(buf + 4, h->dst);
	rn_put32(buf + 12, h->seq);
	rn_put32(buf + 16, h->ts);
	rn_put16(buf + 20, (uint16_t)len);
	rn_put16(buf + 22, 0);
	if (ab) {
		rn_put32(buf + off, ab->ack);
		rn_put32(buf + off + 4, ab->wnd);
		rn_put32(buf + off + 8, ab->ts_echo);
		rn_put32(buf + off + 12, ab->ts_rx);
		buf[off + 16] = ab->echo_path;
		buf[off + 17] = 0;
		rn_put16(buf + off + 18, ab->nwords);
		off += RN_ACKBLK_LEN;
		for (unsigned i = 0; i < ab->nwords; i++, off += 8)
			rn_put64(buf + off, ab->words[i]);
	}
	if (len && payload)
		memcpy(buf + off, payload, len);
	else if (len)
		memset(buf + off, 0, len); /* padding */
	return (ssize_t)need;
}

/*
 * One rail of a hello or RAILS list.  An IPv4 entry is RN_RAIL_WIRE_LEN
 * bytes: u32 address, u16 port, u8 prefix, u8 family 0 (the zero byte of
 * the first format).  An IPv6 entry is RN_RAIL6_WIRE_LEN bytes: the same
 * 8-byte head with the address's first 4 bytes, family RN_RAIL_FAMILY_V6,
 * then its last 12 bytes.  Its length follows from the head alone.
 */
size_t rn_wire_rail_len(const rn_rail_addr *r)
{
	return r->v6 ? RN_RAIL6_WIRE_LEN : RN_RAIL_WIRE_LEN;
}

static uint8_t *put_rail(uint8_t *p, const rn_rail_addr *r)
{
	if (r->v6)
		memcpy(p, r->ip6, 4);
	else
		rn_put32(p, r->ip);
	rn_put16(p + 4, r->port);
	p[6] = r->prefix;
	p[7] = r->v6 ? RN_RAIL_FAMILY_V6 : 0;
	if (r->v6)
		memcpy(p + RN_RAIL_WIRE_LEN, r->ip6 + 4, 12);
	return p + rn_wire_rail_len(r);
}

/* Reads a rail from p[0..left); returns its length, or -1 if it is none (or cut short). */
static ssize_t get_rail(rn_rail_addr *r, const uint8_t *p, size_t left)
{
	memset(r, 0, sizeof(*r));
	if (left < RN_RAIL_WIRE_LEN || (p[7] != 0 && p[7] != RN_RAIL_FAMILY_V6))
		return -1;
	r->port = rn_get16(p + 4);
	r->prefix = p[6];
	if (p[7] == RN_RAIL_FAMILY_V6) {
		if (left < RN_RAIL6_WIRE_LEN)
			return -1;
		r->v6 = 1;
		memcpy(r->ip6, p, 4);
		memcpy(r->ip6 + 4, p + RN_RAIL_WIRE_LEN, 12);
	} else {
		r->ip = rn_get32(p);
	}
	return rn_addr_rail_valid(r) ? (ssize_t)rn_wire_rail_len(r) : -1;
}

/* Reads n rails from p[0..left) into rails; returns the bytes they took, or -1. */
static ssize_t get_rails(rn_rail_addr *rails, unsigned n, const uint8_t *p, size_t left)
{
	size_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		ssize_t k = get_rail(&rails[i], p + off, left - off);

		if (k < 0)
			return -1;
		off += (size_t)k;
	}
	return (ssize_t)off;
}

/* Bytes the n rails take on the wire. */
static size_t rails_len(const rn_rail_addr *rails, unsigned n)
{
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += rn_wire_rail_len(&rails[i]);
	return len;
}

ssize_t rn_wire_write_hello(uint8_t *buf, size_t cap, const rn_hello *h,
			    const uint8_t *cookie)
{
	size_t need;
	uint8_t *p = buf;

	if (h->nrails > RN_MAX_RAILS)
		return RN_ERR_NOBUF;
	need = RN_HELLO_FIXED + rails_len(h->rails, h->nrails) + (cookie ? RN_COOKIE_LEN : 0);
	if (need > cap)
		return RN_ERR_NOBUF;
	rn_put64(p, h->id);
	rn_put32(p + 8, h->isn);
	rn_put32(p + 12, h->slots);
	rn_put32(p + 16, h->max_dgram);
	p[20] = h->nrails;
	p[21] = p[22] = p[23] = 0;
	p += RN_HELLO_FIXED;
	for (unsigned i = 0; i < h->nrails; i++)
		p = put_rail(p, &h->rails[i]);
	if (cookie)
		memcpy(p, cookie, RN_COOKIE_LEN);
	return (ssize_t)need;
}

ssize_t rn_wire_write_rails(uint8_t *buf, size_t cap, const rn_rails_msg *m)
{
	size_t need;
	uint8_t *p = buf + RN_RAILS_FIXED;

	if (m->nrails > RN_MAX_RAILS || m->npaths > RN_MAX_RAILS)
		return RN_ERR_NOBUF;
	need = RN_RAILS_FIXED + rails_len(m->rails, m->nrails) +
	       (size_t)RN_PAIR_WIRE_LEN * m->npaths;
	if (need > cap)
		return RN_ERR_NOBUF;
	rn_put32(buf, m->version);
	buf[4] = m->nrails;
	buf[5] = m->npaths;
	buf[6] = buf[7] = 0;
	for (unsigned i = 0; i < m->nrails; i++)
		p = put_rail(p, &m->rails[i]);
	for (unsigned k = 0; k < m->npaths; k++, p += RN_PAIR_WIRE_LEN) {
		p[0] = m->pairs[k][0];
		p[1] = m->pairs[k][1];
	}
	return (ssize_t)need;
}

int rn_wire_read_rails(rn_rails_msg *m, const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf + RN_RAILS_FIXED;
	ssize_t rl;

	memset(m, 0, sizeof(*m));
	if (len < RN_RAILS_FIXED)
		return BAD(RN_DROP_MALFORMED);
	m->version = rn_get32(buf);
	m->nrails = buf[4];
	m->npaths = buf[5];
	if (buf[6] | buf[7] || m->nrails == 0 || m->nrails > RN_MAX_RAILS ||
	    m->npaths > RN_MAX_RAILS)
		return BAD(RN_DROP_MALFORMED);
	rl = get_rails(m->rails, m->nrails, p, len - RN_RAILS_FIXED);
	if (rl < 0 || len != RN_RAILS_FIXED + (size_t)rl + (size_t)RN_PAIR_WIRE_LEN * m->npaths)
		return BAD(RN_DROP_MALFORMED);
	p += rl;
	for (unsigned k = 0; k < m->npaths; k++, p += RN_PAIR_WIRE_LEN) {
		m->pairs[k][0] = p[0];
		m->pairs[k][1] = p[1];
		if (p[0] >= RN_MAX_RAILS || p[1] >= RN_MAX_RAILS)
			return BAD(RN_DROP_MALFORMED);
	}
	return 0;
}

int rn_wire_read_hello(rn_hello *h, const uint8_t *buf, size_t len, int with_cookie)
{
	size_t body, tail = with_cookie ? RN_COOKIE_LEN : 0;
	ssize_t rl;
	const uint8_t *p;

	memset(h, 0, sizeof(*h));
	if (len < RN_HELLO_FIXED)
		return BAD(RN_DROP_MALFORMED);
	h->id = rn_get64(buf);
	h->isn = rn_get32(buf + 8);
	h->slots = rn_get32(buf + 12);
	h->max_dgram = rn_get32(buf + 16);
	h->nrails = buf[20];
	if (buf[21] | buf[22] | buf[23])
		return BAD(RN_DROP_MALFORMED);
	if (h->id == 0 || h->nrails == 0 || h->nrails > RN_MAX_RAILS ||
	    h->slots < RN_MIN_SLOTS || h->slots > RN_MAX_SLOTS ||
	    (h->slots & (h->slots - 1)) || h->max_dgram < RN_MIN_DGRAM ||
	    h->max_dgram > RN_MAX_DGRAM)
		return BAD(RN_DROP_MALFORMED);
	if (len < RN_HELLO_FIXED + tail)
		return BAD(RN_DROP_MALFORMED);
	/* the rails end before the cookie */
	rl = get_rails(h->rails, h->nrails, buf + RN_HELLO_FIXED, len - RN_HELLO_FIXED - tail);
	if (rl < 0)
		return BAD(RN_DROP_MALFORMED);
	body = RN_HELLO_FIXED + (size_t)rl;
	p = buf + body;
	h->raw = buf;
	h->raw_len = body;
	if (with_cookie) {
		h->cookie = p;
		p += RN_COOKIE_LEN;
		if ((size_t)(p - buf) != len)
			return BAD(RN_DROP_MALFORMED);
	} else {
		/* INIT: only zero padding may follow */
		for (; p < buf + len; p++)
			if (*p)
				return BAD(RN_DROP_MALFORMED);
	}
	return 0;
}

uint64_t rn_wire_peek_dst(const uint8_t *pkt, size_t len)
{
	return len >= RN_HDR_LEN ? rn_get64(pkt + 4) : 0;
}

uint64_t rn_wire_peek_sreset(const uint8_t *pkt, size_t len)
{
	if (len < RN_HDR_LEN + RN_SRESET_LEN || pkt[0] != RN_WIRE_VERSION ||
	    pkt[1] != RN_PT_SRESET || rn_get64(pkt + 4) != 0)
		return 0;
	return rn_get64(pkt + RN_HDR_LEN);
}

int rn_wire_peek_accepts(const uint8_t *pkt, size_t len)
{
	/* the type is in the clear in a sealed datagram too (rn_wire_cluster_sealed) */
	return len < 2 || pkt[1] == RN_PT_COOKIE_ECHO;
}

int rn_wire_peek_early(const uint8_t *pkt, size_t len)
{
	return len >= RN_HDR_LEN && pkt[1] == RN_PT_DATA && (pkt[2] & RN_F_EARLY);
}

int rn_wire_peek_opens(const uint8_t *pkt, size_t len)
{
	return len >= 2 && pkt[1] == RN_PT_INIT;
}

/* ---- authentication ---- */

/* The handshake tag: BLAKE2b keyed with the cluster key, personalized with the seal mode. */
static void hs_tag(uint8_t tag[RN_MAC_LEN], const uint8_t *buf, size_t len,
		   const uint8_t key[RN_KEY_LEN], unsigned mode)
{
	uint8_t personal[crypto_generichash_blake2b_PERSONALBYTES] = "ri2n seal mode";

	if (mode == 0) { /* the default mode's tags are plain keyed BLAKE2b, as before modes */
		crypto_generichash_blake2b(tag, RN_MAC_LEN, buf, len, key, RN_KEY_LEN);
		return;
	}
	personal[sizeof(personal) - 1] = (uint8_t)mode;
	crypto_generichash_blake2b_salt_personal(tag, RN_MAC_LEN, buf, len, key, RN_KEY_LEN, NULL,
						 personal);
}

ssize_t rn_wire_seal(uint8_t *buf, size_t len, size_t cap, const uint8_t key[RN_KEY_LEN],
		     unsigned mode)
{
	if (len > cap || cap - len < RN_MAC_LEN)
		return RN_ERR_NOBUF;
	hs_tag(buf + len, buf, len, key, mode);
	return (ssize_t)(len + RN_MAC_LEN);
}

ssize_t rn_wire_open(const uint8_t *buf, size_t len, const uint8_t key[RN_KEY_LEN], unsigned mode)
{
	uint8_t tag[RN_MAC_LEN];

	if (len < RN_HDR_LEN + RN_MAC_LEN)
		return RN_ERR_DROP;
	len -= RN_MAC_LEN;
	hs_tag(tag, buf, len, key, mode);
	if (sodium_memcmp(tag, buf + len, RN_MAC_LEN) != 0)
		return RN_ERR_DROP;
	return (ssize_t)len;
}

/* The reset's tag: BLAKE2b keyed with the cluster key over the datagram and the sender's address. */
static void reset_tag(uint8_t tag[RN_MAC_LEN], const uint8_t *buf, size_t len,
		      const uint8_t key[RN_KEY_LEN], rn_addr sender)
{
	crypto_generichash_blake2b_state st;
	uint8_t a[18];
	size_t alen = 6;

	/* IPv4: address and port, as before IPv6; IPv6: its 16 bytes and port */
	if (sender.v6) {
		memcpy(a, sender.ip6, 16);
		rn_put16(a + 16, sender.port);
		alen = 18;
	} else {
		rn_put32(a, sender.ip);
		rn_put16(a + 4, sender.port);
	}
	crypto_generichash_blake2b_init(&st, key, RN_KEY_LEN, RN_MAC_LEN);
	crypto_generichash_blake2b_update(&st, buf, len);
	crypto_generichash_blake2b_update(&st, a, alen);
	crypto_generichash_blake2b_final(&st, tag, RN_MAC_LEN);
	sodium_memzero(&st, sizeof(st));
}

ssize_t rn_wire_seal_reset(uint8_t *buf, size_t len, size_t cap, const uint8_t key[RN_KEY_LEN],
			   rn_addr sender)
{
	if (len > cap || cap - len < RN_MAC_LEN)
		return RN_ERR_NOBUF;
	reset_tag(buf + len, buf, len, key, sender);
	return (ssize_t)(len + RN_MAC_LEN);
}

ssize_t rn_wire_open_reset(const uint8_t *buf, size_t len, const uint8_t key[RN_KEY_LEN],
			   rn_addr sender)
{
	uint8_t tag[RN_MAC_LEN];

	if (len < RN_HDR_LEN + RN_MAC_LEN)
		return RN_ERR_DROP;
	len -= RN_MAC_LEN;
	reset_tag(tag, buf, len, key, sender);
	if (sodium_memcmp(tag, buf + len, RN_MAC_LEN) != 0)
		return RN_ERR_DROP;
	return (ssize_t)len;
}
