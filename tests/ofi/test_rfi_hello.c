/*
 * test_rfi_hello.c - whose messages (rfi_hello.c): hellos from impostors, a
 * second link, a peer restarted on the same ports, unexpected messages'
 * bounds; and the snapshot for ri2n-stat (rfi_stat.c).
 */
#include "test_rfi.h"

/* ---- whose messages (rfi_hello.c), unexpected messages' bounds ---- */

/*
 * A hello naming another AV peer (ep1) from a third endpoint's rails is
 * refused: a receive directed at ep1 never completes with the impostor's
 * bytes, and completes with ep1's own.
 */
void test_ep_hostile_hello(void **st)
{
	pair *p = *st;
	struct fid_ep *x, *eps[3];
	struct fid_cq *xcq;
	uint8_t r[32], s1[32], sx[32];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	rfi_name own;
	int c;

	SKIP_WITHOUT_RAILS(st);
	third_open(p, &x, &xcq);
	eps[0] = p->ep[0], eps[1] = p->ep[1], eps[2] = x;
	own = ((rfi_ep *)x)->name;
	((rfi_ep *)x)->name = ((rfi_ep *)p->ep[1])->name; /* its hello names ep1 */
	fill(s1, sizeof(s1), 41);
	fill(sx, sizeof(sx), 42);
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, p->addr[1], &c), 0);
	assert_int_equal(fi_send(x, sx, sizeof(sx), NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_all(p->cq[0], eps, 3, &e, &src, 20000), -FI_EAGAIN);
	assert_int_equal(((rfi_ep *)p->ep[0])->hellos_refused, 1);
	assert_null(((rfi_ep *)p->ep[0])->ux); /* nothing of it kept either */
	((rfi_ep *)x)->name = own;
	/* ep1's own message takes the receive */
	assert_int_equal(fi_send(p->ep[1], s1, sizeof(s1), NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_all(p->cq[0], eps, 3, &e, &src, 100000), 1);
	assert_ptr_equal(e.op_context, &c);
	assert_int_equal(src, p->addr[1]);
	assert_memory_equal(r, s1, sizeof(s1));
	third_close(x, xcq);
}

/* Inbound links of ep bound to a name and not retired. */
static int named_links(rfi_ep *ep)
{
	int n = 0;

	for (rfi_link *l = rfi_links(ep); l; l = rfi_link_next(l))
		n += !l->peer && l->have_name && !l->h.dead && !l->retired;
	return n;
}

/*
 * A second stream in a live stream's name supersedes it (fi_av_xfer): ep1
 * removes ep0 from the AV and inserts it again, so its next send opens a
 * new connection while a message it sent on the old one is still on its
 * way.  ep0 takes both, in order, from ep1; the old stream ends cleanly on
 * both sides.
 */
void test_ep_second_link(void **st)
{
	pair *p = *st;
	struct fid_ep *eps[2];
	uint8_t r[2][16], s[2][16], nm[RFI_NAME_LEN];
	struct fi_cq_tagged_entry e;
	size_t len = sizeof(nm);
	fi_addr_t src, a0;
	rfi_ep *e0, *e1;
	int c[2];

	SKIP_WITHOUT_RAILS(st);
	e0 = (rfi_ep *)p->ep[0], e1 = (rfi_ep *)p->ep[1];
	eps[0] = p->ep[0], eps[1] = p->ep[1];
	fill(s[0], sizeof(s[0]), 43);
	fill(s[1], sizeof(s[1]), 44);
	assert_int_equal(fi_recv(p->ep[0], r[0], sizeof(r[0]), NULL, FI_ADDR_UNSPEC, &c[0]), 0);
	assert_int_equal(fi_send(p->ep[1], s[0], sizeof(s[0]), NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100), 1);
	/* the first message on the old stream, not read yet; then the AV round trip */
	assert_int_equal(fi_send(p->ep[1], s[0], sizeof(s[0]), NULL, p->addr[0], NULL), 0);
	assert_int_equal(fi_av_remove(p->o.av, &p->addr[0], 1, 0), 0);
	assert_int_equal(fi_getname(&p->ep[0]->fid, nm, &len), 0);
	assert_int_equal(fi_av_insert(p->o.av, nm, 1, &a0, 0, NULL), 1);
	assert_int_not_equal(a0, p->addr[0]);
	assert_int_equal(fi_send(p->ep[1], s[1], sizeof(s[1]), NULL, a0, NULL), 0);
	assert_int_equal(fi_recv(p->ep[0], r[0], sizeof(r[0]), NULL, FI_ADDR_UNSPEC, &c[0]), 0);
	assert_int_equal(fi_recv(p->ep[0], r[1], sizeof(r[1]), NULL, FI_ADDR_UNSPEC, &c[1]), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wait_all(p->cq[0], eps, 2, &e, &src, 100000), 1);
		assert_ptr_equal(e.op_context, &c[i]);
		assert_int_equal(src, p->addr[1]);
		assert_memory_equal(r[i], s[i], sizeof(s[i]));
	}
	assert_int_equal(e0->hellos_refused, 0);
	assert_int_equal(e0->superseded, 1);
	/* the old stream ends on both sides: ep1's old peer lost its link to ep0's FIN */
	run_all(eps, 2, 500, 20000);
	assert_null(e1->peers[p->addr[0]]->link);
	assert_non_null(e1->peers[a0]->link);
	assert_int_equal(named_links(e0), 1);
	for (rfi_link *l = rfi_links(e0); l; l = rfi_link_next(l))
		if (l->retired)
			assert_int_equal(l->retired, RFI_RETIRED_DONE);
	for (rfi_link *l = rfi_links(e1); l; l = rfi_link_next(l))
		if (l->retired)
			assert_int_not_equal(rn_conn_state(l->h.conn), RN_ST_ESTABLISHED);
}

