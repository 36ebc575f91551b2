/*
 * sim_net.c - the simulated network.
 */
#include <stdlib.h>
#include <string.h>

#include "rn_wire.h"
#include "sim_net.h"

uint64_t sim_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

double sim_uniform(uint64_t *s)
{
	return (double)(sim_rand(s) >> 11) * (1.0 / 9007199254740992.0);
}

void sim_net_init(sim_net *n, int nrails, uint64_t seed)
{
	memset(n, 0, sizeof(*n));
	n->nrails = nrails;
	n->rng = seed ^ UINT64_C(0x5eed5eed5eed5eed);
	for (int r = 0; r < nrails; r++)
		n->link[r] = (sim_link){ .rate_bps = 1000000000, .delay_ns = 25000,
					 .queue_bytes = 2500000 };
}

void sim_net_free(sim_net *n)
{
	for (size_t i = 0; i < n->nheap; i++)
		free(n->heap[i].data);
	free(n->heap);
	n->heap = NULL;
	for (int r = 0; r < SIM_MAX_RAILS; r++)
		for (int h = 0; h < 2; h++) {
			free(n->rec[r][h]);
			n->rec[r][h] = NULL;
		}
	n->nheap = n->capheap = 0;
}

void sim_net_window(sim_net *n, int rail, uint64_t from_ns, uint64_t to_ns, int down, int dir)
{
	if (n->nwin[rail] < SIM_MAX_WINDOWS)
		n->win[rail][n->nwin[rail]++] = (sim_window){ from_ns, to_ns, down, dir, 0 };
}

void sim_net_mtu_window(sim_net *n, int rail, uint64_t from_ns, uint64_t to_ns, uint32_t above,
			int dir)
{
	if (n->nwin[rail] < SIM_MAX_WINDOWS)
		n->win[rail][n->nwin[rail]++] = (sim_window){ from_ns, to_ns, 0, dir, above };
}

/*
 * The fault active on a len-byte packet leaving `host` on `rail` at t: -1
 * none, 0 black hole, 1 down.
 */
static int fault_at(const sim_net *n, int rail, int host, uint64_t t, size_t len)
{
	int f = -1;

	for (int i = 0; i < n->nwin[rail]; i++) {
		const sim_window *w = &n->win[rail][i];

		if (t >= w->from_ns && t < w->to_ns && (w->dir < 0 || w->dir == host) &&
		    (w->above == 0 || len > w->above))
			f = f > w->down ? f : w->down;
	}
	return f;
}

static uint64_t ser_ns(const sim_link *l, size_t len)
{
	return l->rate_bps ? (uint64_t)len * 8 * UINT64_C(1000000000) / l->rate_bps : 0;
}

/* How long the queue may hold before it is full (drop-tail, in time). */
static uint64_t queue_ns(const sim_link *l)
{
	return l->rate_bps ? l->queue_bytes * 8 * UINT64_C(1000000000) / l->rate_bps : 0;
}

uint64_t sim_net_writable_at(const sim_net *n, int host, int rail, uint64_t now_ns)
{
	const sim_link *l = &n->link[rail];
	uint64_t busy = n->dir[rail][host].busy_until_ns, q = queue_ns(l);
	uint64_t slack = ser_ns(l, 1500);

	/* writable while a full-size packet still fits in the queue */
	if (busy + slack <= now_ns + q)
		return now_ns;
	return busy + slack - q;
}

int sim_net_writable(const sim_net *n, int host, int rail, uint64_t now_ns)
{
	return sim_net_writable_at(n, host, rail, now_ns) <= now_ns;
}

static void heap_push(sim_net *n, sim_pkt p)
{
	size_t i;

	if (n->nheap == n->capheap) {
		n->capheap = n->capheap ? 2 * n->capheap : 1024;
		n->heap = realloc(n->heap, n->capheap * sizeof(*n->heap));
		if (!n->heap)
			abort();
	}
	p.order = n->order++;
	i = n->nheap++;
	while (i > 0) {
		size_t up = (i - 1) / 2;
		sim_pkt *q = &n->heap[up];

		if (q->at_ns < p.at_ns || (q->at_ns == p.at_ns && q->order < p.order))
			break;
		n->heap[i] = *q;
		i = up;
	}
	n->heap[i] = p;
}

