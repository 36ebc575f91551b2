/*
 * sim_harness.c - two ri2n endpoints over a simulated network.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ri2n_kit.h"
#include "sim_harness.h"

#define SERVER_PORT 7000
#define CHUNK 65536

static void *sim_alloc(void *u, size_t n)
{
	(void)u;
	return calloc(1, n);
}

static void sim_dealloc(void *u, void *p)
{
	(void)u;
	free(p);
}

static uint64_t host_rng(void *user)
{
	sim_host *h = user;

	if (h->iforced < h->nforced) {
		uint32_t v = h->forced[h->iforced++];

		if (v)
			return v;
	}
	return sim_rand(&h->rng);
}

static void host_event(void *user, const rn_event *ev)
{
	sim_host *h = user;

	h->tx_up = ev->tx_up;
	if (h->nevents < SIM_MAX_EVENTS) {
		h->events[h->nevents].ev = *ev;
		h->events[h->nevents++].rx_packets = h->rx_packets;
	}
}

static rn_env host_env(sim_host *h)
{
	return (rn_env){ .mem = { sim_alloc, sim_dealloc, NULL }, .rng = host_rng,
			 .on_event = host_event, .user = h };
}

void sim_init(sim *s, int nrails, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->seed = seed;
	sim_net_init(&s->net, nrails, seed);
	s->limit_ns = UINT64_C(600) * 1000000000;
	for (int h = 0; h < 2; h++) {
		sim_host *hs = &s->host[h];

		hs->id = h;
		hs->nrails = nrails;
		hs->rng = seed * 2 + (uint64_t)h + 1;
		hs->tx_up = 0xff;
		for (int r = 0; r < nrails; r++)
			hs->rails[r] = (rn_rail_addr){
				.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) | (uint32_t)(h + 1),
				.port = (uint16_t)(h ? SERVER_PORT : 40000 + r),
				.prefix = 24 };
		rn_config_default(&s->cfg[h]);
	}
	s->host[0].send_seed = s->host[1].recv_seed = seed * 7 + 1;
	s->host[1].send_seed = s->host[0].recv_seed = seed * 13 + 5;
}

void sim_free(sim *s)
{
	for (int h = 0; h < 2; h++) {
		rn_conn_del(s->host[h].conn);
		free(s->host[h].lat_ns);
	}
	sim_net_free(&s->net);
}

int sim_start(sim *s, uint64_t up, uint64_t down)
{
	sim_host *c = &s->host[0], *srv = &s->host[1];
	rn_env ce = host_env(c), se = host_env(srv);
	int rc;

	rc = rn_listener_init(&srv->lis, &s->cfg[1], &se, srv->rails, srv->nrails);
	if (rc)
		return rc;
	srv->listening = 1;
	rc = rn_conn_connect(&c->conn, &s->cfg[0], &ce, c->rails, c->nrails,
			     (rn_addr){ .ip = srv->rails[0].ip, .port = SERVER_PORT }, s->now_ns);
	if (rc)
		return rc;
	c->to_send = srv->to_recv = up;
	srv->to_send = c->to_recv = down;
	s->t_start_ns = s->now_ns;
	return 0;
}

int sim_start_rr(sim *s, uint64_t n, uint32_t msg)
{
	sim_host *c = &s->host[0];

	c->lat_ns = calloc(n ? n : 1, sizeof(*c->lat_ns));
	if (!c->lat_ns)
		return RN_ERR_NOMEM;
	c->msg = s->host[1].msg = msg;
	return sim_start(s, n * msg, n * msg);
}

/* What the application may have written by now: all, or a request/response's share. */
static uint64_t send_limit(const sim_host *h)
{
	uint64_t lim;

	if (!h->msg)
		return h->to_send;
	/* the client: the next message once the last one's answer is in; the server: echo */
	lim = h->id == 0 ? (h->recvd / h->msg + 1) * h->msg : h->recvd;
	return lim < h->to_send ? lim : h->to_send;
}

/* The client's round trips of the messages whose answers are complete now. */
static void note_answers(sim *s, sim_host *h)
{
	if (!h->msg || h->id != 0)
		return;
	while (h->nlat < h->recvd / h->msg)
		h->lat_ns[h->nlat++] = s->now_ns - h->t_msg_ns;
}

static void send_dgram(sim *s, sim_host *h, int rail, const uint8_t *buf, size_t n)
{
	if (sim_net_send(&s->net, s->now_ns, h->id, rail, buf, n) < 0) {
		h->send_errors++;
		if (h->conn)
			rn_conn_rail_error(h->conn, s->now_ns, rail);
	}
}