/* Closes ep1 (gracefully: its FINs delivered first) and opens it again on the same ports. */
static void restart_ep1(pair *p, int graceful)
{
	struct fid_ep *eps[2] = { p->ep[0], p->ep[1] };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	uint8_t nm[RFI_NAME_LEN], again[RFI_NAME_LEN];
	size_t len = sizeof(nm);
	rfi_ep *e1 = (rfi_ep *)p->ep[1];
	struct fi_info *fi;

	assert_int_equal(fi_getname(&p->ep[1]->fid, nm, &len), 0);
	if (graceful) {
		pthread_mutex_lock(&e1->dom->lock);
		for (rfi_link *l = rfi_links(e1); l; l = rfi_link_next(l))
			rn_conn_shutdown(l->h.conn, rfi_ep_now(e1));
		pthread_mutex_unlock(&e1->dom->lock);
		run_all(eps, 2, 50, 20000);
	}
	third_close(p->ep[1], p->cq[1]);
	fi = fi_dupinfo(p->fi);
	assert_non_null(fi);
	fi->src_addr = malloc(len);
	assert_non_null(fi->src_addr);
	memcpy(fi->src_addr, nm, len);
	fi->src_addrlen = len;
	assert_int_equal(fi_endpoint(p->o.dom, fi, &p->ep[1], NULL), 0);
	fi_freeinfo(fi);
	assert_int_equal(fi_cq_open(p->o.dom, &ca, &p->cq[1], NULL), 0);
	assert_int_equal(fi_ep_bind(p->ep[1], &p->cq[1]->fid, FI_TRANSMIT | FI_RECV), 0);
	assert_int_equal(fi_ep_bind(p->ep[1], &p->o.av->fid, 0), 0);
	assert_int_equal(fi_enable(p->ep[1]), 0);
	len = sizeof(again);
	assert_int_equal(fi_getname(&p->ep[1]->fid, again, &len), 0);
	assert_memory_equal(again, nm, sizeof(nm)); /* the same name: the same fi_addr_t */
}

/*
 * A peer restarted on the same ports (fi_rdm_multi_client): ep0's stream to
 * its old process must not take what ep0 sends the new one.  Closed
 * gracefully, the old process ended ep0's stream (its FIN); killed, its new
 * process resets the old streams.  Either way ep0's reply reaches the new
 * process, each message once, every byte checked.
 */
void test_ep_restart_same_ports(void **st)
{
	pair *p = *st;
	uint8_t r[24], s[24];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int c;

	SKIP_WITHOUT_RAILS(st);
	for (int graceful = 1; graceful >= 0; graceful--) {
		for (int round = 0; round < 2; round++) {
			/* ep1 speaks, ep0 answers on its own stream to ep1 */
			fill(s, sizeof(s), 50 + 2 * round + graceful);
			assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c),
					 0);
			assert_int_equal(fi_send(p->ep[1], s, sizeof(s), NULL, p->addr[0], NULL), 0);
			assert_int_equal(wait_cq(p, 0, &e, &src, 100000), 1);
			assert_int_equal(src, p->addr[1]);
			assert_memory_equal(r, s, sizeof(s));
			assert_int_equal(wait_cq(p, 1, &e, NULL, 100), 1);
			fill(s, sizeof(s), 60 + 2 * round + graceful);
			memset(r, 0, sizeof(r));
			assert_int_equal(fi_recv(p->ep[1], r, sizeof(r), NULL, p->addr[0], &c), 0);
			assert_int_equal(fi_send(p->ep[0], s, sizeof(s), NULL, p->addr[1], NULL), 0);
			assert_int_equal(wait_cq(p, 1, &e, &src, 100000), 1);
			assert_ptr_equal(e.op_context, &c);
			assert_memory_equal(r, s, sizeof(s));
			assert_int_equal(wait_cq(p, 0, &e, NULL, 100), 1);
			if (round == 0)
				restart_ep1(p, graceful);
		}
	}
	assert_int_equal(((rfi_ep *)p->ep[0])->hellos_refused, 0);
}

