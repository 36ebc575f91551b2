/*
 * rn_conn_send.c - datagrams out.  Each call writes the most urgent datagram:
 * handshake, RESET, COOKIE_ACK, LINK_STATE, LINK_ACK, heartbeats,
 * keepalives, DATA (retransmissions first), a standalone ACK.  Any datagram
 * carries the ACK block when one is owed and it fits.
 */
#include <string.h>

#include "rn_conn.h"
#include "rn_seq.h"

/*
 * 1.5 ms: while we stream full-size datagrams, a working rail that carried
 * nothing full-size for this long (ACKs only, or passed over by the rail
 * choice) gets a KEEPALIVE padded to full size.  The peer's size verdict
 * needs at least 2 ms without one (RN_FAIL_SILENCE_MIN_NS in
 * rn_conn_recv.c), so a healthy rail is never taken for an MTU black hole
 * (the simulator shows healthy GbE rails passed over for about 1 ms).
 * Idle keepalives stay small: 10,000 idle connections would otherwise send
 * 30 MB/s of padding.
 */
#define RN_FULL_EVIDENCE_NS UINT64_C(1500000)

/* Whether rail k owes the peer full-size evidence (never to an unproven address). */
static int owes_full(const rn_conn *c, int k, uint64_t now_ns)
{
	const rn_rail *r = &c->rail[k];

	return r->validated && rn_rail_tx_up(r) && now_ns - r->last_full_tx_ns >= RN_FULL_EVIDENCE_NS;
}

/*
 * Counts a datagram sent on rail k.  A working rail that went a quarter of
 * the peer's evaluation window without a packet (its window is small, or
 * the rail choice passed it over) gets a keepalive, so the peer's receive
 * count always sees every live rail: only a rail that swallows packets
 * falls below fail_min.  Likewise, while we stream full-size datagrams (the
 * peer judges size then), a rail that owes full-size evidence gets a padded
 * keepalive (RN_FULL_EVIDENCE_NS).
 */
static void count_tx(rn_conn *c, int k, uint64_t now_ns, size_t len)
{
	rn_rail *r = &c->rail[k];
	uint32_t quarter = c->cfg.fail_window / 4 ? c->cfg.fail_window / 4 : 1;
	/* full-size datagrams for a while (not the first of a burst after a pause) */
	int streaming = len >= c->dgram && now_ns - r->last_full_tx_ns < RN_FULL_EVIDENCE_NS;

	r->st.tx_packets++;
	r->st.tx_bytes += len;
	r->last_tx_ns = now_ns;
	rn_timer_on_tx(c, now_ns);
	rn_peer_on_tx(c, k, now_ns);
	/*
	 * the peer takes it as full-size evidence (count_rx); a datagram of
	 * several packets does not count here: if the rail's size shrank under
	 * it, it is lost while one of exactly dgram bytes still proves the rail
	 */
	if (len == c->dgram) {
		r->last_full_tx_ns = now_ns;
		c->probe.ka_full_pending &= ~(1u << k);
	}
	c->st.tx_packets++;
	r->tx_mark = c->st.tx_packets;
	c->probe.ka_pending &= ~(1u << k);
	for (int i = 0; i < c->npaths; i++) {
		if (i == k || !rn_rail_tx_up(&c->rail[i]))
			continue;
		if (c->st.tx_packets - c->rail[i].tx_mark >= quarter)
			c->probe.ka_pending |= 1u << i;
		if (streaming && owes_full(c, i, now_ns))
			c->probe.ka_full_pending |= 1u << i;
	}
}

static int writable_rail(const rn_conn *c, int k, uint32_t writable)
{
	return (writable >> c->rail[k].local_rail) & 1;
}

/*
 * Rails that can carry a control packet now: ones working both ways (a rail
 * we stopped receiving on is likely broken both ways: cables and switches
 * fail whole), else ones the peer receives on, else any.
 */
static uint32_t control_rails(const rn_conn *c, uint32_t writable)
{
	uint32_t both = 0, tx = 0, all = 0;

	for (int k = 0; k < c->npaths; k++) {
		if (!writable_rail(c, k, writable) || !c->rail[k].validated)
			continue;
		all |= 1u << k;
		if (rn_rail_tx_up(&c->rail[k])) {
			tx |= 1u << k;
			if (c->rail[k].rx_up)
				both |= 1u << k;
		}
	}
	return both ? both : tx ? tx : all;
}

