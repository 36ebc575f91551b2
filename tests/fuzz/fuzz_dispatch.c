/*
 * fuzz_dispatch.c - libFuzzer target: the host kit's connection table and
 * datagram dispatch (src/host/rn_htab.c) and the GRO split of received
 * batches (rn_hrx_next in rn_hsock.c), the code every driver runs on each
 * datagram before the core sees it.
 *
 * The input is a sequence of operations on a table of up to 48
 * connections, mirrored in a plain array: add an id, remove one, re-key one
 * (a restarted handshake), turn the listener on or off, dispatch a
 * datagram, and dispatch every datagram of a GRO run of any size and
 * segment size.  Invariants:
 *   - the table agrees with the array after every operation (every id
 *     present is found with its connection, every absent one is not);
 *   - a datagram reaches exactly one place: the connection its id names,
 *     else the listener when there is one, else the unknown counter;
 *   - a GRO run splits into datagrams of the segment size, the last one
 *     no longer, that together are the run, byte for byte, in order.
 */
#define _GNU_SOURCE /* struct mmsghdr */
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rn_hsock.h"
#include "rn_htab.h"
#include "rn_wire.h"

enum { MAXC = 48, RUN_MAX = 4096 };

#define FZ_FAIL(msg) fz_fail(__FILE__, __LINE__, "invariant", "%s", msg)

typedef struct dctx {
	rn_htab t;
	rn_hdisp x;
	uint64_t ids[MAXC];   /* 0: free slot */
	int objs[MAXC];
	int listener;
	void *hit;            /* where the last datagram went */
	int hits, listened;
} dctx;

static void to_conn(void *arg, void *v, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at)
{
	dctx *c = arg;

	(void)idx;
	(void)from;
	(void)at;
	if (rn_wire_peek_dst(d, len) == 0)
		FZ_FAIL("a datagram without an id went to a connection");
	c->hit = v;
	c->hits++;
}

static int to_listener(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t at)
{
	dctx *c = arg;

	(void)idx;
	(void)from;
	(void)d;
	(void)len;
	(void)at;
	if (!c->listener)
		return -1;
	c->listened++;
	return 0;
}

static int find(const dctx *c, uint64_t id)
{
	for (int i = 0; i < MAXC; i++)
		if (c->ids[i] && c->ids[i] == id)
			return i;
	return -1;
}

static void check_table(const dctx *c)
{
	uint32_t n = 0;

	for (int i = 0; i < MAXC; i++) {
		if (!c->ids[i])
			continue;
		n++;
		if (rn_htab_get(&c->t, c->ids[i]) != &c->objs[i])
			FZ_FAIL("an id in the table is not found with its connection");
	}
	if (n != c->t.n)
		FZ_FAIL("the table counts a different number of entries");
}

/* Ids from few bits, so they collide in the table's slots. */
static uint64_t take_id(fz_in *in)
{
	uint64_t v = fz_u8(in);

	return v & 0x80 ? fz_u64(in) : (v & 0x7f) * UINT64_C(0x10000000000);
}

/* One datagram through the dispatcher; checks where it went. */
static void dispatch(dctx *c, const uint8_t *d, size_t len)
{
	uint64_t id = rn_wire_peek_dst(d, len);
	int k = id ? find(c, id) : -1;
	int hits = c->hits, listened = c->listened;
	uint64_t unknown = c->x.unknown;

	c->hit = NULL;
	rn_hdisp_input(&c->x, 0, (rn_addr){ .ip = 0x7f000001u, .port = 9 }, d, len, 1);
	if (k >= 0) {
		if (c->hits != hits + 1 || c->hit != &c->objs[k] || c->listened != listened ||
		    c->x.unknown != unknown)
			FZ_FAIL("a datagram for a connection went elsewhere");
	} else if (c->listener) {
		if (c->listened != listened + 1 || c->hits != hits || c->x.unknown != unknown)
			FZ_FAIL("a datagram for no connection missed the listener");
	} else if (c->x.unknown != unknown + 1 || c->hits != hits || c->listened != listened) {
		FZ_FAIL("a datagram for nobody was not counted as unknown");
	}
}

