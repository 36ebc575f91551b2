/*
 * fuzz_common.c - helpers and the deterministic pair (see fuzz_common.h).
 *
 * Invariants the pair checks on every call, whatever the fuzzer fed in:
 *   - every datagram rn_conn_write_pkt writes fits its buffer and the
 *     negotiated size, decodes, is addressed to the peer's connection id
 *     and goes to the peer's address of a writable rail; DATA never goes
 *     on a rail whose send side is down;
 *   - new DATA is numbered in order and carries exactly the bytes the
 *     application wrote, at the right stream offset; a retransmission
 *     carries the bytes of the first transmission; the FIN comes after
 *     the last byte written before the shutdown;
 *   - rn_conn_recv returns 0 or RN_ERR_DROP, and only accepts a datagram
 *     that decodes, is addressed to it, and comes from the peer's address
 *     of that path on that path's rail;
 *   - the application reads exactly the bytes the other side wrote, in
 *     order, then the end of stream where the other side shut down (until
 *     a forged DATA is accepted: an unauthenticated transport takes it, so
 *     from then on only the amounts are not checked);
 *   - states only move forward, counters agree with what the application
 *     did, events are stamped with the current time;
 *   - after rn_conn_on_timer the expiry is in the future, or sending what
 *     is owed puts it there;
 *   - every allocation is freed by rn_conn_del.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rn_wire.h"

void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n%s:%d: invariant failed: %s\n  ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---- small helpers ---- */

int fz_known(const char *id)
{
	const char *v = getenv("RI2N_FUZZ_SKIP_KNOWN");

	return v && (strcmp(v, "all") == 0 || strstr(v, id) != NULL);
}

uint64_t fz_rng_next(void *user)
{
	uint64_t *s = user;
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void *mem_alloc(void *user, size_t size)
{
	fz_mem *m = user;
	void *ptr;

	FZ_CHECK(!m->forbid, "%s called the allocator (%zu bytes)", m->who, size);
	m->calls++;
	ptr = calloc(1, size);
	if (ptr)
		m->live++;
	return ptr;
}

static void mem_free(void *user, void *ptr)
{
	fz_mem *m = user;

	FZ_CHECK(!m->forbid, "%s called free", m->who);
	if (!ptr)
		return;
	FZ_CHECK(m->live > 0, "%s freed more than it allocated", m->who);
	m->live--;
	free(ptr);
}

rn_mem fz_mem_of(fz_mem *m)
{
	return (rn_mem){ .alloc = mem_alloc, .free = mem_free, .user = m };
}

uint8_t fz_u8(fz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

uint16_t fz_u16(fz_in *in)
{
	uint16_t hi = fz_u8(in);

	return (uint16_t)(hi << 8 | fz_u8(in));
}

uint32_t fz_u32(fz_in *in)
{
	uint32_t hi = fz_u16(in);

	return hi << 16 | fz_u16(in);
}

uint64_t fz_u64(fz_in *in)
{
	uint64_t hi = fz_u32(in);

	return hi << 32 | fz_u32(in);
}

size_t fz_bytes(fz_in *in, uint8_t *out, size_t n)
{
	if (n > in->n)
		n = in->n;
	memcpy(out, in->p, n);
	in->p += n;
	in->n -= n;
	return n;
}

/*
 * Byte i of a stream: a multiplicative hash of the position, so a byte
 * delivered at the wrong offset (a packet misplaced, repeated or shifted)
 * differs from the one expected; cheap enough to check every byte.
 */
uint8_t fz_pattern_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(((i + seed) * UINT64_C(0x9e3779b97f4a7c15)) >> 56);
}

void fz_pattern_fill(uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = fz_pattern_byte(seed, off + i);
}

int fz_pattern_eq(const uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	uint8_t diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (uint8_t)(buf[i] ^ fz_pattern_byte(seed, off + i));
	return diff == 0;
}

rn_rail_addr fz_rail(int host, int r)
{
	return (rn_rail_addr){
		.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) | (uint32_t)(host + 1),
		.port = (uint16_t)(host ? FZ_SERVER_PORT : FZ_CLIENT_PORT + r),
		.prefix = 24,
	};
}