/*
 * Writes a control packet with an ACK block on rail k.  pad > 0: a NULL
 * payload is zero padding up to the full datagram size (heartbeats and
 * keepalives: full-size evidence for the peer's count_rx); pad < 0: no ACK
 * block either, as small as the packet gets.
 */
static ssize_t write_ctl_pad(rn_conn *c, uint64_t now_ns, int k, uint8_t type,
			     const uint8_t *payload, size_t len, int pad, uint8_t *buf,
			     size_t cap, rn_tx *tx)
{
	uint64_t words[RN_MAX_SACK_WORDS];
	rn_hdr h = { .type = type, .path = (uint8_t)k, .dst = c->peer_id,
		     .ts = rn_now_us(now_ns) };
	size_t limit = cap < c->dgram ? cap : c->dgram;
	rn_ackblk ab;
	int with_ack;
	ssize_t n;

	if (limit < RN_HDR_LEN + len)
		return RN_ERR_NOBUF;
	if (pad > 0 && limit < c->dgram)
		return RN_ERR_NOBUF; /* a short probe would prove nothing */
	with_ack = pad >= 0 && rn_conn_build_ack(c, &ab, words, limit - RN_HDR_LEN - len);
	if (pad > 0)
		len = limit - rn_wire_size(with_ack, with_ack ? ab.nwords : 0, 0);
	n = rn_wire_encode(buf, cap, &h, with_ack ? &ab : NULL, payload, len);
	if (n < 0)
		return n;
	if (with_ack)
		rn_conn_ack_sent(c, &ab, &h);
	tx->path = k;
	tx->local_rail = c->rail[k].local_rail;
	tx->to = c->rail[k].remote;
	count_tx(c, k, now_ns, (size_t)n);
	return n;
}

static ssize_t write_ctl(rn_conn *c, uint64_t now_ns, int k, uint8_t type,
			 const uint8_t *payload, size_t len, uint8_t *buf, size_t cap,
			 rn_tx *tx)
{
	return write_ctl_pad(c, now_ns, k, type, payload, len, 0, buf, cap, tx);
}

/* The window our hello offers: the share of the receive pool, if any (rn_core.h). */
static uint32_t hello_slots(const rn_conn *c)
{
	const rn_rcvpool *p = c->env.rcvpool;

	return rn_config_rcv_share(p, c->cfg.rcv_slots, c->cfg.max_dgram, p ? p->active : 0);
}

static ssize_t write_handshake(rn_conn *c, uint64_t now_ns, uint32_t writable,
			       uint8_t *buf, size_t cap, rn_tx *tx)
{
	uint8_t body[RN_INIT_LEN];
	rn_hello h = { .id = c->id, .isn = c->hs.isn, .slots = hello_slots(c),
		       .max_dgram = c->cfg.max_dgram, .nrails = (uint8_t)c->nlocal };
	rn_hdr hd = { .path = 0xff, .ts = rn_now_us(now_ns) };
	int echo = c->state == RN_ST_COOKIE_SENT;
	ssize_t blen, n;

	if (!c->hs.due || !((writable >> c->hs.rail) & 1))
		return 0;
	memcpy(h.rails, c->local, (size_t)c->nlocal * sizeof(c->local[0]));
	memset(body, 0, sizeof(body));
	blen = rn_wire_write_hello(body, sizeof(body), &h, echo ? c->hs.cookie : NULL);
	if (blen < 0)
		return blen;
	if (echo) {
		hd.type = RN_PT_COOKIE_ECHO;
		hd.dst = c->peer_id;
		for (int k = 0; k < c->npaths; k++)
			if (c->rail[k].local_rail == c->hs.rail &&
			    rn_addr_same_host(&c->rail[k].remote, &c->peer))
				hd.path = (uint8_t)k;
	} else {
		hd.type = RN_PT_INIT;
		blen = RN_INIT_LEN - RN_HDR_LEN; /* zero padding: see RN_INIT_LEN */
	}
	n = rn_wire_encode(buf, cap, &hd, NULL, body, (size_t)blen);
	if (n < 0)
		return n;
	c->hs.due = 0;
	rn_timer_on_handshake_sent(c, now_ns);
	tx->local_rail = c->hs.rail;
	tx->to = c->peer;
	tx->path = -1;
	c->st.tx_packets++;
	return n;
}