static void deliver(sim *s, const sim_pkt *p)
{
	sim_host *h = &s->host[p->to_host];
	sim_host *o = &s->host[1 - p->to_host];
	rn_addr from = { .ip = o->rails[p->rail].ip, .port = o->rails[p->rail].port };
	uint64_t dst = rn_wire_peek_dst(p->data, p->len);

	h->rx_packets++;
	if (h->conn && dst == rn_conn_id(h->conn)) {
		rn_conn_recv(h->conn, s->now_ns, p->rail, from, p->data, p->len);
		return;
	}
	if (h->listening) {
		uint8_t reply[2048];
		size_t rlen;
		rn_accept_params ap;
		rn_env env = host_env(h);
		int rc = rn_listener_recv(&h->lis, s->now_ns, p->rail, from, p->data, p->len,
					  reply, sizeof(reply), &rlen, &ap);

		if (rc == RN_LISTEN_REPLY)
			send_dgram(s, h, p->rail, reply, rlen);
		else if (rc == RN_LISTEN_ACCEPT && !h->conn)
			rn_conn_accept(&h->conn, &ap, &env, s->now_ns);
		else if (rc == RN_LISTEN_ACCEPT)
			h->extra_accepts++; /* a second handshake completed: forged? */
	}
}

static void app_io(sim *s, sim_host *h)
{
	static uint8_t buf[CHUNK];
	rn_conn *c = h->conn;

	if (!c || rn_conn_state(c) < RN_ST_ESTABLISHED)
		return;
	uint64_t limit = send_limit(h);

	while (h->sent < limit) {
		size_t n = limit - h->sent < CHUNK ? (size_t)(limit - h->sent) : CHUNK;
		size_t space = rn_conn_write_space(c);
		ssize_t w;

		if (space == 0 && rn_conn_error(c) == 0)
			break;
		if (space && n > space)
			n = space;
		kit_pattern_fill(buf, h->send_seed, h->sent, n);
		w = rn_conn_write(c, s->now_ns, buf, n);
		if (w <= 0) {
			if (w <= RN_ERR__FATAL && !h->err) {
				h->err = (int)w;
				h->t_err_ns = s->now_ns;
			}
			break;
		}
		if (h->msg && h->sent % h->msg == 0)
			h->t_msg_ns = s->now_ns; /* a new message starts */
		h->sent += (uint64_t)w;
	}
	if (h->sent == h->to_send && !h->shut && rn_conn_shutdown(c, s->now_ns) == 0)
		h->shut = 1;
	for (;;) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(c, &d);

		if (n == RN_ERR_AGAIN)
			break;
		if (n == 0) {
			if (!h->eof) {
				h->eof = 1;
				h->t_eof_ns = s->now_ns;
			}
			break;
		}
		if (n < 0) {
			if (!h->err) {
				h->err = (int)n;
				h->t_err_ns = s->now_ns;
			}
			break;
		}
		h->mismatches += kit_pattern_check(d, h->recv_seed, h->recvd, (size_t)n);
		h->recvd += (uint64_t)n;
		rn_conn_consume(c, s->now_ns, (size_t)n);
		note_answers(s, h);
	}
}

static void flush(sim *s, sim_host *h)
{
	static uint8_t buf[RN_MAX_DGRAM];
	uint32_t writable = 0;

	if (!h->conn)
		return;
	for (int r = 0; r < h->nrails; r++)
		if (sim_net_writable(&s->net, h->id, r, s->now_ns))
			writable |= 1u << r;
	for (;;) {
		rn_tx tx;
		ssize_t n = rn_conn_write_pkt(h->conn, s->now_ns, writable, buf, sizeof(buf), &tx);

		if (n <= 0)
			break;
		if (buf[1] == 1 /* DATA */ && tx.path >= 0) {
			rn_conn_stats st;

			/* the sender must not put DATA on a rail it knows is down */
			rn_conn_get_stats(h->conn, &st);
			h->data_tx[tx.path]++;
			h->data_tx_bytes[tx.path] += (uint64_t)n;
			if (!st.rail[tx.path].tx_up)
				h->data_tx_while_down[tx.path]++;
		}
		send_dgram(s, h, tx.local_rail, buf, (size_t)n);
		if (!sim_net_writable(&s->net, h->id, tx.local_rail, s->now_ns))
			writable &= ~(1u << tx.local_rail);
	}
}