rn_addr fz_addr(int host, int r)
{
	rn_rail_addr a = fz_rail(host, r);

	return (rn_addr){ a.ip, a.port };
}

rn_addr fz_from(int from, int r, int choice)
{
	rn_addr a = fz_addr(from, r);

	switch (choice & 3) {
	case 0:
		return a;
	case 1:
		return fz_addr(from, 1 - r);
	case 2:
		a.port++;
		return a;
	default:
		return (rn_addr){ (203u << 24) | (113u << 8) | 9u, 4242 }; /* 203.0.113.9 */
	}
}

int fz_addr_eq(rn_addr a, rn_addr b)
{
	return a.ip == b.ip && a.port == b.port;
}

void fz_config(rn_config *cfg)
{
	rn_config_default(cfg);
	cfg->max_dgram = FZ_DGRAM;
	cfg->snd_slots = FZ_SLOTS;
	cfg->rcv_slots = FZ_SLOTS;
}

size_t fz_mutate(fz_in *in, uint8_t *pkt, size_t len, unsigned count)
{
	if (len == 0)
		return 0;
	for (unsigned i = 0; i < count; i++) {
		uint16_t pos = fz_u16(in);
		uint8_t val = fz_u8(in);
		size_t at = (size_t)(pos & 0x7fff) % len;

		if (pos & 0x8000)
			pkt[at] = val;
		else
			pkt[at] ^= val;
	}
	return len;
}

/* ---- the pair: environment ---- */

static uint64_t host_rng(void *user)
{
	fz_host *h = user;

	return fz_rng_next(&h->rng);
}

static void host_event(void *user, const rn_event *ev)
{
	fz_host *h = user;
	fz_pair *p = h->pair;

	p->nevents++;
	FZ_CHECK(ev->time_ns == p->now, "host %d: event %d stamped %llu at %llu", h->id,
		 (int)ev->type, (unsigned long long)ev->time_ns, (unsigned long long)p->now);
	FZ_CHECK(ev->type >= RN_EV_ESTABLISHED && ev->type <= RN_EV_FAILED,
		 "host %d: unknown event type %d", h->id, (int)ev->type);
	if (ev->type == RN_EV_RAIL_DOWN || ev->type == RN_EV_RAIL_UP)
		FZ_CHECK(ev->rail >= 0 && ev->rail < FZ_RAILS, "host %d: rail event on rail %d",
			 h->id, ev->rail);
	if (ev->type == RN_EV_FAILED)
		FZ_CHECK(ev->err <= RN_ERR__FATAL, "host %d: failed with recoverable code %d",
			 h->id, ev->err);
}

static rn_env host_env(fz_pair *p, int host)
{
	return (rn_env){ .mem = fz_mem_of(&p->mem), .rng = host_rng, .on_event = host_event,
			 .user = &p->h[host] };
}

static fz_pkt *pool_push(fz_pair *p, int to, int rail, const uint8_t *pkt, size_t len)
{
	fz_pkt *k = &p->pool[p->pool_next++ % FZ_POOL];

	FZ_CHECK(len <= sizeof(k->data), "a %zu-byte datagram does not fit the pool", len);
	if (p->npool < FZ_POOL)
		p->npool++;
	k->to = to;
	k->rail = rail;
	k->held = 1;
	k->len = len;
	memcpy(k->data, pkt, len);
	return k;
}

/* Index of the rail of `host` with address a, or -1. */
static int rail_of(int host, rn_addr a)
{
	for (int r = 0; r < FZ_RAILS; r++)
		if (fz_addr_eq(a, fz_addr(host, r)))
			return r;
	return -1;
}