/* The largest datagram rail k carries now: its size search's, at least the connection's. */
static size_t rail_limit(const rn_conn *c, int k, size_t cap)
{
	uint32_t size = rn_pmtu_size(&c->rail[k].pm);
	size_t limit = size > c->dgram ? size : c->dgram;

	return cap < limit ? cap : limit;
}

/*
 * How many new packets from seq on go in one datagram of at most `limit`
 * bytes on rail r (RN_F_MULTI when more than one): consecutive, inside the
 * peer's window, never the FIN.  The rail's window only has to have room
 * for the first: a datagram may take it up to 5 packets (7 KB) past, which
 * is noise beside a GbE rail's window, where stopping at it sent datagrams
 * of 2-3 packets whenever the rail was window-limited (ACKs free a few at a
 * time).  *plen: the payload bytes.
 */
static unsigned bundle(const rn_conn *c, const rn_rail *r, uint32_t seq, size_t limit,
		       size_t *plen)
{
	const rn_sndq *q = &c->sq;
	size_t total = RN_MULTI_HDR + q->slot[seq & q->mask].len;
	unsigned nb = 1;

	for (uint32_t next = seq + 1; next != q->end && rn_seq_lt(next, c->peer_wnd); next++) {
		const rn_sslot *s = &q->slot[next & q->mask];

		if ((s->flags & RN_SS_FIN) || RN_HDR_LEN + total + RN_MULTI_HDR + s->len > limit ||
		    r->ftail - r->fhead + nb > r->fmask)
			break;
		total += RN_MULTI_HDR + s->len;
		nb++;
	}
	*plen = nb > 1 ? total : q->slot[seq & q->mask].len;
	return nb;
}

/* Writes the payload of a DATA of nb packets from seq on behind its header (n bytes in all). */
static void fill_multi(rn_sndq *q, uint32_t seq, unsigned nb, uint8_t *buf, size_t n,
		       size_t plen)
{
	uint8_t *d = buf + n - plen;

	for (unsigned i = 0; i < nb; i++) {
		const rn_sslot *s = rn_sndq_slot(q, seq + i);

		rn_put16(d, s->len);
		if (s->len) /* a FIN has no payload, and maybe no ring storage */
			memcpy(d + RN_MULTI_HDR, rn_sndq_data(q, seq + i), s->len);
		d += RN_MULTI_HDR + s->len;
	}
}

/* Bookkeeping of a packet just sent on rail k, alone or with others (multi). */
static void data_sent(rn_conn *c, int k, uint32_t seq, int retx, int multi, uint64_t now_ns)
{
	rn_sslot *s = rn_sndq_slot(&c->sq, seq);
	rn_rail *r = &c->rail[k];

	s->tx_idx = rn_rail_on_send(r, seq, now_ns);
	s->rail = (uint8_t)k;
	s->sent_ns = now_ns;
	s->flags = (uint8_t)((s->flags & ~RN_SS_MULTI) | RN_SS_FLIGHT | (multi ? RN_SS_MULTI : 0));
	if (s->tx_count < UINT8_MAX)
		s->tx_count++;
	if (retx) {
		c->st.retransmits++;
		r->st.retransmits++;
	} else {
		c->sq.nxt++;
		rn_conn_grow_send(c);
		c->ack.data_tx_ns = now_ns;
	}
}

/*
 * The backup rails that carry no DATA now: all of them while another rail
 * works (sends, is proven, and is not stalled: rn_timer.c), however full
 * its window; none once no other rail does.  A primary that swallows
 * everything stalls within RN_STALL_NS, long before the peer's verdict
 * (which needs the traffic the backup then brings): its losses go out on
 * the backup then.  Backups still get keepalives (count_tx), so the peer
 * keeps judging them.
 */
uint32_t rn_conn_idle_backups(const rn_conn *c)
{
	uint32_t backups = 0, working = 0;

	for (int i = 0; i < c->npaths; i++) {
		const rn_rail *r = &c->rail[i];

		if (r->backup)
			backups |= 1u << i;
		else if (rn_rail_tx_up(r) && r->validated && !r->rto_backoff && !r->stalled)
			working |= 1u << i;
	}
	return working ? backups : 0;
}

/*
 * Whether the new packet seq belongs to a small write (RI2N_REDUNDANT_BYTES):
 * it and everything written after it add up to at most redundant_bytes, and
 * it carries bytes (a FIN goes once).  Stops counting past the limit, so a
 * stream's full ring costs one packet's look.
 */