static void gro_run(dctx *c, fz_in *in)
{
	static uint8_t run[RUN_MAX];
	static rn_hrx b;
	size_t len = fz_u16(in) % RUN_MAX + 1, seg = fz_u16(in) % 2048, off = 0;
	rn_hdgram dg;

	fz_bytes(in, run, len < 64 ? len : 64);
	for (size_t i = 64; i < len; i++)
		run[i] = (uint8_t)(i * 31);
	memset(&b, 0, sizeof(b));
	b.iov[0] = (struct iovec){ run, len };
	b.msgs[0].msg_hdr.msg_iov = &b.iov[0];
	b.msgs[0].msg_hdr.msg_iovlen = 1;
	b.msgs[0].msg_len = (unsigned)len;
	if (seg) {
		struct msghdr *h = &b.msgs[0].msg_hdr;
		struct cmsghdr *cm;
		int s = (int)seg;

		h->msg_control = b.ctl[0];
		h->msg_controllen = CMSG_SPACE(sizeof(int));
		cm = CMSG_FIRSTHDR(h);
		cm->cmsg_level = SOL_UDP;
		cm->cmsg_type = 104; /* UDP_GRO */
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &s, sizeof(s));
	}
	b.n = 1;
	while (rn_hrx_next(&b, &dg)) {
		if (dg.d != run + off)
			FZ_FAIL("a GRO run split out of order");
		if (seg && dg.len != seg && off + dg.len != len)
			FZ_FAIL("a datagram of a GRO run is not the segment size and not the last");
		if (seg && dg.len > seg)
			FZ_FAIL("a datagram of a GRO run is longer than the segment size");
		off += dg.len;
		dispatch(c, dg.d, dg.len);
	}
	if (off != len)
		FZ_FAIL("a GRO run did not split into the whole run");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static dctx c;
	fz_in in = { data, size };
	uint8_t d[256];

	memset(&c, 0, sizeof(c));
	if (rn_htab_init(&c.t, 1))
		return 0;
	c.x = (rn_hdisp){ .tab = &c.t, .to_conn = to_conn, .to_listener = to_listener, .arg = &c };
	for (int op = 0; op < 2000 && in.n > 0; op++) {
		switch (fz_u8(&in) % 6) {
		case 0: { /* add */
			uint64_t id = take_id(&in);
			int slot = find(&c, 0);

			for (int i = 0; i < MAXC && slot < 0; i++)
				if (!c.ids[i])
					slot = i;
			if (slot < 0 || id == 0 || find(&c, id) >= 0)
				break;
			if (rn_htab_add(&c.t, id, &c.objs[slot]) == 0)
				c.ids[slot] = id;
			break;
		}
		case 1: { /* remove, maybe with the wrong connection */
			int k = fz_u8(&in) % MAXC, wrong = fz_u8(&in) & 1;

			if (!c.ids[k])
				break;
			if (wrong) {
				if (rn_htab_del(&c.t, c.ids[k], &c.objs[(k + 1) % MAXC]))
					FZ_FAIL("removed with another connection's pointer");
				break;
			}
			if (rn_htab_del(&c.t, c.ids[k], &c.objs[k]) != 1)
				FZ_FAIL("a present id was not removed");
			c.ids[k] = 0;
			break;
		}
		case 2: { /* re-key */
			int k = fz_u8(&in) % MAXC;
			uint64_t id = take_id(&in);

			if (!c.ids[k] || id == 0 || find(&c, id) >= 0)
				break;
			if (rn_htab_rekey(&c.t, c.ids[k], id, &c.objs[k]) == 0)
				c.ids[k] = id;
			break;
		}
		case 3:
			c.listener = fz_u8(&in) & 1;
			break;
		case 4: { /* one datagram: maybe for a known id */
			size_t len = fz_u8(&in);
			int k = fz_u8(&in) % MAXC;

			fz_bytes(&in, d, len);
			if (len >= RN_HDR_LEN && c.ids[k] && (fz_u8(&in) & 1))
				rn_put64(d + 4, c.ids[k]);
			dispatch(&c, d, len);
			break;
		}
		default:
			gro_run(&c, &in);
			break;
		}
		check_table(&c);
	}
	rn_htab_free(&c.t);
	return 0;
}