uint32_t fz_next_seq(const fz_pair *p, int host)
{
	const fz_host *h = &p->h[host];

	return h->seq_known ? h->seq_base + h->nsent : 0;
}

void fz_advance(fz_pair *p, uint64_t dt_ns)
{
	p->now = dt_ns > FZ_TIME_MAX - p->now ? FZ_TIME_MAX : p->now + dt_ns;
}

/* ---- datagrams out ---- */

/* A DATA packet host sent: new ones are recorded, retransmissions compared. */
static void record_data(fz_pair *p, int host, const rn_pkt *k)
{
	fz_host *h = &p->h[host];
	int fin = (k->flags & RN_F_FIN) != 0;
	uint32_t i;
	uint64_t off;

	if (!h->seq_known) {
		h->seq_known = 1;
		h->seq_base = k->seq;
	}
	i = k->seq - h->seq_base;
	if (i < h->nsent) {
		const fz_sent *s = &h->sent[i];

		if (i >= FZ_SEQMAP)
			return; /* beyond what we remember */
		FZ_CHECK(s->len == k->len && s->fin == fin,
			 "host %d resent seq %u with %u bytes fin %d, first sent with %u fin %d",
			 host, k->seq, k->len, fin, s->len, s->fin);
		FZ_CHECK(fz_pattern_eq(k->payload, h->tx_seed, s->off, s->len),
			 "host %d resent seq %u with other bytes than the first time", host, k->seq);
		return;
	}
	FZ_CHECK(i == h->nsent, "host %d sent new DATA seq %u, expected %u", host, k->seq,
		 h->seq_base + h->nsent);
	off = h->sent_off;
	if (i < FZ_SEQMAP)
		h->sent[i] = (fz_sent){ .off = off, .len = k->len, .fin = (uint8_t)fin };
	h->nsent++;
	h->sent_off += k->len;
	FZ_CHECK(h->sent_off <= h->written, "host %d sent stream bytes up to %llu, wrote %llu",
		 host, (unsigned long long)h->sent_off, (unsigned long long)h->written);
	FZ_CHECK(fz_pattern_eq(k->payload, h->tx_seed, off, k->len),
		 "host %d sent seq %u (offset %llu) with bytes it was not given", host, k->seq,
		 (unsigned long long)off);
	if (fin)
		FZ_CHECK(h->shut && off == h->shut_at,
			 "host %d sent FIN at offset %llu, shut down %d at %llu", host,
			 (unsigned long long)off, h->shut, (unsigned long long)h->shut_at);
}

static void check_output(fz_pair *p, int host, uint32_t writable, const uint8_t *buf,
			 size_t n, size_t cap, const rn_tx *tx)
{
	fz_host *h = &p->h[host];
	rn_conn *peer = p->h[1 - host].conn;
	rn_pkt k;
	int rc = rn_wire_decode(&k, buf, n);
	int prail = rail_of(1 - host, tx->to);

	FZ_CHECK(n <= cap && n <= p->cfg.max_dgram, "host %d wrote %zu bytes (cap %zu, dgram %u)",
		 host, n, cap, p->cfg.max_dgram);
	if (rc != 0 && fz_known("ack-without-block") && n == RN_HDR_LEN && buf[1] == RN_PT_ACK &&
	    cap < RN_HDR_LEN + RN_ACKBLK_LEN)
		return;
	FZ_CHECK(rc == 0, "host %d wrote a datagram that does not decode (%d), type %u flags %#x, "
		 "%zu bytes, cap %zu", host, rc, buf[1], buf[2], n, cap);
	FZ_CHECK(tx->local_rail >= 0 && tx->local_rail < FZ_RAILS &&
			 ((writable >> tx->local_rail) & 1),
		 "host %d sent on rail %d, writable %#x", host, tx->local_rail, writable);
	FZ_CHECK(prail >= 0, "host %d sent to %#x:%u, not a peer rail", host, tx->to.ip,
		 tx->to.port);
	if (k.type == RN_PT_INIT) {
		FZ_CHECK(host == 0 && h->state == RN_ST_INIT_SENT, "host %d sent INIT", host);
		return;
	}
	FZ_CHECK(prail == tx->local_rail, "host %d: rail %d sent to the peer's rail %d", host,
		 tx->local_rail, prail);
	if (peer)
		FZ_CHECK(k.dst == rn_conn_id(peer), "host %d wrote to id %#llx, peer is %#llx",
			 host, (unsigned long long)k.dst, (unsigned long long)rn_conn_id(peer));
	if (tx->path >= 0)
		FZ_CHECK(tx->path == k.path && k.path < FZ_RAILS && tx->path == tx->local_rail,
			 "host %d: tx path %d, header path %u, rail %d", host, tx->path, k.path,
			 tx->local_rail);
	if (k.type == RN_PT_DATA) {
		rn_conn_stats st;

		rn_conn_get_stats(h->conn, &st);
		FZ_CHECK(st.rail[k.path].tx_up, "host %d sent DATA on path %u, which is down",
			 host, k.path);
		record_data(p, host, &k);
	}
}