static int small_write(const rn_conn *c, uint32_t seq)
{
	const rn_sndq *q = &c->sq;
	uint32_t limit = c->cfg.redundant_bytes;
	size_t n = 0;

	if (!limit || !q->slot[seq & q->mask].len)
		return 0;
	for (; seq != q->end; seq++) {
		const rn_sslot *s = &q->slot[seq & q->mask];

		if (s->flags & RN_SS_FIN)
			continue;
		n += s->len;
		if (n > limit)
			return 0;
	}
	return 1;
}

/* Rails that may take a DATA datagram now: up, proven, writable, with room; no idle backup. */
static uint32_t data_rails(const rn_conn *c, uint32_t writable)
{
	uint32_t usable = 0;

	for (int i = 0; i < c->npaths; i++)
		if (rn_rail_tx_up(&c->rail[i]) && c->rail[i].validated &&
		    writable_rail(c, i, writable) && rn_rail_has_room(&c->rail[i]))
			usable |= 1u << i;
	return usable & ~rn_conn_idle_backups(c);
}

/*
 * The copy of the small write's packet just sent (c->dup), on the best
 * other working rail (rn_rail_choose_copy).  None, and nothing owed, when
 * the packet was acknowledged or lost meanwhile or no other rail may take
 * it now (only one works, the others' windows are full).  It counts in its
 * rail's flight and FIFO like any DATA, so a copy lost is a loss of that
 * rail, and the peer's receive count sees it like any packet.
 */
static ssize_t write_copy(rn_conn *c, uint64_t now_ns, uint32_t writable, uint8_t *buf,
			  size_t cap, rn_tx *tx)
{
	uint64_t words[RN_MAX_SACK_WORDS];
	uint32_t seq = c->dup.seq, usable;
	rn_sndq *q = &c->sq;
	rn_sslot *s = rn_sndq_slot(q, seq);
	int k, with_ack;
	size_t limit;
	rn_ackblk ab;
	rn_rail *r;
	ssize_t n;

	c->dup.due = 0;
	if (rn_seq_lt(seq, q->una) || !rn_seq_lt(seq, q->nxt) || (s->flags & RN_SS_COPY) ||
	    !(s->flags & RN_SS_FLIGHT) || s->rail != c->dup.rail)
		return 0;
	usable = data_rails(c, writable);
	k = rn_rail_choose_copy(c->rail, c->npaths, usable, s->rail);
	if (k < 0 || cap < rn_wire_size(0, 0, s->len))
		return 0;
	r = &c->rail[k];
	if (r->ftail - r->fhead > r->fmask)
		rn_conn_lose_rail(c, k, now_ns);
	limit = rail_limit(c, k, cap);
	/* the ACK block too: the packet's own may be the one lost */
	with_ack = rn_conn_build_ack(c, &ab, words, limit - RN_HDR_LEN - s->len);
	rn_hdr h = { .type = RN_PT_DATA, .flags = RN_F_COPY, .path = (uint8_t)k, .dst = c->peer_id,
		     .seq = seq, .ts = rn_now_us(now_ns) };
	n = rn_wire_encode(buf, cap, &h, with_ack ? &ab : NULL, rn_sndq_data(q, seq), s->len);
	if (n < 0)
		return n;
	if (with_ack)
		rn_conn_ack_sent(c, &ab, &h);
	s->copy_idx = rn_rail_on_send(r, seq, now_ns);
	s->copy_rail = (uint8_t)k;
	s->flags |= RN_SS_COPY;
	c->st.copies++;
	r->st.tx_data++;
	tx->path = k;
	tx->local_rail = r->local_rail;
	tx->to = r->remote;
	count_tx(c, k, now_ns, (size_t)n);
	return n;
}

/*
 * A DATA datagram on a usable rail: a lost packet first, else the next new
 * one, with the new ones after it when the rail's size holds several.
 */
