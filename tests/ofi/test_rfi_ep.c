/*
 * test_rfi_ep.c - two endpoints talking in one process (RI2N_RAILS names
 * rails): tagged and untagged messages, directed receives, peek, cancel,
 * unexpected messages' cap, a waiting read, counters, connecting over the
 * next rail and a peer that never answers.
 */
#include "test_rfi.h"

/* ---- endpoints (RI2N_RAILS) ---- */

/* Tags with ignore masks, in order; a message before its receive; the source. */
void test_ep_tagged(void **st)
{
	pair *p = *st;
	uint8_t r1[64], r2[64], r3[64], s[3][64];
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	int c1, c2, c3;

	SKIP_WITHOUT_RAILS(st);
	assert_int_equal(fi_trecv(p->ep[0], r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, 0x100, 0xff, &c1), 0);
	assert_int_equal(fi_trecv(p->ep[0], r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, 0x200, 0, &c2), 0);
	for (int i = 0; i < 3; i++)
		fill(s[i], sizeof(s[i]), (unsigned)i + 1);
	/* 0x205 matches neither (unexpected), 0x1ab the first, 0x200 the second */
	assert_int_equal(fi_tsend(p->ep[1], s[0], 40, NULL, p->addr[0], 0x205, NULL), 0);
	assert_int_equal(fi_tsend(p->ep[1], s[1], 41, NULL, p->addr[0], 0x1ab, NULL), 0);
	assert_int_equal(fi_tinject(p->ep[1], s[2], 42, p->addr[0], 0x200), 0);
	assert_int_equal(wait_cq(p, 0, &e, &src, 100000), 1);
	assert_ptr_equal(e.op_context, &c1);
	assert_int_equal(e.tag, 0x1ab);
	assert_int_equal(e.len, 41);
	assert_true(e.flags & FI_TAGGED);
	assert_int_equal(src, p->addr[1]);
	assert_memory_equal(r1, s[1], 41);
	assert_int_equal(wait_cq(p, 0, &e, &src, 100000), 1);
	assert_ptr_equal(e.op_context, &c2);
	assert_memory_equal(r2, s[2], 42);
	/* the unexpected one is waiting: a receive for it completes at once */
	assert_int_equal(fi_trecv(p->ep[0], r3, sizeof(r3), NULL, p->addr[1], 0x205, 0, &c3), 0);
	assert_int_equal(wait_cq(p, 0, &e, &src, 10), 1);
	assert_ptr_equal(e.op_context, &c3);
	assert_int_equal(e.len, 40);
	assert_memory_equal(r3, s[0], 40);
	/* the sender's completions: two sends (the inject has none) */
	assert_int_equal(wait_cq(p, 1, &e, NULL, 10), 1);
	assert_int_equal(e.flags, FI_SEND | FI_TAGGED);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 10), 1);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 1000), -FI_EAGAIN);
}

/* A large message from an iov, every byte checked; then one too big for its receive. */
void test_ep_msg_large_and_trunc(void **st)
{
	pair *p = *st;
	enum { N = 300000 };
	uint8_t *a, *b, small[10];
	struct iovec iov[2];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	int c;

	SKIP_WITHOUT_RAILS(st);
	a = malloc(N);
	b = calloc(1, N);
	assert_non_null(a);
	assert_non_null(b);
	iov[0] = (struct iovec){ a, 1000 };
	iov[1] = (struct iovec){ a + 1000, N - 1000 };
	fill(a, N, 9);
	assert_int_equal(fi_recv(p->ep[1], b, N, NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_sendv(p->ep[0], iov, NULL, 2, p->addr[1], NULL), 0);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 200000), 1);
	assert_int_equal(e.len, N);
	assert_true(e.flags & FI_MSG);
	assert_memory_equal(a, b, N);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 200000), 1); /* the send's completion */
	/* truncated: an error completion with what was cut */
	assert_int_equal(fi_recv(p->ep[1], small, sizeof(small), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(p->ep[0], a, 100, NULL, p->addr[1], NULL), 0);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100000), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.olen, 90);
	assert_int_equal(err.len, 10);
	assert_ptr_equal(err.op_context, &c);
	assert_memory_equal(small, a, 10);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100), 1);
	free(a);
	free(b);
}