ssize_t fz_write_pkt(fz_pair *p, int host, uint32_t writable, size_t cap, fz_pkt **out)
{
	fz_host *h = &p->h[host];
	rn_tx tx = { .local_rail = -1, .path = -2 };
	uint8_t *buf;
	ssize_t n;

	*out = NULL;
	if (!h->conn)
		return 0;
	buf = malloc(cap ? cap : 1);
	FZ_CHECK(buf, "out of memory");
	n = rn_conn_write_pkt(h->conn, p->now, writable, buf, cap, &tx);
	if (n <= 0) {
		FZ_CHECK(n == 0 || (n == RN_ERR_NOBUF && cap < p->cfg.max_dgram),
			 "host %d: rn_conn_write_pkt returned %zd with cap %zu", host, n, cap);
		free(buf);
		return n;
	}
	check_output(p, host, writable, buf, (size_t)n, cap, &tx);
	*out = pool_push(p, 1 - host, tx.local_rail, buf, (size_t)n);
	if (p->tap)
		p->tap(p->tap_arg, p, host, buf, (size_t)n, tx.local_rail);
	free(buf);
	return n;
}

/* ---- datagrams in ---- */

/* Is this DATA, which host `from` is said to have sent, the real thing? */
static int data_genuine(const fz_pair *p, int from, const rn_pkt *k)
{
	const fz_host *s = &p->h[from];
	uint32_t i = k->seq - s->seq_base;
	const fz_sent *e;

	if (!s->seq_known || i >= s->nsent || i >= FZ_SEQMAP)
		return 0;
	e = &s->sent[i];
	return e->len == k->len && e->fin == ((k->flags & RN_F_FIN) != 0) &&
	       fz_pattern_eq(k->payload, s->tx_seed, e->off, e->len);
}

static void check_accepted(fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt,
			   size_t len, int genuine, int state_before)
{
	fz_host *h = &p->h[to];
	rn_conn_stats st;
	rn_pkt k;

	FZ_CHECK(rn_wire_decode(&k, pkt, len) == 0, "host %d accepted a datagram that does not decode",
		 to);
	FZ_CHECK(k.dst == rn_conn_id(h->conn), "host %d accepted a datagram for id %#llx", to,
		 (unsigned long long)k.dst);
	if (k.type == RN_PT_INIT_ACK) {
		FZ_CHECK(state_before == RN_ST_INIT_SENT && rail == 0 && fz_addr_eq(from, fz_addr(1, 0)),
			 "host %d accepted INIT_ACK in state %d on rail %d from %#x:%u", to,
			 state_before, rail, from.ip, from.port);
		return;
	}
	rn_conn_get_stats(h->conn, &st);
	FZ_CHECK(k.path < st.npaths && st.rail[k.path].local_rail == rail &&
			 fz_addr_eq(st.rail[k.path].remote, from),
		 "host %d accepted type %u path %u on rail %d from %#x:%u: not that path's peer",
		 to, k.type, k.path, rail, from.ip, from.port);
	if (!genuine && k.type == RN_PT_DATA && !data_genuine(p, 1 - to, &k))
		h->tainted = 1;
}