static ssize_t write_data(rn_conn *c, uint64_t now_ns, uint32_t writable,
			  uint8_t *buf, size_t cap, rn_tx *tx)
{
	uint64_t words[RN_MAX_SACK_WORDS];
	rn_sndq *q = &c->sq;
	uint32_t usable, seq;
	int k, retx = 0, with_ack = 0, small, late;
	unsigned nb = 1;
	size_t limit, plen;
	rn_sslot *s;
	rn_rail *r;
	rn_ackblk ab;
	ssize_t n;

	if (!rn_conn_data_owed(c))
		return 0;
	usable = data_rails(c, writable);
	if (!usable)
		return 0;
	if (rn_sndq_lost_pop(q, &seq)) {
		uint32_t other;

		retx = 1;
		s = rn_sndq_slot(q, seq);
		/* resend on another rail than the one that lost it, if there is one */
		other = usable & ~(1u << s->rail);
		k = rn_rail_choose(other ? other : usable, c->npaths, c->rr_data);
	} else if (q->nxt != q->end && rn_seq_lt(q->nxt, c->peer_wnd)) {
		seq = q->nxt;
		s = rn_sndq_slot(q, seq);
		k = rn_rail_choose(usable, c->npaths, c->rr_data);
	} else {
		return 0;
	}
	if (cap < rn_wire_size(0, 0, s->len)) {
		if (retx)
			rn_sndq_lost_push(q, seq);
		return RN_ERR_NOBUF;
	}
	c->rr_data = (unsigned)k + 1;
	r = &c->rail[k];
	/* the FIFO holds twice the ring; if it ever fills, its oldest entry is lost */
	if (r->ftail - r->fhead > r->fmask) {
		rn_conn_lose_rail(c, k, now_ns);
	}
	limit = rail_limit(c, k, cap);
	plen = s->len;
	if (!retx && small_write(c, seq))
		s->flags |= RN_SS_SMALL;
	else if (!retx)
		s->flags &= (uint8_t)~RN_SS_SMALL;
	/*
	 * A full packet alone every RN_FULL_EVIDENCE_NS / 2 on a rail that
	 * bundles: full-size evidence at the connection's size, which the peer
	 * judges the rail by (instead of a padded keepalive: it carries data).
	 * A small write's packets go alone: each is copied by itself.
	 */
	if (!retx && !(s->flags & RN_SS_SMALL) &&
	    !(s->len == c->mss && now_ns - r->last_full_tx_ns >= RN_FULL_EVIDENCE_NS / 2))
		nb = bundle(c, r, seq, limit, &plen);
	/*
	 * New DATA after our ACK went alone at the end of its wait: a late
	 * answer.  Not a small write's packet, whose unflagged twin may be the
	 * one that arrives (RI2N_REDUNDANT_BYTES).
	 */
	late = c->ack.late && !retx && !(s->flags & RN_SS_SMALL);
	if ((c->ack.pending || late) && limit - RN_HDR_LEN - plen >= RN_ACKBLK_LEN)
		with_ack = rn_conn_build_ack(c, &ab, words, limit - RN_HDR_LEN - plen);
	rn_hdr h = { .type = RN_PT_DATA, .flags = (s->flags & RN_SS_FIN) ? RN_F_FIN : 0,
		     .path = (uint8_t)k, .dst = c->peer_id, .seq = seq,
		     .ts = rn_now_us(now_ns) };
	if (nb > 1)
		h.flags = RN_F_MULTI;
	if (c->state == RN_ST_COOKIE_SENT)
		h.flags |= RN_F_EARLY; /* write_early: no ACK owed, no FIN yet */
	if (with_ack && late && ab.ts_echo) {
		rn_conn_echo_newest(c, &ab);
		h.flags |= RN_F_LATE;
	}
	n = rn_wire_encode(buf, cap, &h, with_ack ? &ab : NULL,
			   nb > 1 ? NULL : rn_sndq_data(q, seq), plen);
	if (n < 0)
		return n;
	if (nb > 1)
		fill_multi(q, seq, nb, buf, (size_t)n, plen);
	if (with_ack)
		rn_conn_ack_sent(c, &ab, &h);
	small = (s->flags & RN_SS_SMALL) != 0;
	/* after the copy: a new packet sent may grow the ring (s is stale then) */
	for (unsigned i = 0; i < nb; i++)
		data_sent(c, k, seq + i, retx, nb > 1, now_ns);
	if (small) {
		c->dup.due = 1;
		c->dup.seq = seq;
		c->dup.rail = (uint8_t)k;
	}
	c->live.last_data_ns = now_ns;
	/* a bare FIN is no traffic to judge rails by: a close storm stays at the idle pace */
	if (plen)
		rn_conn_note_payload(c, now_ns);
	r->st.tx_data++;
	tx->path = k;
	tx->local_rail = r->local_rail;
	tx->to = r->remote;
	count_tx(c, k, now_ns, (size_t)n);
	return n;
}

/*
 * A PROBE of the size rail k's search wants (rn_pmtu.h): the id, then zeros
 * to exactly that size.  0 when none is due, or the driver's buffer cannot
 * hold it (the probe then goes unanswered, which is the truth: we cannot
 * send that size).
 */