/* Directed receives, peek and claim, cancel. */
void test_ep_directed_peek_cancel(void **st)
{
	pair *p = *st;
	uint8_t r1[16], r2[16], s[16];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fi_context cx;
	struct iovec iov = { r2, sizeof(r2) };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				   .tag = 7, .context = &cx };
	int c1, c2, c3;

	SKIP_WITHOUT_RAILS(st);
	fill(s, sizeof(s), 3);
	/* a receive for messages from itself comes first but is not the sender's */
	assert_int_equal(fi_recv(p->ep[0], r1, sizeof(r1), NULL, p->addr[0], &c1), 0);
	assert_int_equal(fi_recv(p->ep[0], r2, sizeof(r2), NULL, p->addr[1], &c2), 0);
	assert_int_equal(fi_inject(p->ep[1], s, 16, p->addr[0]), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_ptr_equal(e.op_context, &c2);
	assert_int_equal(fi_cancel(&p->ep[0]->fid, &c1), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 10), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, &c1);
	assert_int_equal(fi_cancel(&p->ep[0]->fid, &c1), -FI_ENOENT);
	/* peek: nothing yet */
	assert_int_equal(fi_trecvmsg(p->ep[0], &m, FI_PEEK), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 10), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1);
	assert_int_equal(err.err, FI_ENOMSG);
	/* peek and claim, then the claimed receive takes it (and only it) */
	assert_int_equal(fi_tinject(p->ep[1], s, 12, p->addr[0], 7), 0);
	for (int t = 0; t < 100000; t++) {
		assert_int_equal(fi_trecvmsg(p->ep[0], &m, FI_PEEK | FI_CLAIM), 0);
		if (wait_cq(p, 0, &e, NULL, 1) == 1)
			break;
		assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1); /* FI_ENOMSG: again */
	}
	assert_ptr_equal(e.op_context, &cx);
	assert_int_equal(e.len, 12);
	assert_int_equal(fi_trecv(p->ep[0], r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, 7, 0, &c3), 0);
	assert_int_equal(fi_trecvmsg(p->ep[0], &m, FI_CLAIM), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 10), 1);
	assert_ptr_equal(e.op_context, &cx);
	assert_memory_equal(r2, s, 12);
	assert_int_equal(fi_trecvmsg(p->ep[0], &m, FI_CLAIM), -FI_EINVAL); /* claimed already */
	assert_int_equal(fi_cancel(&p->ep[0]->fid, &c3), 0); /* c3 never matched the claimed one */
	assert_int_equal(wait_cq(p, 0, &e, NULL, 10), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1);
	assert_int_equal(err.err, FI_ECANCELED);
}

/*
 * Unexpected messages past FI_RI2N_UNEXPECTED_MB: the stream stops being read
 * (ri2n's window holds the sender) and nothing is lost or reordered when the
 * receives come.
 */
void test_ep_unexpected_cap(void **st)
{
	pair *p = *st;
	size_t keep = rfi_k.unexp_max;
	uint8_t s[4][800], r[4][800];
	struct fi_cq_tagged_entry e;
	int c[4];

	SKIP_WITHOUT_RAILS(st);
	rfi_k.unexp_max = 1000;
	for (int i = 0; i < 4; i++) {
		fill(s[i], sizeof(s[i]), 20u + (unsigned)i);
		assert_int_equal(fi_tsend(p->ep[1], s[i], sizeof(s[i]), NULL, p->addr[0], 5, NULL), 0);
	}
	assert_int_equal(wait_cq(p, 0, &e, NULL, 20000), -FI_EAGAIN); /* nothing posted */
	assert_non_null(((rfi_ep *)p->ep[0])->ux);
	assert_null(((rfi_ep *)p->ep[0])->ux->next); /* one buffered, the rest wait */
	assert_true(((rfi_ep *)p->ep[0])->ux_bytes <= 1000);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fi_trecv(p->ep[0], r[i], sizeof(r[i]), NULL, FI_ADDR_UNSPEC, 5, 0,
					  &c[i]), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
		assert_ptr_equal(e.op_context, &c[i]);
		assert_memory_equal(r[i], s[i], sizeof(s[i]));
	}
	rfi_k.unexp_max = keep;
}

typedef struct late_send {
	pthread_t t;
	pair *p;
	uint8_t s[24];
} late_send;