static int before(const sim_pkt *a, const sim_pkt *b)
{
	return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->order < b->order);
}

int sim_net_pop(sim_net *n, uint64_t now_ns, sim_pkt *out)
{
	size_t i = 0;
	sim_pkt last;

	if (n->nheap == 0 || n->heap[0].at_ns > now_ns)
		return 0;
again:
	if (n->nheap == 0 || n->heap[0].at_ns > now_ns)
		return 0;
	*out = n->heap[0];
	last = n->heap[--n->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const sim_pkt *best = &last;

		if (l < n->nheap && before(&n->heap[l], best)) {
			m = l;
			best = &n->heap[l];
		}
		if (r < n->nheap && before(&n->heap[r], best))
			m = r;
		if (m == i)
			break;
		n->heap[i] = n->heap[m];
		i = m;
	}
	if (n->nheap)
		n->heap[i] = last;
	/* a fault on the path when the packet gets there swallows it */
	if (!out->injected &&
	    (fault_at(n, out->rail, 1 - out->to_host, out->at_ns, out->len) >= 0 ||
	     fault_at(n, out->rail, out->to_host, out->at_ns, out->len) == 1)) {
		n->dropped_fault++;
		free(out->data);
		i = 0;
		goto again;
	}
	n->delivered[out->rail][1 - out->to_host]++;
	return 1;
}

uint64_t sim_net_next(const sim_net *n)
{
	return n->nheap ? n->heap[0].at_ns : SIM_NEVER;
}

static void schedule_as(sim_net *n, uint64_t at, int to_host, int rail, const uint8_t *data,
			size_t len, int injected)
{
	sim_pkt p = { .at_ns = at, .to_host = to_host, .rail = rail, .len = (uint16_t)len,
		      .injected = (uint8_t)injected };

	p.data = malloc(len ? len : 1);
	if (!p.data)
		abort();
	memcpy(p.data, data, len);
	heap_push(n, p);
}

static void schedule(sim_net *n, uint64_t at, int to_host, int rail, const uint8_t *data,
		     size_t len)
{
	schedule_as(n, at, to_host, rail, data, len, 0);
}

/*
 * replay_ns: a datagram that gets through is recorded; while the rail is in
 * a fault window, the recording goes to the other host every replay_ns.
 */
static void replay(sim_net *n, uint64_t now_ns, int from_host, int rail, int fault,
		   const uint8_t *data, size_t len)
{
	const sim_link *l = &n->link[rail];
	uint8_t **rec = &n->rec[rail][from_host];

	if (fault < 0) {
		uint8_t *b = realloc(*rec, len ? len : 1);

		if (!b)
			abort();
		memcpy(b, data, len);
		*rec = b;
		n->rec_len[rail][from_host] = (uint16_t)len;
		return;
	}
	if (!*rec || now_ns < n->rec_next[rail][from_host])
		return;
	n->rec_next[rail][from_host] = now_ns + l->replay_ns;
	n->replayed++;
	schedule_as(n, now_ns + l->delay_ns, 1 - from_host, rail, *rec,
		    n->rec_len[rail][from_host], 1);
}