static ssize_t write_probe(rn_conn *c, uint64_t now_ns, int k, uint8_t *buf, size_t cap,
			   rn_tx *tx)
{
	rn_hdr h = { .type = RN_PT_PROBE, .path = (uint8_t)k, .dst = c->peer_id,
		     .ts = rn_now_us(now_ns) };
	uint32_t id, size = rn_pmtu_next_probe(&c->rail[k].pm, now_ns, &id);
	ssize_t n;

	if (size < RN_HDR_LEN + RN_PROBE_LEN || size > cap)
		return 0;
	n = rn_wire_encode(buf, cap, &h, NULL, NULL, size - RN_HDR_LEN);
	if (n < 0)
		return 0;
	rn_put32(buf + RN_HDR_LEN, id);
	tx->path = k;
	tx->local_rail = c->rail[k].local_rail;
	tx->to = c->rail[k].remote;
	count_tx(c, k, now_ns, (size_t)n);
	return n;
}

/* The PROBE_ACKs we owe, then the PROBEs due, each on its own rail. */
static ssize_t write_probes(rn_conn *c, uint64_t now_ns, uint32_t writable, uint8_t *buf,
			    size_t cap, rn_tx *tx)
{
	uint8_t pl[RN_PROBE_ACK_LEN];
	ssize_t n;

	for (int k = 0; k < c->npaths; k++) {
		if (!((c->probe.pm_ack_pending >> k) & 1) || !writable_rail(c, k, writable))
			continue;
		c->probe.pm_ack_pending &= ~(1u << k);
		rn_put32(pl, c->rail[k].pm_ack_id);
		rn_put32(pl + 4, c->rail[k].pm_ack_size);
		return write_ctl(c, now_ns, k, RN_PT_PROBE_ACK, pl, sizeof(pl), buf, cap, tx);
	}
	for (int k = 0; k < c->npaths; k++) {
		/* never to an unproven address: a probe is big */
		if (!((c->probe.pm_pending >> k) & 1) || !writable_rail(c, k, writable) ||
		    !c->rail[k].validated)
			continue;
		c->probe.pm_pending &= ~(1u << k);
		n = write_probe(c, now_ns, k, buf, cap, tx);
		if (n != 0)
			return n;
	}
	return 0;
}

/* First rail in `mask` (round robin from the control cursor). */
static int pick(rn_conn *c, uint32_t mask)
{
	int k = rn_rail_choose(mask, c->npaths, c->rr_ctl);

	if (k >= 0)
		c->rr_ctl = (unsigned)k + 1;
	return k;
}

/* Our RAILS on every path owed one (as LINK_STATE), then an ACK of the peer's. */
static ssize_t write_rails(rn_conn *c, uint64_t now_ns, uint32_t writable, uint32_t ctl,
			   uint8_t *buf, size_t cap, rn_tx *tx)
{
	uint8_t pl[RN_RAILS_FIXED + RN_MAX_RAILS * (RN_RAIL_WIRE_MAX + RN_PAIR_WIRE_LEN)];
	ssize_t n;
	int k;

	for (k = 0; k < c->npaths; k++) {
		if (!((c->rails.pending >> k) & 1) || !writable_rail(c, k, writable))
			continue;
		n = rn_conn_rails_payload(c, pl, sizeof(pl));
		if (n < 0 || cap < RN_HDR_LEN + RN_ACKBLK_LEN + (size_t)n)
			return RN_ERR_NOBUF;
		c->rails.pending &= ~(1u << k);
		return write_ctl(c, now_ns, k, RN_PT_RAILS, pl, (size_t)n, buf, cap, tx);
	}
	if (c->rails.ack_due && (k = pick(c, ctl)) >= 0) {
		rn_put32(pl, c->rails.ack_version);
		c->rails.ack_due = 0;
		return write_ctl(c, now_ns, k, RN_PT_RAILS_ACK, pl, RN_RAILS_ACK_LEN, buf, cap, tx);
	}
	return 0;
}

