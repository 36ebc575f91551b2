/*
 * unit_net.c - two rn_conn endpoints wired back to back in memory.
 */
#include <stdio.h>

#include "unit_net.h"

#include "rn_crypt.h"

static void on_event(void *user, const rn_event *ev)
{
	un_side *s = user;

	if (s->nev < UN_MAX_EVENTS)
		s->ev[s->nev++] = *ev;
}

/* env.user is the side (for events); its rng lives in it. */
static uint64_t side_rng(void *user)
{
	un_side *s = user;

	return ut_rng_next(&s->rng);
}

un_net *un_new(int nrails)
{
	un_net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->delay_ns = UN_DELAY_NS;
	for (int s = 0; s < 2; s++) {
		un_side *sd = &n->side[s];

		sd->id = s;
		sd->nrails = nrails;
		sd->writable = (1u << nrails) - 1;
		sd->rng.state = (uint64_t)s * 1000 + 17;
		rn_config_default(&sd->cfg);
		for (int r = 0; r < nrails; r++)
			sd->rails[r] = (rn_rail_addr){ .ip = UT_IP(10, 0, r + 1, s + 1),
						       .port = (uint16_t)(s ? UN_PORT : 40000 + r),
						       .prefix = 24 };
		sd->env = (rn_env){ .mem = ut_mem_of(&sd->um), .rng = side_rng,
				    .on_event = on_event, .user = sd };
	}
	return n;
}

void un_del(un_net *n)
{
	for (int s = 0; s < 2; s++) {
		rn_conn_del(n->side[s].c);
		/* every allocation of a connection is given back */
		assert_int_equal(n->side[s].um.allocs, n->side[s].um.frees);
	}
	free(n->q);
	free(n->log);
	free(n);
}

rn_addr un_addr(const un_net *n, int s, int rail)
{
	return rn_addr_of_rail(&n->side[s].rails[rail]);
}

void un_listen(un_net *n)
{
	un_side *sv = &n->side[UN_SERVER];

	assert_int_equal(rn_listener_init(&sv->lis, &sv->cfg, &sv->env, sv->rails, sv->nrails), 0);
	sv->listening = 1;
}

int un_connect(un_net *n, uint64_t now)
{
	un_side *cl = &n->side[UN_CLIENT];

	rn_addr to = un_addr(n, UN_SERVER, 0);

	n->now = now;
	to.scope = 0; /* the server's interface index means nothing to the client */
	return rn_conn_connect(&cl->c, &cl->cfg, &cl->env, cl->rails, cl->nrails, to, now);
}

static void grow(void **p, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return;
	*cap = *cap ? *cap * 2 : 256;
	if (*cap < need)
		*cap = need;
	*p = realloc(*p, (size_t)*cap * elem);
	assert_non_null(*p);
}

/* The rail of side s with address `to` (IPv4 or IPv6; scopes are each side's own), or -1. */
static int rail_of(const un_side *s, rn_addr to)
{
	for (int r = 0; r < s->nrails; r++) {
		rn_addr a = rn_addr_of_rail(&s->rails[r]);

		a.scope = to.scope;
		if (rn_addr_same_host(&a, &to))
			return r;
	}
	return -1;
}