/* A datagram the server's connection does not claim: the listener's. */
static int to_listener(fz_pair *p, int rail, rn_addr from, const uint8_t *pkt, size_t len)
{
	rn_env env = host_env(p, 1);
	rn_accept_params ap;
	uint8_t *reply = malloc(FZ_CAP);
	size_t rlen = 0;
	int rc, back;

	FZ_CHECK(reply, "out of memory");
	p->mem.forbid = 1; /* the listener allocates nothing */
	p->mem.who = "the listener";
	rc = rn_listener_recv(&p->lis, p->now, rail, from, pkt, len, reply, FZ_CAP, &rlen, &ap);
	p->mem.forbid = 0;
	p->mem.who = "a connection";
	if (rc == RN_LISTEN_REPLY) {
		FZ_CHECK(rlen > 0 && rlen <= len, "listener replied %zu bytes to %zu", rlen, len);
		back = rail_of(0, from);
		if (back == rail) { /* a reply to anyone else leaves the pair */
			pool_push(p, 0, rail, reply, rlen);
			if (p->tap)
				p->tap(p->tap_arg, p, 1, reply, rlen, rail);
		}
	} else if (rc == RN_LISTEN_ACCEPT) {
		rn_conn *c = NULL;

		rc = rn_conn_accept(&c, &ap, &env, p->now);
		FZ_CHECK(rc == 0 || rc == RN_ERR_NOROUTE, "rn_conn_accept returned %d", rc);
		if (!p->h[1].conn)
			p->h[1].conn = c;
		else
			rn_conn_del(c); /* a second connection: not part of the pair */
		rc = 0;
	} else {
		FZ_CHECK(rc == RN_ERR_DROP, "rn_listener_recv returned %d", rc);
		FZ_CHECK(rlen == 0, "listener dropped but set a %zu-byte reply", rlen);
	}
	free(reply);
	return rc;
}

int fz_deliver(fz_pair *p, int to, int rail, rn_addr from, const uint8_t *pkt, size_t len,
	       int genuine)
{
	fz_host *h = &p->h[to];
	uint8_t *buf = malloc(len ? len : 1); /* exactly len: an over-read is caught */
	uint64_t dst = rn_wire_peek_dst(pkt, len);
	int rc;

	FZ_CHECK(buf, "out of memory");
	memcpy(buf, pkt, len);
	if (to == 1 && (!h->conn || dst != rn_conn_id(h->conn))) {
		rc = to_listener(p, rail, from, buf, len);
	} else if (h->conn) {
		int before = rn_conn_state(h->conn);

		rc = rn_conn_recv(h->conn, p->now, rail, from, buf, len);
		FZ_CHECK(rc == 0 || rc == RN_ERR_DROP, "rn_conn_recv returned %d", rc);
		if (rc == 0)
			check_accepted(p, to, rail, from, buf, len, genuine, before);
	} else {
		rc = RN_ERR_DROP;
	}
	free(buf);
	return rc;
}

int fz_deliver_pkt(fz_pair *p, const fz_pkt *k)
{
	return fz_deliver(p, k->to, k->rail, fz_addr(1 - k->to, k->rail), k->data, k->len, 1);
}

/* ---- the application ---- */

