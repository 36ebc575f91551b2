/*
 * sim_star.c - several hosts on shared switches (see sim_star.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ri2n_kit.h"
#include "sim_harness.h"
#include "sim_star.h"

#define RX_PORT 7000
#define CHUNK 65536

/* Each block carries its size in front (16 bytes, keeping it aligned). */
#define MEM_HDR 16

static void *star_alloc(void *u, size_t n)
{
	star *s = u;
	uint8_t *p;

	if (s && s->rx_mem_max && !s->rx_setup && s->rx_mem_used + n > s->rx_mem_max) {
		s->rx_mem_refused++;
		return NULL;
	}
	p = calloc(1, n + MEM_HDR);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	if (s) {
		s->rx_mem_used += n;
		if (s->rx_mem_used > s->rx_mem_peak)
			s->rx_mem_peak = s->rx_mem_used;
	}
	return p + MEM_HDR;
}

static void star_dealloc(void *u, void *ptr)
{
	star *s = u;
	uint8_t *p = ptr;
	size_t n;

	if (!p)
		return;
	p -= MEM_HDR;
	memcpy(&n, p, sizeof(n));
	if (s)
		s->rx_mem_used -= n;
	free(p);
}

/* The env's user is the host's generator. */
static uint64_t host_rng(void *user)
{
	return sim_rand(user);
}

static rn_env host_env(star *s, int h)
{
	int rx = h == s->nsenders;

	/* the receiver's memory is counted (and may be held to a ceiling) */
	return (rn_env){ .mem = { star_alloc, star_dealloc, rx ? s : NULL }, .rng = host_rng,
			 .user = &s->hrng[h], .rcvpool = rx && s->use_pool ? &s->pool : NULL };
}

static int receiver(const star *s)
{
	return s->nsenders;
}

void star_init(star *s, int nsenders, int nrails, uint64_t rate_bps, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->nsenders = nsenders;
	s->nrails = nrails;
	s->rng = seed ^ UINT64_C(0x57a257a257a257a2);
	s->limit_ns = UINT64_C(120) * 1000000000;
	s->bin_ns = UINT64_C(200) * 1000000;
	rn_config_default(&s->cfg);
	for (int r = 0; r < nrails; r++)
		/* 20 ms of buffer per port, like tbf latency 20ms on the bed */
		s->rail[r] = (star_rail){ .rate_bps = rate_bps, .delay_ns = 50000,
					  .queue_bytes = rate_bps / 400 };
	for (int h = 0; h <= nsenders; h++) {
		s->hrng[h] = seed * 131 + (uint64_t)h + 1;
		for (int r = 0; r < nrails; r++)
			s->addr[h][r] = (rn_rail_addr){
				.ip = (198u << 24) | (18u << 16) | ((uint32_t)(r + 1) << 8) |
				      (uint32_t)(h + 1),
				.port = (uint16_t)(h == nsenders ? RX_PORT : 40000 + r),
				.prefix = 24 };
	}
	for (int f = 0; f < nsenders; f++)
		s->flow[f].seed = seed * 31 + (uint64_t)f + 7;
}

void star_free(star *s)
{
	for (int f = 0; f < s->nsenders; f++) {
		rn_conn_del(s->flow[f].tx);
		rn_conn_del(s->flow[f].rx);
	}
	for (size_t i = 0; i < s->nheap; i++)
		free(s->heap[i].data);
	free(s->heap);
	s->heap = NULL;
}

/* ---- the network ---- */

static int before(const star_pkt *a, const star_pkt *b)
{
	return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->order < b->order);
}