static int host_done(const sim_host *h)
{
	return !h->conn || rn_conn_state(h->conn) == RN_ST_CLOSED;
}

static uint64_t next_time(sim *s)
{
	uint64_t t = sim_net_next(&s->net);

	for (int i = 0; i < 2; i++) {
		sim_host *h = &s->host[i];
		uint64_t e;

		if (!h->conn)
			continue;
		e = rn_conn_expiry(h->conn);
		if (e < t)
			t = e;
		for (int r = 0; r < h->nrails; r++) {
			uint64_t w = sim_net_writable_at(&s->net, h->id, r, s->now_ns);

			if (w > s->now_ns && w < t)
				t = w;
		}
	}
	if (s->vanish_ns && s->vanish_ns > s->now_ns && s->vanish_ns < t)
		t = s->vanish_ns;
	if (t <= s->now_ns) {
		/* something claims to be due but was handled: a core bug, not a wait */
		if (++s->stuck > 10000)
			s->hung = 2;
		return s->now_ns + 1;
	}
	s->stuck = 0;
	return t;
}

/* RI2N_SIM_TRACE=MS prints each end's rails every MS simulated milliseconds. */
static void trace(sim *s)
{
	static uint64_t every = UINT64_MAX, next;
	const char *env;

	if (every == UINT64_MAX) {
		env = getenv("RI2N_SIM_TRACE");
		every = env ? (uint64_t)(atof(env) * 1e6) : 0;
		next = 0;
	}
	if (!every || s->now_ns < next)
		return;
	next = s->now_ns + every;
	printf("\n  t=%8.3f ms", (double)s->now_ns / 1e6);
	for (int h = 0; h < 2; h++) {
		rn_conn_stats st;

		if (!s->host[h].conn)
			continue;
		rn_conn_get_stats(s->host[h].conn, &st);
		printf(" | h%d rx %6.2fMB", h, (double)s->host[h].recvd / 1e6);
		for (int r = 0; r < st.npaths; r++) {
			const rn_rail_stats *rs = &st.rail[r];

			printf(" r%d %c%c cw%-4u fl%-4u q%5.2f rt%5.2f", r, rs->rx_up ? 'R' : '-',
			       rs->tx_up ? 'T' : '-', rs->cwnd, rs->inflight,
			       (double)rs->queue_ns / 1e6, (double)rs->srtt_ns / 1e6);
		}
	}
}

void sim_run(sim *s)
{
	for (;;) {
		sim_pkt p;

		while (sim_net_pop(&s->net, s->now_ns, &p)) {
			deliver(s, &p);
			free(p.data);
		}
		if (s->vanish_ns && s->now_ns >= s->vanish_ns && s->host[1].conn) {
			rn_conn_del(s->host[1].conn);
			s->host[1].conn = NULL;
			s->host[1].listening = 0;
		}
		for (int i = 0; i < 2; i++) {
			sim_host *h = &s->host[i];

			if (h->conn && rn_conn_expiry(h->conn) <= s->now_ns)
				rn_conn_on_timer(h->conn, s->now_ns);
			app_io(s, h);
		}
		for (int i = 0; i < 2; i++)
			flush(s, &s->host[i]);
		for (int i = 0; i < 2; i++) {
			app_io(s, &s->host[i]);
			/* an answer or the next request just written goes now, as a driver's would */
			if (s->host[i].msg)
				flush(s, &s->host[i]);
		}
		if (s->probe)
			s->probe(s, s->probe_arg);
		trace(s);
		if (host_done(&s->host[0]) && host_done(&s->host[1]))
			break;
		s->now_ns = next_time(s);
		if (s->now_ns >= s->limit_ns || s->hung) {
			if (!s->hung)
				s->hung = 1;
			break;
		}
	}
}

const sim_event *sim_find_sim_event(const sim_host *h, rn_event_type type, int rail, uint64_t t)
{
	for (int i = 0; i < h->nevents; i++) {
		const rn_event *e = &h->events[i].ev;

		if (e->type == type && e->time_ns >= t && (rail < 0 || e->rail == rail))
			return &h->events[i];
	}
	return NULL;
}

const rn_event *sim_find_event(const sim_host *h, rn_event_type type, int rail, uint64_t t)
{
	const sim_event *e = sim_find_sim_event(h, type, rail, t);

	return e ? &e->ev : NULL;
}