/* Logs a datagram side s writes on local rail `rail` to `to`, and queues it unless dropped. */
static void emit(un_net *n, int s, uint64_t now, int rail, rn_addr to, int path,
		 const uint8_t *buf, size_t len)
{
	un_rec rec = { .from = s, .src_rail = rail, .path = path, .sent_ns = now, .len = len };
	rn_pkt p;

	assert_true(len <= UN_DGRAM);
	if (n->side[s].cfg.keyed && !rn_wire_cluster_sealed(buf[1])) {
		/* sealed: the header reads in clear, the rest is the connection's secret */
		memset(&p, 0, sizeof(p));
		p.type = buf[1];
		p.flags = buf[2];
		p.path = buf[3];
		p.dst = rn_get64(buf + 4);
		p.seq = rn_get32(buf + 12);
		p.len = rn_get16(buf + 20);
		p.payload = buf + RN_HDR_LEN + RN_PN_LEN; /* ciphertext */
		rec.sealed = 1;
		rec.pn = rn_get64(buf + RN_HDR_LEN);
	} else {
		/* the core writes only valid datagrams */
		assert_int_equal(rn_wire_decode(&p, buf, len - (n->side[s].cfg.keyed ? RN_MAC_LEN : 0)),
				 0);
	}
	rec.dst_rail = rail_of(&n->side[1 - s], to);
	rec.type = p.type;
	rec.flags = p.flags;
	rec.hpath = p.path;
	rec.dst = p.dst;
	rec.seq = p.seq;
	rec.ack = p.ack;
	rec.wnd = p.wnd;
	rec.nwords = p.nwords;
	rec.plen = p.len;
	memcpy(rec.head, p.payload, p.len < UN_HEAD ? p.len : UN_HEAD);
	rec.dropped = n->filter && n->filter(n, &rec, n->filter_arg);
	if (getenv("UN_TRACE")) /* UN_TRACE=1 prints every datagram, to debug a test */
		printf("  %12.6f ms %s rail %d path %d type %2u flags %u seq %u len %zu%s\n",
		       (double)(now - UT_T0) / 1e6, s ? "S>" : "C>", rail, path, rec.type,
		       rec.flags, rec.seq, len, rec.dropped ? " (dropped)" : "");
	grow((void **)&n->log, &n->caplog, n->nlog + 1, sizeof(*n->log));
	n->log[n->nlog++] = rec;
	if (rec.dropped || rec.dst_rail < 0)
		return;
	grow((void **)&n->q, &n->capq, n->nq + 1, sizeof(*n->q));
	n->q[n->nq].rec = rec;
	n->q[n->nq].arrive_ns = now + n->delay_ns;
	n->q[n->nq].src = un_addr(n, s, rail);
	/* a link-local source arrives scoped to the receiving rail's interface */
	n->q[n->nq].src.scope = rn_addr_link_local(n->q[n->nq].src)
						? n->side[1 - s].rails[rec.dst_rail].scope
						: 0;
	memcpy(n->q[n->nq].data, buf, len);
	n->nq++;
}

int un_flush(un_net *n, int s, uint64_t now)
{
	static uint8_t buf[UN_DGRAM];
	un_side *sd = &n->side[s];
	int count = 0;

	if (!sd->c)
		return 0;
	for (;;) {
		rn_tx tx;
		ssize_t len = rn_conn_write_pkt(sd->c, now, sd->writable, buf, sizeof(buf), &tx);

		if (len <= 0) {
			assert_true(len == 0);
			break;
		}
		/* only on rails the driver said are writable */
		assert_true((sd->writable >> tx.local_rail) & 1);
		emit(n, s, now, tx.local_rail, tx.to, tx.path, buf, (size_t)len);
		count++;
		assert_true(count < 100000);
	}
	return count;
}

static void deliver_one(un_net *n, const un_pkt *p, uint64_t now)
{
	un_side *sd = &n->side[1 - p->rec.from];
	uint64_t dst = rn_wire_peek_dst(p->data, p->rec.len);

	/* a stateless reset names no id of ours: a driver offers it to its connections */
	if (sd->c && (dst == rn_conn_id(sd->c) || rn_wire_peek_sreset(p->data, p->rec.len))) {
		rn_conn_recv(sd->c, now, p->rec.dst_rail, p->src, p->data, p->rec.len);
		return;
	}
	if (sd->listening && !sd->c) {
		uint8_t reply[UN_DGRAM];
		size_t rlen;
		rn_accept_params ap;
		int rc = rn_listener_recv(&sd->lis, now, p->rec.dst_rail, p->src, p->data,
					  p->rec.len, reply, sizeof(reply), &rlen, &ap);

		if (rc == RN_LISTEN_REPLY)
			emit(n, sd->id, now, p->rec.dst_rail, p->src, -1, reply, rlen);
		else if (rc == RN_LISTEN_ACCEPT)
			assert_int_equal(rn_conn_accept(&sd->c, &ap, &sd->env, now), 0);
	}
}