static void *late_send_main(void *arg)
{
	late_send *ls = arg;
	struct timespec ms20 = { 0, 20000000 };

	nanosleep(&ms20, NULL);
	fi_send(ls->p->ep[1], ls->s, sizeof(ls->s), NULL, ls->p->addr[0], NULL);
	return NULL;
}

/* fi_cq_sread on an FI_WAIT_FD CQ sleeps until the peer's message comes in, then has it. */
void test_ep_sread(void **st)
{
	pair *p = *st;
	struct fi_cq_tagged_entry e;
	late_send ls;
	uint8_t r[24];
	int c;

	SKIP_WITHOUT_RAILS(st);
	ls.p = p;
	fill(ls.s, sizeof(ls.s), 46);
	/* the stream up first (the fake clock does not move while sread sleeps) */
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(p->ep[1], ls.s, 4, NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100), 1);
	memset(r, 0, sizeof(r));
	assert_int_equal(fi_recv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(pthread_create(&ls.t, NULL, late_send_main, &ls), 0);
	assert_int_equal(fi_cq_sread(p->cq[0], &e, 1, NULL, 5000), 1);
	pthread_join(ls.t, NULL);
	assert_ptr_equal(e.op_context, &c);
	assert_memory_equal(r, ls.s, sizeof(r));
}

/*
 * Counters: FI_SEND counts completed sends and injects, FI_RECV receives;
 * a truncated receive counts as an error and ends fi_cntr_wait with
 * -FI_EAVAIL; a threshold not reached times out; no RMA bindings.
 */
void test_ep_cntr(void **st)
{
	pair *p = *st;
	struct fi_cntr_attr wa = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *tx, *rx;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t s[3][32], r[3][32], small[4];
	int c[3], t, fd;

	SKIP_WITHOUT_RAILS(st);
	assert_int_equal(fi_cntr_open(p->o.dom, &wa, &tx, NULL), 0);
	assert_int_equal(fi_cntr_open(p->o.dom, &na, &rx, NULL), 0);
	assert_int_equal(fi_control(&tx->fid, FI_GETWAIT, &fd), 0);
	assert_int_equal(fi_ep_bind(p->ep[1], &tx->fid, FI_WRITE), -FI_EINVAL);
	assert_int_equal(fi_ep_bind(p->ep[1], &tx->fid, FI_SEND), 0);
	assert_int_equal(fi_ep_bind(p->ep[0], &rx->fid, FI_RECV), 0);
	for (int i = 0; i < 3; i++) {
		fill(s[i], sizeof(s[i]), 50u + (unsigned)i);
		assert_int_equal(fi_recv(p->ep[0], r[i], sizeof(r[i]), NULL, FI_ADDR_UNSPEC, &c[i]), 0);
	}
	assert_int_equal(fi_send(p->ep[1], s[0], sizeof(s[0]), NULL, p->addr[0], NULL), 0);
	assert_int_equal(fi_send(p->ep[1], s[1], sizeof(s[1]), NULL, p->addr[0], NULL), 0);
	assert_int_equal(fi_inject(p->ep[1], s[2], sizeof(s[2]), p->addr[0]), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	for (t = 0; t < 1000 && fi_cntr_read(tx) < 3; t++)
		run_all(p->ep, 2, 1, 20000);
	assert_int_equal(fi_cntr_read(tx), 3);
	assert_int_equal(fi_cntr_read(rx), 3);
	assert_int_equal(fi_cntr_readerr(rx), 0);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(r[i], s[i], sizeof(s[i]));
	assert_int_equal(fi_cntr_wait(rx, 3, 0), 0);
	assert_int_equal(fi_cntr_wait(tx, 4, 20), -FI_ETIMEDOUT);
	/* a truncated receive: the error count, and a waiter told so */
	assert_int_equal(fi_recv(p->ep[0], small, sizeof(small), NULL, FI_ADDR_UNSPEC, &c[0]), 0);
	assert_int_equal(fi_send(p->ep[1], s[0], sizeof(s[0]), NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1);
	assert_int_equal(fi_cntr_readerr(rx), 1);
	assert_int_equal(fi_cntr_read(rx), 3);
	assert_int_equal(fi_cntr_seterr(rx, 0), 0);
	assert_int_equal(fi_cntr_adderr(rx, 1), 0);
	assert_int_equal(fi_cntr_readerr(rx), 1);
	assert_int_equal(fi_cntr_set(rx, 10), 0);
	assert_int_equal(fi_cntr_add(rx, 2), 0);
	assert_int_equal(fi_cntr_read(rx), 12);
	/* still bound: a counter outlives no endpoint */
	assert_int_equal(fi_close(&rx->fid), -FI_EBUSY);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fi_close(&p->ep[i]->fid), 0);
		assert_int_equal(fi_close(&p->cq[i]->fid), 0);
	}
	assert_int_equal(fi_close(&tx->fid), 0);
	assert_int_equal(fi_close(&rx->fid), 0);
	objs_close(&p->o);
	fi_freeinfo(p->fi);
	free(p);
	*st = NULL;
}