void fz_app_write(fz_pair *p, int host, size_t n)
{
	fz_host *h = &p->h[host];
	uint8_t *buf;
	size_t space;
	ssize_t w;

	if (!h->conn)
		return;
	buf = malloc(n ? n : 1);
	FZ_CHECK(buf, "out of memory");
	fz_pattern_fill(buf, h->tx_seed, h->written, n);
	space = rn_conn_write_space(h->conn);
	w = rn_conn_write(h->conn, p->now, buf, n);
	free(buf);
	if (w >= 0) {
		FZ_CHECK((size_t)w == (n < space ? n : space),
			 "host %d: wrote %zd of %zu with %zu bytes of space", host, w, n, space);
		h->written += (uint64_t)w;
	} else {
		FZ_CHECK(w == RN_ERR_SHUT || w == RN_ERR_STATE || w <= RN_ERR__FATAL,
			 "host %d: rn_conn_write returned %zd", host, w);
		FZ_CHECK(space == 0, "host %d: write failed (%zd) with %zu bytes of space", host, w,
			 space);
	}
}

/* Bytes the application got: they must be the next ones the peer wrote. */
static void got(fz_pair *p, int host, const uint8_t *d, size_t n)
{
	fz_host *h = &p->h[host];
	const fz_host *o = &p->h[1 - host];

	if (!h->tainted) {
		FZ_CHECK(!h->eof, "host %d read %zu bytes after the end of stream", host, n);
		FZ_CHECK(h->recvd + n <= o->written, "host %d read %llu bytes, peer wrote %llu",
			 host, (unsigned long long)(h->recvd + n), (unsigned long long)o->written);
		FZ_CHECK(fz_pattern_eq(d, o->tx_seed, h->recvd, n),
			 "host %d read bytes at offset %llu that the peer did not write", host,
			 (unsigned long long)h->recvd);
	}
	h->recvd += n;
}

static void got_end(fz_pair *p, int host, ssize_t r)
{
	fz_host *h = &p->h[host];
	const fz_host *o = &p->h[1 - host];

	if (r == 0) {
		if (!h->tainted)
			FZ_CHECK(o->shut && h->recvd == o->shut_at,
				 "host %d: end of stream after %llu bytes, peer shut %d at %llu", host,
				 (unsigned long long)h->recvd, o->shut, (unsigned long long)o->shut_at);
		h->eof = 1;
	} else {
		FZ_CHECK(r == RN_ERR_AGAIN || r <= RN_ERR__FATAL, "host %d: read returned %zd", host,
			 r);
	}
}

void fz_app_read(fz_pair *p, int host, size_t n, int peek)
{
	fz_host *h = &p->h[host];
	ssize_t r;

	if (!h->conn)
		return;
	if (!peek) {
		uint8_t *buf = malloc(n ? n : 1);

		FZ_CHECK(buf, "out of memory");
		r = rn_conn_read(h->conn, p->now, buf, n);
		FZ_CHECK(r <= (ssize_t)n, "host %d: read %zd into %zu", host, r, n);
		if (r > 0)
			got(p, host, buf, (size_t)r);
		free(buf);
		if (r <= 0)
			got_end(p, host, r);
		return;
	}
	while (n > 0) {
		const uint8_t *d;
		size_t take;

		r = rn_conn_peek(h->conn, &d);
		if (r <= 0) {
			got_end(p, host, r);
			return;
		}
		take = (size_t)r < n ? (size_t)r : n;
		got(p, host, d, take);
		rn_conn_consume(h->conn, p->now, take);
		n -= take;
	}
}

void fz_app_shutdown(fz_pair *p, int host)
{
	fz_host *h = &p->h[host];
	int rc;

	if (!h->conn)
		return;
	rc = rn_conn_shutdown(h->conn, p->now);
	FZ_CHECK(rc == 0 || rc == RN_ERR_AGAIN || rc == RN_ERR_STATE || rc <= RN_ERR__FATAL,
		 "host %d: rn_conn_shutdown returned %d", host, rc);
	if (rc == 0 && !h->shut) {
		h->shut = 1;
		h->shut_at = h->written;
	}
}