static void heap_push(star *s, star_pkt p)
{
	size_t i;

	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? 2 * s->capheap : 1024;
		s->heap = realloc(s->heap, s->capheap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	p.order = s->order++;
	i = s->nheap++;
	while (i > 0 && before(&p, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = p;
}

static star_pkt heap_pop(star *s)
{
	star_pkt top = s->heap[0], last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const star_pkt *best = &last;

		if (l < s->nheap && before(&s->heap[l], best))
			best = &s->heap[m = l];
		if (l + 1 < s->nheap && before(&s->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

static uint64_t ser_ns(const star_rail *r, size_t len)
{
	return (uint64_t)len * 8 * UINT64_C(1000000000) / r->rate_bps;
}

static uint64_t queue_ns(const star_rail *r)
{
	return r->queue_bytes * 8 * UINT64_C(1000000000) / r->rate_bps;
}

/*
 * Puts a packet into a port at t: 0 and the time its last bit leaves, or -1
 * when the port's buffer is full (dropped).
 */
static int port_enqueue(star_port *p, const star_rail *r, uint64_t t, size_t len, uint64_t *out)
{
	uint64_t start = p->busy_until_ns > t ? p->busy_until_ns : t;

	if (start - t > queue_ns(r))
		return -1;
	p->busy_until_ns = start + ser_ns(r, len);
	*out = p->busy_until_ns;
	return 0;
}

static uint64_t writable_at(const star *s, int h, int rail)
{
	const star_rail *r = &s->rail[rail];
	uint64_t busy = s->up[h][rail].busy_until_ns, slack = ser_ns(r, 1500), q = queue_ns(r);

	return busy + slack <= s->now_ns + q ? s->now_ns : busy + slack - q;
}

static void net_send(star *s, int from, int rail, rn_addr to, const uint8_t *data, size_t len)
{
	star_pkt p = { .from = from, .rail = rail, .at_switch = 1, .len = (uint16_t)len };
	uint64_t out;

	p.to = (int)(to.ip & 0xff) - 1;
	if (p.to < 0 || p.to > s->nsenders || p.to == from)
		return;
	if (port_enqueue(&s->up[from][rail], &s->rail[rail], s->now_ns, len, &out) < 0) {
		s->dropped_queue++;
		return;
	}
	p.at_ns = out + s->rail[rail].delay_ns / 2;
	p.data = malloc(len ? len : 1);
	if (!p.data)
		abort();
	memcpy(p.data, data, len);
	heap_push(s, p);
}

/* The switch forwards a packet into the port towards its host. */
static void net_switch(star *s, star_pkt *p)
{
	const star_rail *r = &s->rail[p->rail];
	uint64_t out;

	if (p->at_ns >= r->hole_from_ns && p->at_ns < r->hole_to_ns) {
		s->dropped_hole++;
		free(p->data);
		return;
	}
	if (r->loss > 0 && sim_uniform(&s->rng) < r->loss) {
		s->dropped_loss++;
		free(p->data);
		return;
	}
	if (port_enqueue(&s->down[p->to][p->rail], r, p->at_ns, p->len, &out) < 0) {
		s->dropped_queue++;
		free(p->data);
		return;
	}
	p->at_switch = 0;
	p->at_ns = out + r->delay_ns / 2;
	heap_push(s, *p);
}

/* ---- the hosts ---- */

static star_flow *flow_of_peer(star *s, rn_addr peer)
{
	int f = (int)(peer.ip & 0xff) - 1;

	return f >= 0 && f < s->nsenders ? &s->flow[f] : NULL;
}

static void rx_listen(star *s, const star_pkt *p, rn_addr from)
{
	uint8_t reply[2048];
	size_t rlen;
	rn_accept_params ap;
	int rc = rn_listener_recv(&s->lis, s->now_ns, p->rail, from, p->data, p->len, reply,
				  sizeof(reply), &rlen, &ap);

	if (rc == RN_LISTEN_REPLY) {
		net_send(s, receiver(s), p->rail, from, reply, rlen);
	} else if (rc == RN_LISTEN_ACCEPT) {
		star_flow *f = flow_of_peer(s, from);
		rn_env env = host_env(s, receiver(s));

		if (f && !f->rx) {
			s->rx_setup = 1;
			rn_conn_accept(&f->rx, &ap, &env, s->now_ns);
			s->rx_setup = 0;
		}
	}
}

static void deliver(star *s, const star_pkt *p)
{
	rn_addr from = { .ip = s->addr[p->from][p->rail].ip,
			 .port = s->addr[p->from][p->rail].port };
	uint64_t dst = rn_wire_peek_dst(p->data, p->len);

	if (p->to < s->nsenders) {
		star_flow *f = &s->flow[p->to];

		if (f->tx && dst == rn_conn_id(f->tx))
			rn_conn_recv(f->tx, s->now_ns, p->rail, from, p->data, p->len);
		return;
	}
	for (int i = 0; i < s->nsenders; i++) {
		star_flow *f = &s->flow[i];

		if (f->rx && dst == rn_conn_id(f->rx)) {
			rn_conn_recv(f->rx, s->now_ns, p->rail, from, p->data, p->len);
			return;
		}
	}
	rx_listen(s, p, from);
}

static void app_send(star *s, star_flow *f)
{
	static uint8_t buf[CHUNK];

	if (!f->tx || rn_conn_state(f->tx) < RN_ST_ESTABLISHED)
		return;
	while (f->sent < f->to_send) {
		size_t n = f->to_send - f->sent < CHUNK ? (size_t)(f->to_send - f->sent) : CHUNK;
		size_t space = rn_conn_write_space(f->tx);
		ssize_t w;

		if (space == 0)
			break;
		if (n > space)
			n = space;
		kit_pattern_fill(buf, f->seed, f->sent, n);
		w = rn_conn_write(f->tx, s->now_ns, buf, n);
		if (w <= 0) {
			if (w <= RN_ERR__FATAL)
				f->err = (int)w;
			break;
		}
		f->sent += (uint64_t)w;
	}
	if (f->sent == f->to_send && !f->shut && rn_conn_shutdown(f->tx, s->now_ns) == 0)
		f->shut = 1;
}

static void app_recv(star *s, star_flow *f)
{
	uint64_t bin = s->now_ns / s->bin_ns;

	if (!f->rx || (s->read_every_ns && s->now_ns < s->next_read_ns))
		return;
	for (;;) {
		const uint8_t *d;
		ssize_t n = rn_conn_peek(f->rx, &d);

		if (n == RN_ERR_AGAIN)
			break;
		if (n <= 0) {
			if (n == 0 && !f->eof) {
				f->eof = 1;
				f->eof_ns = s->now_ns;
			}
			if (n < 0)
				f->rx_err = (int)n;
			break;
		}
		f->mismatches += kit_pattern_check(d, f->seed, f->recvd, (size_t)n);
		f->recvd += (uint64_t)n;
		if (bin < STAR_MAX_BINS)
			f->bin_bytes[bin] += (uint64_t)n;
		rn_conn_consume(f->rx, s->now_ns, (size_t)n);
	}
	/* the sender has sent FIN and the receiver has read it: close this side too */
	if (f->eof && rn_conn_state(f->rx) != RN_ST_CLOSED)
		rn_conn_shutdown(f->rx, s->now_ns);
}

static uint32_t writable_mask(const star *s, int h)
{
	uint32_t w = 0;

	for (int r = 0; r < s->nrails; r++)
		if (writable_at(s, h, r) <= s->now_ns)
			w |= 1u << r;
	return w;
}

static void flush_conn(star *s, rn_conn *c, int h)
{
	static uint8_t buf[RN_MAX_DGRAM];
	uint32_t writable = writable_mask(s, h);

	if (!c)
		return;
	for (;;) {
		rn_tx tx;
		ssize_t n = rn_conn_write_pkt(c, s->now_ns, writable, buf, sizeof(buf), &tx);

		if (n <= 0)
			break;
		net_send(s, h, tx.local_rail, tx.to, buf, (size_t)n);
		if (writable_at(s, h, tx.local_rail) > s->now_ns)
			writable &= ~(1u << tx.local_rail);
	}
}

static void start_flows(star *s)
{
	for (int i = 0; i < s->nsenders; i++) {
		star_flow *f = &s->flow[i];
		rn_env env = host_env(s, i);
		rn_addr to = { .ip = s->addr[receiver(s)][0].ip, .port = RX_PORT };

		if (f->started || s->now_ns < f->start_ns)
			continue;
		f->started = 1;
		if (rn_conn_connect(&f->tx, &s->cfg, &env, s->addr[i], s->nrails, to, s->now_ns))
			f->err = RN_ERR_NOMEM;
	}
}

static int all_done(const star *s)
{
	for (int i = 0; i < s->nsenders; i++) {
		const star_flow *f = &s->flow[i];

		if (f->err || !f->started || !f->tx || rn_conn_state(f->tx) != RN_ST_CLOSED)
			return 0;
		if (!f->rx || rn_conn_state(f->rx) != RN_ST_CLOSED)
			return 0;
	}
	return 1;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t next_time(star *s)
{
	uint64_t t = s->nheap ? s->heap[0].at_ns : SIM_NEVER;

	for (int i = 0; i < s->nsenders; i++) {
		const star_flow *f = &s->flow[i];

		if (!f->started)
			t = min64(t, f->start_ns);
		if (f->tx)
			t = min64(t, rn_conn_expiry(f->tx));
		if (f->rx)
			t = min64(t, rn_conn_expiry(f->rx));
	}
	if (s->read_every_ns)
		t = min64(t, s->next_read_ns);
	for (int h = 0; h <= s->nsenders; h++)
		for (int r = 0; r < s->nrails; r++) {
			uint64_t w = writable_at(s, h, r);

			if (w > s->now_ns)
				t = min64(t, w);
		}
	return t > s->now_ns ? t : s->now_ns + 1;
}

static void timers(star *s)
{
	for (int i = 0; i < s->nsenders; i++) {
		star_flow *f = &s->flow[i];

		if (f->tx && rn_conn_expiry(f->tx) <= s->now_ns)
			rn_conn_on_timer(f->tx, s->now_ns);
		if (f->rx && rn_conn_expiry(f->rx) <= s->now_ns)
			rn_conn_on_timer(f->rx, s->now_ns);
	}
}

/* RI2N_SIM_TRACE=MS prints each sender's rails every MS simulated milliseconds. */
static void trace(star *s)
{
	static uint64_t every = UINT64_MAX, next;
	const char *env;

	if (every == UINT64_MAX) {
		env = getenv("RI2N_SIM_TRACE");
		every = env ? (uint64_t)(atof(env) * 1e6) : 0;
	}
	if (!every || s->now_ns < next)
		return;
	next = s->now_ns + every;
	printf("\n  t=%8.3f ms", (double)s->now_ns / 1e6);
	for (int i = 0; i < s->nsenders; i++) {
		rn_conn_stats st;

		if (!s->flow[i].tx)
			continue;
		rn_conn_get_stats(s->flow[i].tx, &st);
		printf(" |%d", i);
		for (int r = 0; r < st.npaths; r++)
			printf(" cw%-4u q%5.2f", st.rail[r].cwnd, (double)st.rail[r].queue_ns / 1e6);
	}
}

void star_run(star *s)
{
	rn_env env = host_env(s, receiver(s));
	unsigned turn = 0;

	s->rx_setup = 1;
	if (rn_listener_init(&s->lis, &s->cfg, &env, s->addr[receiver(s)], s->nrails)) {
		s->hung = 1;
		return;
	}
	s->rx_setup = 0;
	/* a third left over: a ring moving to a block of half its size needs both (rn_core.h) */
	s->pool.bytes = s->rx_mem_max / 3 * 2;
	for (;;) {
		while (s->nheap && s->heap[0].at_ns <= s->now_ns) {
			star_pkt p = heap_pop(s);

			if (p.at_switch) {
				net_switch(s, &p);
				continue;
			}
			deliver(s, &p);
			free(p.data);
		}
		start_flows(s);
		timers(s);
		for (int i = 0; i < s->nsenders; i++) {
			app_send(s, &s->flow[i]);
			app_recv(s, &s->flow[i]);
		}
		for (int i = 0; i < s->nsenders; i++)
			flush_conn(s, s->flow[i].tx, i);
		/* the receiver's connections share its ports: each pass starts with the next */
		for (int k = 0; k < s->nsenders; k++)
			flush_conn(s, s->flow[(turn + (unsigned)k) % (unsigned)s->nsenders].rx,
				   receiver(s));
		turn++;
		trace(s);
		for (int i = 0; i < s->nsenders; i++)
			app_recv(s, &s->flow[i]);
		while (s->read_every_ns && s->next_read_ns <= s->now_ns)
			s->next_read_ns += s->read_every_ns;
		if (all_done(s))
			break;
		s->now_ns = next_time(s);
		if (s->now_ns >= s->limit_ns) {
			s->hung = 1;
			break;
		}
	}
}