/*
 * A peer whose first rail never answers (nobody at that port): after
 * FI_RI2N_ATTEMPT_MS of virtual time the next rail is tried and the message
 * arrives; nothing arrives before.
 */
void test_ep_connect_next_rail(void **st)
{
	pair *p = *st;
	rfi_name nm, alt;
	uint8_t w[RFI_NAME_LEN], r[32], s[32];
	struct fi_cq_tagged_entry e;
	fi_addr_t a;
	int c;

	SKIP_WITHOUT_RAILS(st);
	nm = ((rfi_ep *)p->ep[1])->name;
	if (nm.n < 2)
		skip();
	alt = nm;
	alt.rail[0].port = 9; /* discard: nobody listens in the bed */
	rfi_name_write(&alt, w);
	assert_int_equal(fi_av_insert(p->o.av, w, 1, &a, 0, NULL), 1);
	fill(s, sizeof(s), 5);
	assert_int_equal(fi_recv(p->ep[1], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c), 0);
	assert_int_equal(fi_send(p->ep[0], s, sizeof(s), NULL, a, NULL), 0);
	/* 50 virtual ms: the first attempt is still waiting */
	assert_int_equal(wait_cq(p, 1, &e, NULL, 2500), -FI_EAGAIN);
	fake_now += rfi_k.attempt_ns;
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100000), 1);
	assert_ptr_equal(e.op_context, &c);
	assert_memory_equal(r, s, sizeof(s));
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100), 1);
	assert_int_equal(e.flags, FI_SEND | FI_MSG);
}

/* A peer nobody answers for: the send fails on the CQ (FI_ETIMEDOUT), nothing aborts. */
void test_ep_unreachable_peer(void **st)
{
	pair *p = *st;
	rfi_name nm;
	uint8_t w[RFI_NAME_LEN], s[8] = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	fi_addr_t a;
	int c, t;

	SKIP_WITHOUT_RAILS(st);
	nm = ((rfi_ep *)p->ep[1])->name;
	for (int i = 0; i < nm.n; i++)
		nm.rail[i].port = 9;
	rfi_name_write(&nm, w);
	assert_int_equal(fi_av_insert(p->o.av, w, 1, &a, 0, NULL), 1);
	assert_int_equal(fi_send(p->ep[0], s, sizeof(s), NULL, a, &c), 0);
	/* virtual seconds: every rail tried in turn until the connect timeout */
	for (t = 0; t < 100; t++) {
		ssize_t n = wait_cq(p, 0, &e, NULL, 10);

		if (n == -FI_EAVAIL)
			break;
		assert_int_equal(n, -FI_EAGAIN);
		fake_now += rfi_k.attempt_ns / 2;
	}
	assert_true(t < 100);
	assert_int_equal(fi_cq_readerr(p->cq[0], &err, 0), 1);
	assert_int_equal(err.err, FI_ETIMEDOUT);
	assert_ptr_equal(err.op_context, &c);
	/* the endpoint still works with its real peer */
	assert_int_equal(fi_inject(p->ep[0], s, sizeof(s), p->addr[1]), 0);
	{
		uint8_t r[8];
		int c2;

		assert_int_equal(fi_recv(p->ep[1], r, sizeof(r), NULL, FI_ADDR_UNSPEC, &c2), 0);
		assert_int_equal(wait_cq(p, 1, &e, NULL, 100000), 1);
		assert_ptr_equal(e.op_context, &c2);
	}
}