/* ---- driving ---- */

unsigned fz_flush(fz_pair *p, int host, uint32_t writable, unsigned max)
{
	unsigned i;

	for (i = 0; i < max; i++) {
		fz_pkt *k;

		if (fz_write_pkt(p, host, writable, FZ_CAP, &k) <= 0)
			break;
		k->held = 0;
		fz_deliver_pkt(p, k);
	}
	return i;
}

/* RI2N_FUZZ_STRICT_EXPIRY=1: sending what on_timer left owed must move the expiry on. */
static int strict_expiry(void)
{
	static int strict = -1;

	if (strict < 0) {
		const char *v = getenv("RI2N_FUZZ_STRICT_EXPIRY");

		strict = v && *v && *v != '0';
	}
	return strict;
}

void fz_timer(fz_pair *p, int host, int force)
{
	rn_conn *c = p->h[host].conn;
	uint64_t e;

	if (!c)
		return;
	e = rn_conn_expiry(c);
	if (!force && e > p->now)
		return;
	rn_conn_on_timer(c, p->now);
	/*
	 * Due again at once is fine only while something is owed (it waits for
	 * a writable rail, not a timer); sending it, and at most a couple more
	 * timer calls at the same time, must move the expiry past now.
	 */
	for (int round = 0; (e = rn_conn_expiry(c)) <= p->now; round++) {
		unsigned sent;

		FZ_CHECK(round < 3,
			 "host %d (state %d): expiry %llu still not after now %llu after %d rounds of "
			 "on_timer and sending all that was owed: a timer loop",
			 host, rn_conn_state(c), (unsigned long long)e, (unsigned long long)p->now,
			 round);
		sent = fz_flush(p, host, (1u << FZ_RAILS) - 1, 256);
		FZ_CHECK(e == p->now || sent > 0,
			 "host %d (state %d): expiry %llu in the past at %llu after on_timer, with "
			 "nothing owed",
			 host, rn_conn_state(c), (unsigned long long)e, (unsigned long long)p->now);
		e = rn_conn_expiry(c);
		if (e > p->now)
			return;
		FZ_CHECK(!strict_expiry(),
			 "host %d (state %d): expiry %llu is not after now %llu after on_timer and "
			 "sending all that was owed (%u datagrams)",
			 host, rn_conn_state(c), (unsigned long long)e, (unsigned long long)p->now,
			 sent);
		rn_conn_on_timer(c, p->now);
	}
}

void fz_pump(fz_pair *p, int rounds, uint32_t drop_rails)
{
	for (int i = 0; i < rounds; i++) {
		for (int h = 0; h < 2; h++)
			fz_timer(p, h, 0);
		for (int h = 0; h < 2; h++) {
			for (int n = 0; n < 64; n++) {
				fz_pkt *k;

				if (fz_write_pkt(p, h, (1u << FZ_RAILS) - 1, FZ_CAP, &k) <= 0)
					break;
				k->held = 0;
				if (!((drop_rails >> k->rail) & 1))
					fz_deliver_pkt(p, k);
			}
		}
		for (int h = 0; h < 2; h++)
			fz_app_read(p, h, SIZE_MAX, 1);
		fz_pair_check(p);
		fz_advance(p, FZ_STEP_NS);
	}
}

void fz_pair_check(fz_pair *p)
{
	for (int i = 0; i < 2; i++) {
		fz_host *h = &p->h[i];
		rn_conn_stats st;
		int s;

		if (!h->conn)
			continue;
		s = rn_conn_state(h->conn);
		FZ_CHECK(s >= h->state && s <= RN_ST_CLOSED, "host %d went from state %d to %d", i,
			 h->state, s);
		h->state = s;
		rn_conn_get_stats(h->conn, &st);
		FZ_CHECK(st.app_rx_bytes == h->recvd && st.app_tx_bytes == h->written,
			 "host %d counts %llu read, %llu written; the application did %llu, %llu", i,
			 (unsigned long long)st.app_rx_bytes, (unsigned long long)st.app_tx_bytes,
			 (unsigned long long)h->recvd, (unsigned long long)h->written);
		if (s == RN_ST_CLOSED)
			FZ_CHECK(rn_conn_expiry(h->conn) == UINT64_MAX,
				 "host %d is closed but has a timer", i);
	}
}