/* Writes a frame header straight into x's stream to ep0 (x has sent to it already). */
static void raw_header(pair *p, struct fid_ep *x, uint8_t kind, uint32_t len, uint64_t tag,
		       const uint8_t *body, size_t blen)
{
	rfi_ep *ex = (rfi_ep *)x;
	rfi_peer *peer = ex->peers[p->addr[0]];
	uint8_t h[RFI_HDR_LEN] = { kind };
	uint32_t l = htonl(len);
	uint64_t t = htobe64(tag);

	assert_non_null(peer->link);
	memcpy(h + 4, &l, 4);
	memcpy(h + 8, &t, 8);
	pthread_mutex_lock(&ex->dom->lock);
	assert_int_equal(rn_conn_write(peer->link->h.conn, rfi_ep_now(ex), h, sizeof(h)),
			 (ssize_t)sizeof(h));
	if (blen)
		assert_int_equal(rn_conn_write(peer->link->h.conn, rfi_ep_now(ex), body, blen),
				 (ssize_t)blen);
	rn_hconn_flush(&ex->links, &peer->link->h, rfi_ep_now(ex));
	rn_hset_flush(&ex->io);
	pthread_mutex_unlock(&ex->dom->lock);
}

/* The unexpected entry of ep with this tag, or NULL. */
static rfi_unexp *ux_tagged(pair *p, uint64_t tag)
{
	for (rfi_unexp *u = ((rfi_ep *)p->ep[0])->ux; u; u = u->next)
		if (u->tag == tag)
			return u;
	return NULL;
}

/*
 * A header declaring 1 GiB with no body holds no room and stops no other
 * peer's unexpected messages; one declaring 1 MiB whose body stops coming
 * is dropped after FI_RI2N_UNEXPECTED_STALL_MS and its stream reset.
 */
void test_ep_unexpected_bounds(void **st)
{
	pair *p = *st;
	uint64_t keep = rfi_k.unexp_stall_ns;
	struct fid_ep *x, *eps[3];
	struct fid_cq *xcq;
	uint8_t s[1000], r[1000], part[100];
	struct fi_cq_tagged_entry e;
	rfi_unexp *u;
	rfi_ep *e0;
	int c;

	SKIP_WITHOUT_RAILS(st);
	e0 = (rfi_ep *)p->ep[0];
	rfi_k.unexp_stall_ns = 100000000; /* 100 ms */
	third_open(p, &x, &xcq);
	eps[0] = p->ep[0], eps[1] = p->ep[1], eps[2] = x;
	fill(s, sizeof(s), 44);
	fill(part, sizeof(part), 45);
	/* x's stream to ep0 is up (a message taken), then a lone 1 GiB header */
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(x, s, 10, NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_all(p->cq[0], eps, 3, &e, NULL, 100000), 1);
	raw_header(p, x, RFI_TAG, 1u << 30, 77, NULL, 0);
	run_all(eps, 3, 200, 20000);
	/* ep1's unexpected message is still taken in whole */
	assert_int_equal(fi_tsend(p->ep[1], s, sizeof(s), NULL, p->addr[0], 5, NULL), 0);
	for (int t = 0; t < 100000 && !((u = ux_tagged(p, 5)) && u->have == u->len); t++)
		run_all(eps, 3, 1, 20000);
	assert_non_null(u = ux_tagged(p, 5));
	assert_int_equal(u->have, sizeof(s));
	assert_null(ux_tagged(p, 77));
	assert_int_equal(e0->ux_bytes, sizeof(s));
	assert_int_equal(fi_trecv(p->ep[0], r, sizeof(r), NULL, p->addr[1], 5, 0, &c), 0);
	assert_int_equal(wait_all(p->cq[0], eps, 3, &e, NULL, 100), 1);
	assert_memory_equal(r, s, sizeof(s));
	third_close(x, xcq);

	/* a 1 MiB header and 100 bytes of it, then silence: dropped at the stall */
	third_open(p, &x, &xcq);
	eps[2] = x;
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(x, s, 10, NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_all(p->cq[0], eps, 3, &e, NULL, 100000), 1);
	raw_header(p, x, RFI_TAG, 1u << 20, 78, part, sizeof(part));
	for (int t = 0; t < 100000 && !((u = ux_tagged(p, 78)) && u->have == sizeof(part)); t++)
		run_all(eps, 3, 1, 20000);
	assert_non_null(ux_tagged(p, 78));
	assert_int_equal(e0->ux_bytes, 1u << 20);
	run_all(eps, 3, 150, 1000000); /* 150 ms */
	assert_null(ux_tagged(p, 78));
	assert_int_equal(e0->ux_bytes, 0);
	third_close(x, xcq);
	rfi_k.unexp_stall_ns = keep;
}