/* Schedules a copy with 1-8 bits flipped, cut short, or with 1-64 random bytes added. */
static void mangle(sim_net *n, uint64_t at, int to_host, int rail, const uint8_t *data,
		   size_t len)
{
	uint8_t copy[70000];
	size_t m = len;

	if (len == 0 || len > sizeof(copy) - 64)
		return;
	memcpy(copy, data, len);
	switch (sim_rand(&n->rng) % 3) {
	case 0:
		for (uint64_t i = 0, k = 1 + sim_rand(&n->rng) % 8; i < k; i++) {
			uint64_t bit = sim_rand(&n->rng) % (len * 8);

			copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		break;
	case 1:
		m = 1 + sim_rand(&n->rng) % len; /* may keep it whole: then it is a replay */
		break;
	default:
		m = len + 1 + sim_rand(&n->rng) % 64;
		for (size_t i = len; i < m; i++)
			copy[i] = (uint8_t)sim_rand(&n->rng);
		break;
	}
	schedule(n, at, to_host, rail, copy, m);
}

/* Schedules a hostile datagram: garbage, a forged packet for nobody, or a handshake. */
static void junk(sim_net *n, uint64_t at, int to_host, int rail)
{
	uint8_t buf[1500], body[RN_INIT_LEN];
	rn_hdr h = { .dst = sim_rand(&n->rng) | 1, .seq = (uint32_t)sim_rand(&n->rng),
		     .path = (uint8_t)(sim_rand(&n->rng) % 4) };
	size_t len;
	ssize_t m = 0;

	switch (sim_rand(&n->rng) % 3) {
	case 0:
		len = 1 + sim_rand(&n->rng) % sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)sim_rand(&n->rng);
		m = (ssize_t)len;
		break;
	case 1:
		h.type = (uint8_t)(RN_PT_DATA + sim_rand(&n->rng) % RN_PT__MAX);
		len = sim_rand(&n->rng) % 1000;
		for (size_t i = 0; i < len; i++)
			body[i % sizeof(body)] = (uint8_t)sim_rand(&n->rng);
		m = rn_wire_encode(buf, sizeof(buf), &h, NULL, body, len % sizeof(body));
		break;
	default: {
		rn_hello he = { .id = sim_rand(&n->rng) | 1, .isn = (uint32_t)sim_rand(&n->rng),
				.slots = 1024, .max_dgram = 1472, .nrails = 1 };
		uint8_t cookie[RN_COOKIE_LEN];
		int echo = sim_rand(&n->rng) % 2;
		ssize_t blen;

		for (size_t i = 0; i < sizeof(cookie); i++)
			cookie[i] = (uint8_t)sim_rand(&n->rng);
		he.rails[0] = (rn_rail_addr){ .ip = (uint32_t)sim_rand(&n->rng),
					      .port = 9,
					      .prefix = 24 };
		memset(body, 0, sizeof(body));
		blen = rn_wire_write_hello(body, sizeof(body), &he, echo ? cookie : NULL);
		h.type = echo ? RN_PT_COOKIE_ECHO : RN_PT_INIT;
		h.dst = echo ? h.dst : 0;
		if (blen > 0)
			m = rn_wire_encode(buf, sizeof(buf), &h, NULL, body,
					   echo ? (size_t)blen : RN_INIT_LEN - RN_HDR_LEN);
		break;
	}
	}
	if (m > 0) {
		n->junk++;
		schedule(n, at, to_host, rail, buf, (size_t)m);
	}
}

int sim_net_send(sim_net *n, uint64_t now_ns, int from_host, int rail,
		 const uint8_t *data, size_t len)
{
	const sim_link *l = &n->link[rail];
	sim_dir *d = &n->dir[rail][from_host];
	int fault = fault_at(n, rail, from_host, now_ns, len);
	uint64_t start, at;

	n->sent[rail][from_host]++;
	n->sent_bytes[rail][from_host] += len;
	if (l->replay_ns)
		replay(n, now_ns, from_host, rail, fault, data, len);
	if (len > 1)
		n->sent_type[rail][from_host][data[1] & 15]++;
	if (fault == 1) {
		n->dropped_fault++;
		return -1;
	}
	start = d->busy_until_ns > now_ns ? d->busy_until_ns : now_ns;
	if (start - now_ns > queue_ns(l)) {
		n->dropped_queue++;
		return 0;
	}
	d->busy_until_ns = start + ser_ns(l, len);
	if (l->loss > 0 && sim_uniform(&n->rng) < l->loss) {
		n->dropped_loss++;
		return 0;
	}
	at = d->busy_until_ns + l->delay_ns;
	if (l->reorder > 0 && sim_uniform(&n->rng) < l->reorder)
		at += (uint64_t)(sim_uniform(&n->rng) * (double)l->reorder_ns);
	schedule(n, at, 1 - from_host, rail, data, len);
	if (l->dup > 0 && sim_uniform(&n->rng) < l->dup) {
		n->duplicated++;
		schedule(n, at + 1000, 1 - from_host, rail, data, len);
	}
	if (l->junk > 0 && sim_uniform(&n->rng) < l->junk)
		junk(n, at + 700, 1 - from_host, rail);
	if (l->mangle > 0 && sim_uniform(&n->rng) < l->mangle) {
		n->mangled++;
		mangle(n, at + 500, 1 - from_host, rail, data, len);
	}
	return 0;
}
