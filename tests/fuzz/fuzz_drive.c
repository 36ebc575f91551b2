/*
 * fuzz_drive.c - the application on each end of the pair, timers, and a
 * clean network: the pumps that move datagrams and the final drain that
 * checks every byte gets through (invariants: fuzz_pair.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

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
	kit_pattern_fill(buf, h->tx_seed, h->written, n);
	space = rn_conn_write_space(h->conn);
	w = rn_conn_write(h->conn, p->now, buf, n);
	free(buf);
	if (w >= 0) {
		FZ_CHECK((size_t)w == (n < space ? n : space),
			 "host %d: wrote %zd of %zu with %zu bytes of space", host, w, n, space);
		h->written += (uint64_t)w;
	} else {
		FZ_CHECK(w == RN_ERR_SHUT || w == RN_ERR_STATE || fz_is_fatal((int)w),
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
		FZ_CHECK((kit_pattern_check(d, o->tx_seed, h->recvd, n) == 0),
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
		FZ_CHECK(r == RN_ERR_AGAIN || fz_is_fatal((int)r), "host %d: read returned %zd", host,
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
	FZ_CHECK(rc == 0 || rc == RN_ERR_AGAIN || rc == RN_ERR_STATE || fz_is_fatal(rc),
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

static int all_delivered(const fz_pair *p)
{
	for (int i = 0; i < 2; i++)
		if (p->h[i].recvd != p->h[1 - i].written || p->h[i].eof != p->h[1 - i].shut)
			return 0;
	return 1;
}

static int drain_applies(const fz_pair *p)
{
	if (p->forged_any)
		return 0; /* a forged ACK may have acknowledged what never arrived */
	for (int i = 0; i < 2; i++) {
		rn_conn *c = p->h[i].conn;

		if (c && (rn_conn_error(c) || rn_conn_state(c) == RN_ST_CLOSED))
			return 0; /* died (abort, timeout, reset): nothing more is owed */
	}
	/* the client talks to the pair's server (not one of a restarted handshake) */
	if (p->h[1].conn && rn_conn_state(p->h[0].conn) >= RN_ST_ESTABLISHED &&
	    p->client_dst != rn_conn_id(p->h[1].conn))
		return 0;
	return p->h[0].conn != NULL && rn_conn_state(p->h[0].conn) != RN_ST_CLOSED;
}

void fz_drain(fz_pair *p)
{
	uint64_t start = p->now;
	int rounds = 0;

	p->drain_ns = 0;
	if (!drain_applies(p))
		return;
	/*
	 * The RTO is capped (2 s), so a clean network delivers everything within
	 * the drain time whatever delays came before.
	 */
	const uint64_t limit = FZ_DRAIN_NS;

	while (!all_delivered(p)) {
		unsigned sent = 0;
		uint64_t next = UINT64_MAX;

		if (!drain_applies(p))
			return; /* e.g. the handshake timed out before the drain began */
		FZ_CHECK(rounds++ < FZ_DRAIN_ROUNDS && p->now - start < limit,
			 "a clean network did not deliver everything in %d rounds, %.3f s: "
			 "host 0 read %llu of %llu%s, host 1 read %llu of %llu%s",
			 rounds, (double)(p->now - start) / 1e9, (unsigned long long)p->h[0].recvd,
			 (unsigned long long)p->h[1].written, p->h[1].shut && !p->h[0].eof ? " (no FIN)" : "",
			 (unsigned long long)p->h[1].recvd, (unsigned long long)p->h[0].written,
			 p->h[0].shut && !p->h[1].eof ? " (no FIN)" : "");
		for (int h = 0; h < 2; h++)
			fz_timer(p, h, 0);
		for (int h = 0; h < 2; h++)
			sent += fz_flush(p, h, (1u << FZ_RAILS) - 1, 256);
		for (int h = 0; h < 2; h++) {
			fz_app_read(p, h, SIZE_MAX, 1);
			if (p->h[h].conn && rn_conn_expiry(p->h[h].conn) < next)
				next = rn_conn_expiry(p->h[h].conn);
		}
		fz_pair_check(p);
		/* busy: small steps; idle: straight to the next timer */
		if (sent || next <= p->now + FZ_STEP_NS)
			fz_advance(p, FZ_STEP_NS);
		else if (next != UINT64_MAX)
			fz_advance(p, next - p->now);
		else
			fz_advance(p, UINT64_C(1000000000));
		p->drain_ns = p->now - start;
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
		/* forward only; a client whose cookie aged goes back to INIT for a fresh one */
		FZ_CHECK((s >= h->state || (s == RN_ST_INIT_SENT && h->state == RN_ST_COOKIE_SENT)) &&
				 s <= RN_ST_CLOSED,
			 "host %d went from state %d to %d", i, h->state, s);
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