static ssize_t write_established(rn_conn *c, uint64_t now_ns, uint32_t writable,
				 uint8_t *buf, size_t cap, rn_tx *tx)
{
	uint32_t ctl;
	uint8_t pl[8] = { 0 };
	ssize_t n;
	int k;

	/* nothing owed: the common answer of a service pass's last call, made cheap */
	if (!c->hs.cookie_ack_due && !c->link.pending && !c->link.ack_due && !c->rails.pending &&
	    !c->rails.ack_due &&
	    !(c->probe.hb_pending | c->probe.hb_small_pending | c->probe.ka_pending |
	      c->probe.ka_full_pending | c->probe.pm_pending | c->probe.pm_ack_pending) &&
	    !(c->ack.pending && c->ack.now) && !rn_conn_data_owed(c) && !c->dup.due)
		return 0;
	/* room for any control packet with its ACK block, or nothing is taken off a queue */
	if (cap < RN_HDR_LEN + RN_ACKBLK_LEN + sizeof(pl))
		return RN_ERR_NOBUF;
	ctl = control_rails(c, writable);
	/*
	 * With early DATA to acknowledge, the COOKIE_ACK waits as that ACK
	 * does, for the answer (owe_ack's first-answer hold): the client takes
	 * any packet of the established server for it, so a request answered
	 * at once costs one datagram fewer; rn_conn_ack_sent drops
	 * it then.  Unanswered, it goes when the ACK's hold ends.
	 */
	if (c->hs.cookie_ack_due && !(c->ack.pending && !c->ack.now) && (k = pick(c, ctl)) >= 0) {
		c->hs.cookie_ack_due = 0;
		return write_ctl(c, now_ns, k, RN_PT_COOKIE_ACK, NULL, 0, buf, cap, tx);
	}
	/* a copy of LINK_STATE on every rail: it is rare and must get through */
	for (k = 0; k < c->npaths; k++) {
		uint8_t mask = 0;

		if (!((c->link.pending >> k) & 1) || !writable_rail(c, k, writable))
			continue;
		for (int i = 0; i < c->npaths; i++)
			mask |= (uint8_t)(c->rail[i].rx_up << i);
		rn_put32(pl, c->link.version);
		pl[4] = mask;
		c->link.pending &= ~(1u << k);
		return write_ctl(c, now_ns, k, RN_PT_LINK_STATE, pl, RN_LINK_STATE_LEN, buf, cap, tx);
	}
	if (c->link.ack_due && (k = pick(c, ctl)) >= 0) {
		rn_put32(pl, c->link.ack_version);
		c->link.ack_due = 0;
		return write_ctl(c, now_ns, k, RN_PT_LINK_ACK, pl, RN_LINK_ACK_LEN, buf, cap, tx);
	}
	n = write_rails(c, now_ns, writable, ctl, buf, cap, tx);
	if (n != 0)
		return n;
	for (k = 0; k < c->npaths; k++) {
		if (((c->probe.hb_pending >> k) & 1) && writable_rail(c, k, writable)) {
			c->probe.hb_pending &= ~(1u << k);
			c->rail[k].st.heartbeats++;
			/* padded: only a full-size datagram revives a rail (an unproven address: small) */
			return write_ctl_pad(c, now_ns, k, RN_PT_HEARTBEAT, NULL, 0, c->rail[k].validated,
					     buf, cap, tx);
		}
	}
	for (k = 0; k < c->npaths; k++) {
		if (((c->probe.hb_small_pending >> k) & 1) && writable_rail(c, k, writable)) {
			c->probe.hb_small_pending &= ~(1u << k);
			c->rail[k].st.heartbeats++;
			/* bare: an ACK block of 128 SACK words would not be small */
			return write_ctl_pad(c, now_ns, k, RN_PT_HEARTBEAT, NULL, 0, -1, buf, cap, tx);
		}
	}
	for (k = 0; k < c->npaths; k++) {
		int full = (c->probe.ka_full_pending >> k) & 1;

		if ((((c->probe.ka_pending >> k) & 1) || full) && writable_rail(c, k, writable)) {
			c->probe.ka_pending &= ~(1u << k);
			c->probe.ka_full_pending &= ~(1u << k);
			c->rail[k].st.keepalives++;
			return write_ctl_pad(c, now_ns, k, RN_PT_KEEPALIVE, NULL, 0, full, buf, cap,
					     tx);
		}
	}
	if (c->dup.due) {
		/* right behind its packet: a copy that waits is no help for the tail */
		n = write_copy(c, now_ns, writable, buf, cap, tx);
		if (n != 0)
			return n;
	}
	if (c->state == RN_ST_ESTABLISHED) {
		n = write_probes(c, now_ns, writable, buf, cap, tx);
		if (n != 0)
			return n;
		n = write_data(c, now_ns, writable, buf, cap, tx);
		if (n != 0)
			return n;
	}
	if (c->ack.pending && c->ack.now && (k = pick(c, ctl)) >= 0) {
		/* the whole wait of an answer passed, nothing of ours unacknowledged */
		int late = c->ack.pp && now_ns >= c->timer[RN_TIMER_ACK] && c->sq.una == c->sq.end;

		n = write_ctl(c, now_ns, k, RN_PT_ACK, NULL, 0, buf, cap, tx);
		if (n > 0 && late)
			c->ack.late = 1;
		return n;
	}
	return 0;
}