/*
 * 100 x 1 MiB unexpected messages (fabtests' fi_unexpected_msg -M 100 -S 1M):
 * all buffered, then received last first, every byte checked.
 */
void test_ep_unexpected_100mb(void **st)
{
	enum { M = 100, SZ = 1 << 20 };
	pair *p = *st;
	uint8_t *s, *r, *want;
	struct fi_cq_tagged_entry e;
	rfi_ep *e0;
	int c[M], t;

	SKIP_WITHOUT_RAILS(st);
	e0 = (rfi_ep *)p->ep[0];
	s = malloc((size_t)M * SZ);
	r = malloc(SZ);
	want = malloc(SZ);
	assert_non_null(s);
	assert_non_null(r);
	assert_non_null(want);
	for (int i = 0; i < M; i++) {
		fill(s + (size_t)i * SZ, SZ, 100u + (unsigned)i);
		assert_int_equal(fi_tsend(p->ep[1], s + (size_t)i * SZ, SZ, NULL, p->addr[0],
					  (uint64_t)i, NULL), 0);
	}
	for (t = 0; t < 400000 && e0->ux_bytes < (size_t)M * SZ; t++)
		run_all(p->ep, 2, 1, 20000);
	assert_int_equal(e0->ux_bytes, (size_t)M * SZ);
	for (int i = M - 1; i >= 0; i--) {
		memset(r, 0, SZ);
		assert_int_equal(fi_trecv(p->ep[0], r, SZ, NULL, FI_ADDR_UNSPEC, (uint64_t)i, 0,
					  &c[i]), 0);
		assert_int_equal(wait_cq(p, 0, &e, NULL, 1000), 1);
		assert_ptr_equal(e.op_context, &c[i]);
		fill(want, SZ, 100u + (unsigned)i);
		assert_memory_equal(r, want, SZ);
	}
	free(s);
	free(r);
	free(want);
}

/* ---- the snapshot for ri2n-stat (rfi_stat.c) ---- */

/* The endpoint's snapshot file read whole into buf; 0 if there is none. */
static size_t read_snapshot(const rfi_ep *ep, char *buf, size_t cap)
{
	char path[160];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", g_run_dir, ep->stat_name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return n;
}

/*
 * An enabled endpoint publishes at its first pass: the process (driver and
 * endpoint named), its connection to the peer and both rails up; again only
 * once RI2N_STAT_MS (250 ms) has passed on the endpoint's clock; fi_close
 * removes the file.
 */
void test_ep_stat(void **st)
{
	static char buf[16384];
	char path[160], want[160];
	struct fi_cq_tagged_entry e;
	uint8_t msg[8] = "ri2nstat", r[8];
	void *pst = NULL;
	pair *p;
	rfi_ep *ep;
	int c;

	SKIP_WITHOUT_RAILS(st);
	pair_close(st); /* this case closes its own pair, to see the file go */
	*st = NULL;
	assert_int_equal(pair_open(&pst), 0);
	p = pst;
	ep = (rfi_ep *)p->ep[1];
	assert_true(ep->stat_fd >= 0);
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(p->ep[1], msg, sizeof(msg), NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_memory_equal(r, msg, sizeof(msg));
	for (int t = 0; t < 300; t++) { /* 300 ms, both endpoints running: a snapshot is due */
		fake_now += 1000000;
		pass((rfi_ep *)p->ep[0]);
		pass(ep);
	}
	assert_true(read_snapshot(ep, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "ri2n-stat 1\nprocess pid="));
	assert_non_null(strstr(buf, " driver=\"libfabric\" endpoint=\"ri2n://"));
	assert_non_null(strstr(buf, "conn n=1 fd=-1 role=client "));
	assert_non_null(strstr(buf, " state=established "));
	assert_non_null(strstr(buf, "rail conn=1 index=0 "));
	assert_non_null(strstr(buf, "rail conn=1 index=1 "));
	assert_null(strstr(buf, "state=down"));
	/* not again before 250 ms: the file, once removed, stays away... */
	snprintf(path, sizeof(path), "%s/%s", g_run_dir, ep->stat_name);
	assert_int_equal(unlink(path), 0);
	fake_now += 1000000;
	pass(ep);
	assert_int_equal(read_snapshot(ep, buf, sizeof(buf)), 0);
	/* ...until they have passed */
	fake_now += 250000000;
	pass(ep);
	assert_true(read_snapshot(ep, buf, sizeof(buf)) > 0);
	snprintf(want, sizeof(want), "%s", path);
	assert_int_equal(pair_close(&pst), 0);
	assert_int_equal(access(want, F_OK), -1);
}