/* ---- setup ---- */

static void deliver_last(fz_pair *p)
{
	fz_pkt *k = &p->pool[(p->pool_next - 1) % FZ_POOL];

	k->held = 0;
	fz_deliver_pkt(p, k);
}

void fz_pair_open(fz_pair *p)
{
	rn_rail_addr rails[2][FZ_RAILS];
	rn_env env;
	fz_pkt *k;
	int rc;

	for (int i = 0; i < 2; i++) {
		memset(&p->h[i], 0, offsetof(fz_host, sent));
		p->h[i].pair = p;
		p->h[i].id = i;
		p->h[i].rng = i ? FZ_SEED_SERVER : FZ_SEED_CLIENT;
		p->h[i].tx_seed = i ? FZ_PATTERN_SERVER : FZ_PATTERN_CLIENT;
		for (int r = 0; r < FZ_RAILS; r++)
			rails[i][r] = fz_rail(i, r);
	}
	p->mem = (fz_mem){ .who = "a connection" };
	fz_config(&p->cfg);
	p->now = FZ_T0;
	p->npool = p->pool_next = 0;
	p->nevents = 0;

	env = host_env(p, 1);
	rc = rn_listener_init(&p->lis, &p->cfg, &env, rails[1], FZ_RAILS);
	FZ_CHECK(rc == 0, "rn_listener_init: %d", rc);
	env = host_env(p, 0);
	rc = rn_conn_connect(&p->h[0].conn, &p->cfg, &env, rails[0], FZ_RAILS, fz_addr(1, 0),
			     p->now);
	FZ_CHECK(rc == 0, "rn_conn_connect: %d", rc);

	/* INIT to the listener, at FZ_T0 exactly: fuzz_listen replays it */
	FZ_CHECK(fz_write_pkt(p, 0, 3, FZ_CAP, &k) == RN_INIT_LEN, "no INIT");
	deliver_last(p);
	FZ_CHECK(p->npool == 2 && p->pool[1].data[1] == RN_PT_INIT_ACK, "no INIT_ACK");
	fz_advance(p, FZ_STEP_NS);
	deliver_last(p);
	FZ_CHECK(fz_write_pkt(p, 0, 3, FZ_CAP, &k) > 0 && k->data[1] == RN_PT_COOKIE_ECHO,
		 "no COOKIE_ECHO");
	deliver_last(p);
	FZ_CHECK(p->h[1].conn != NULL, "the listener did not accept");
	fz_advance(p, FZ_STEP_NS);
	FZ_CHECK(fz_write_pkt(p, 1, 3, FZ_CAP, &k) > 0 && k->data[1] == RN_PT_COOKIE_ACK,
		 "no COOKIE_ACK");
	deliver_last(p);
	fz_pair_check(p);
	FZ_CHECK(p->h[0].state == RN_ST_ESTABLISHED && p->h[1].state == RN_ST_ESTABLISHED,
		 "handshake did not complete: states %d %d", p->h[0].state, p->h[1].state);
	fz_advance(p, FZ_STEP_NS);
}

void fz_pair_close(fz_pair *p)
{
	for (int i = 0; i < 2; i++) {
		rn_conn_del(p->h[i].conn);
		p->h[i].conn = NULL;
	}
	FZ_CHECK(p->mem.live == 0, "%ld allocations not freed by rn_conn_del", p->mem.live);
}