static ssize_t write_reset(rn_conn *c, uint64_t now_ns, uint32_t writable,
			   uint8_t *buf, size_t cap, rn_tx *tx)
{
	uint8_t pl[RN_RESET_LEN] = { 0 };

	/* every rail's first copy, then the second ones (RN_RST_AGAIN) */
	for (int b = 0; b < 2 * RN_RST_AGAIN; b++) {
		int k = b % RN_RST_AGAIN;

		if (k < c->npaths && ((c->close.rst_pending >> b) & 1) && writable_rail(c, k, writable)) {
			c->close.rst_pending &= ~(1u << b);
			rn_put16(pl, (uint16_t)-c->err);
			return write_ctl(c, now_ns, k, RN_PT_RESET, pl, sizeof(pl), buf, cap, tx);
		}
	}
	return 0;
}

/*
 * Early data (rn_conn_set_early): between the INIT_ACK and the COOKIE_ACK,
 * new DATA behind the COOKIE_ECHO, on the handshake's rail only, so that it
 * follows the COOKIE_ECHO in order (another rail could deliver it first,
 * to a listener that does not know the id yet).  Resends wait for the
 * COOKIE_ACK: the loss timers run once established.
 */
static ssize_t write_early(rn_conn *c, uint64_t now_ns, uint32_t writable, uint8_t *buf,
			   size_t cap, rn_tx *tx)
{
	ssize_t n;

	if (!c->hs.early || !c->bufs_ready || c->hs.due)
		return 0;
	n = write_data(c, now_ns, writable & (1u << c->hs.rail), buf, cap, tx);
	if (n > 0)
		c->st.early_packets++;
	return n;
}

static ssize_t write_pkt(rn_conn *c, uint64_t now_ns, uint32_t writable, uint8_t *buf,
			 size_t cap, rn_tx *tx)
{
	ssize_t n;

	switch (c->state) {
	case RN_ST_INIT_SENT:
		return write_handshake(c, now_ns, writable, buf, cap, tx);
	case RN_ST_COOKIE_SENT:
		n = write_handshake(c, now_ns, writable, buf, cap, tx);
		return n != 0 ? n : write_early(c, now_ns, writable, buf, cap, tx);
	case RN_ST_ESTABLISHED:
	case RN_ST_LINGER:
		return write_established(c, now_ns, writable, buf, cap, tx);
	default:
		return write_reset(c, now_ns, writable, buf, cap, tx);
	}
}

ssize_t rn_conn_write_pkt(rn_conn *c, uint64_t now_ns, uint32_t writable,
			  uint8_t *buf, size_t cap, rn_tx *tx)
{
	ssize_t n;

	RN_OWNED(c);
	rn_peer_sync(c, now_ns); /* never into a rail another member found dead */
	if (!c->cfg.keyed)
		return write_pkt(c, now_ns, writable, buf, cap, tx);
	/* written after room for the packet number, which goes after the header */
	if (cap < RN_AEAD_OVERHEAD)
		return RN_ERR_NOBUF;
	n = write_pkt(c, now_ns, writable, buf + RN_PN_LEN, cap - RN_AEAD_OVERHEAD, tx);
	if (n <= 0)
		return n;
	if (rn_wire_cluster_sealed(buf[RN_PN_LEN + 1])) {
		memmove(buf, buf + RN_PN_LEN, (size_t)n);
		return rn_wire_seal(buf, (size_t)n, cap, c->cfg.key, rn_config_seal_mode(&c->cfg));
	}
	if (!c->cr)
		return 0; /* a RESET before the handshake gave us keys: the peer could not read it */
	n = rn_crypt_seal(c->cr, now_ns, buf, (size_t)n, cap);
	return n == RN_ERR_NOBUF ? n : n < 0 ? 0 : n; /* OpenSSL failed: the datagram is lost */
}