int un_deliver(un_net *n, uint64_t now)
{
	int done = 0;

	/* one delay for all: arrival order is send order */
	while (done < n->nq && n->q[done].arrive_ns <= now) {
		un_pkt p = n->q[done];

		done++;
		deliver_one(n, &p, now);
	}
	if (done) {
		memmove(n->q, n->q + done, (size_t)(n->nq - done) * sizeof(*n->q));
		n->nq -= done;
	}
	return done;
}

void un_timer(un_net *n, int s, uint64_t now)
{
	un_side *sd = &n->side[s];

	if (!sd->c || rn_conn_expiry(sd->c) > now)
		return;
	rn_conn_on_timer(sd->c, now);
	if (!n->check_expiry || rn_conn_expiry(sd->c) > now)
		return;
	/* still due: only allowed if there is something to send now (it goes out here) */
	if (un_flush(n, s, now) == 0) {
		if (!n->expiry_violations++) {
			n->first_violation_ns = now;
			n->first_violation_side = s;
		}
	} else if (rn_conn_expiry(sd->c) <= now) {
		/* sent what was owed, and the timer would fire again at once */
		if (!n->refire++) {
			n->first_refire_ns = now;
			n->first_refire_side = s;
		}
	}
}

void un_app(un_net *n, int s, uint64_t now)
{
	static uint8_t buf[65536];
	un_side *sd = &n->side[s];

	/* before established only with early data (rn_conn_set_early) */
	if (!sd->c || (rn_conn_state(sd->c) < RN_ST_ESTABLISHED && !rn_conn_takes_bytes(sd->c)))
		return;
	while (sd->sent < sd->to_send) {
		size_t len = sd->to_send - sd->sent < sizeof(buf) ? (size_t)(sd->to_send - sd->sent) :
								    sizeof(buf);
		ssize_t w;

		ut_fill(buf, (uint32_t)s + 1, sd->sent, len);
		w = rn_conn_write(sd->c, now, buf, len);
		if (w <= 0) {
			if (w <= RN_ERR__FATAL && !sd->err)
				sd->err = (int)w;
			break;
		}
		sd->sent += (uint64_t)w;
	}
	if (sd->shut_when_done && !sd->shut && sd->sent == sd->to_send &&
	    rn_conn_shutdown(sd->c, now) == 0)
		sd->shut = 1;
	while (sd->reading) {
		const uint8_t *d;
		ssize_t got = rn_conn_peek(sd->c, &d);

		if (got == RN_ERR_AGAIN)
			break;
		if (got == 0) {
			if (!sd->eof) {
				sd->eof = 1;
				sd->eof_ns = now;
			}
			break;
		}
		if (got < 0) {
			if (!sd->err)
				sd->err = (int)got;
			break;
		}
		for (ssize_t i = 0; i < got; i++)
			if (d[i] != ut_pattern((uint32_t)(1 - s) + 1, sd->recvd + (uint64_t)i))
				sd->mismatches++;
		sd->recvd += (uint64_t)got;
		rn_conn_consume(sd->c, now, (size_t)got);
	}
}

void un_step(un_net *n, uint64_t now)
{
	n->now = now;
	un_deliver(n, now);
	for (int s = 0; s < 2; s++)
		un_timer(n, s, now);
	for (int s = 0; s < 2; s++)
		un_app(n, s, now);
	for (int s = 0; s < 2; s++)
		un_flush(n, s, now);
}

static uint64_t next_due(const un_net *n)
{
	uint64_t t = UINT64_MAX;

	if (n->nq)
		t = n->q[0].arrive_ns;
	for (int s = 0; s < 2; s++)
		if (n->side[s].c) {
			uint64_t e = rn_conn_expiry(n->side[s].c);

			if (e < t)
				t = e;
		}
	return t;
}

void un_run(un_net *n, uint64_t until)
{
	uint64_t now = n->now;
	int stuck = 0;

	for (;;) {
		uint64_t next;

		un_step(n, now);
		next = next_due(n);
		if (next <= now) {
			/* a timer still due after it ran: go on a nanosecond later */
			next = now + 1;
			if (++stuck > 100000)
				fail_msg("a timer keeps firing at %llu ns", (unsigned long long)now);
		} else {
			stuck = 0;
		}
		if (next > until)
			break;
		now = next;
	}
	n->now = until;
}

uint64_t un_handshake(un_net *n, uint64_t t0)
{
	un_listen(n);
	assert_int_equal(un_connect(n, t0), 0);
	for (uint64_t t = t0; t < t0 + 10 * UT_MS; t += 10 * UT_US) {
		un_run(n, t);
		if (un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0) &&
		    un_event(n, UN_SERVER, RN_EV_ESTABLISHED, -1, 0))
			return un_event(n, UN_CLIENT, RN_EV_ESTABLISHED, -1, 0)->time_ns;
	}
	fail_msg("handshake did not complete");
	return 0;
}

int un_inject(un_net *n, int to, uint64_t now, int local_rail, rn_addr from,
	      const rn_hdr *h, const rn_ackblk *ab, const void *payload, size_t len)
{
	uint8_t buf[UN_DGRAM];
	rn_hdr hd = *h;
	ssize_t dlen;

	/* no send time given: sent now, as a real peer's datagram would be */
	if (!hd.ts)
		hd.ts = (uint32_t)(now / 1000);
	dlen = rn_wire_encode(buf, sizeof(buf), &hd, ab, payload, len);
	assert_true(dlen > 0);
	return rn_conn_recv(n->side[to].c, now, local_rail, from, buf, (size_t)dlen);
}

int un_inject_ctl(un_net *n, int to, uint64_t now, int rail, uint8_t type,
		  const void *payload, size_t len)
{
	rn_hdr h = { .type = type, .path = (uint8_t)rail, .dst = rn_conn_id(n->side[to].c),
		     .ts = (uint32_t)(now / 1000) };

	return un_inject(n, to, now, rail, un_addr(n, 1 - to, rail), &h, NULL, payload, len);
}

static int rec_match(const un_rec *r, int s, int type, int path)
{
	return r->from == s && (type == 0 || r->type == type) && (path < 0 || r->path == path);
}

int un_count(const un_net *n, int s, int type, int path, uint64_t from, uint64_t to)
{
	int c = 0;

	for (int i = 0; i < n->nlog; i++)
		if (rec_match(&n->log[i], s, type, path) && n->log[i].sent_ns >= from &&
		    n->log[i].sent_ns <= to)
			c++;
	return c;
}

const un_rec *un_find(const un_net *n, int s, int type, int path, uint64_t from, int k)
{
	for (int i = 0; i < n->nlog; i++)
		if (rec_match(&n->log[i], s, type, path) && n->log[i].sent_ns >= from && k-- == 0)
			return &n->log[i];
	return NULL;
}

const rn_event *un_event(const un_net *n, int s, rn_event_type type, int rail, uint64_t t)
{
	const un_side *sd = &n->side[s];

	for (int i = 0; i < sd->nev; i++)
		if (sd->ev[i].type == type && sd->ev[i].time_ns >= t &&
		    (rail < 0 || sd->ev[i].rail == rail))
			return &sd->ev[i];
	return NULL;
}

int un_event_count(const un_net *n, int s, rn_event_type type)
{
	int c = 0;

	for (int i = 0; i < n->side[s].nev; i++)
		c += n->side[s].ev[i].type == type;
	return c;
}

int un_drop_all(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)r;
	(void)arg;
	return 1;
}
