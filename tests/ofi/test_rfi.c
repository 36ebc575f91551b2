/*
 * test_rfi.c - the libfabric provider's objects, driven directly: names,
 * getinfo, the address vector, the completion queue and, where RI2N_RAILS
 * names rails (tests/ofi/test_rfi_netns.sh), endpoints talking to each
 * other in one process.  Time is a fake clock the test moves (rfi_clock):
 * connect attempts and the connect timeout run in virtual seconds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rfi.h"
#include "ri2n_kit.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static rfi_name name2(void)
{
	rfi_name nm = { .n = 2 };

	nm.rail[0] = (rn_rail_addr){ .ip = 0xc6120101, .port = 4000, .prefix = 24 }; /* 198.18.1.1 */
	nm.rail[1] = (rn_rail_addr){ .ip = 0xc6120201, .port = 4001, .prefix = 24 };
	return nm;
}

/* ---- names ---- */

static void test_name_roundtrip(void **st)
{
	rfi_name a = name2(), b;
	uint8_t w[RFI_NAME_LEN];
	char s[128];

	(void)st;
	rfi_name_write(&a, w);
	assert_int_equal(rfi_name_read(&b, w, sizeof(w)), 0);
	assert_true(rfi_name_eq(&a, &b));
	assert_int_equal(b.rail[1].prefix, 24);
	rfi_name_str(&b, s, sizeof(s));
	assert_string_equal(s, "ri2n://198.18.1.1:4000/24,198.18.2.1:4001/24");
	b.rail[1].port = 4002;
	assert_false(rfi_name_eq(&a, &b));
}

static void test_name_rejects(void **st)
{
	_Static_assert((int)RFI_NAME_LEN <= (int)FI_NAME_MAX, "mtl/ofi's fi_getname buffer");
	rfi_name a = name2(), b;
	uint8_t w[RFI_NAME_LEN], bad[RFI_NAME_LEN];

	(void)st;
	rfi_name_write(&a, w);
	assert_int_equal(rfi_name_read(&b, w, RFI_NAME_LEN - 1), -FI_EINVAL); /* short */
	memcpy(bad, w, sizeof(w));
	bad[0] = 'X'; /* magic */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[1] = 2; /* version */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[2] = 0; /* no rail */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	bad[2] = RN_MAX_RAILS + 1;
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[4 + 6] = 0; /* prefix 0 */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[4 + 4] = bad[4 + 5] = 0; /* port 0 */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
}

/* ---- getinfo ---- */

static void test_getinfo_hints(void **st)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL;
	int rc;

	(void)st;
	assert_non_null(h);
	h->caps = FI_TAGGED;
	h->ep_attr->type = FI_EP_RDM;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->av_type = FI_AV_MAP;
	rc = rfi_prov.getinfo(FI_VERSION(1, 0), NULL, NULL, 0, h, &fi);
	if (rc == -FI_ENODATA && !getenv("RFI_TEST_NETNS")) {
		fi_freeinfo(h);
		skip(); /* no IPv4 interface to call a rail here */
	}
	assert_int_equal(rc, 0);
	assert_true(fi->caps & FI_TAGGED);
	assert_int_equal(fi->ep_attr->type, FI_EP_RDM);
	assert_int_equal(fi->ep_attr->mem_tag_format, RFI_TAG_FORMAT);
	assert_int_equal(fi->tx_attr->inject_size, 4096); /* rfi_knob_list.h's default */
	assert_int_equal(fi->tx_attr->msg_order, FI_ORDER_SAS);
	assert_int_equal(fi->rx_attr->op_flags, FI_COMPLETION);
	assert_int_equal(fi->domain_attr->av_type, FI_AV_MAP);
	assert_int_equal(fi->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	assert_int_equal(fi->domain_attr->mr_mode, FI_MR_SCALABLE); /* asked at 1.0 */
	fi_freeinfo(fi);
	/* what it cannot do: no data */
	h->caps = FI_TAGGED | FI_RMA;
	assert_int_equal(rfi_prov.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_MSG;
	assert_int_equal(rfi_prov.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	assert_int_equal(rfi_prov.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
	assert_int_equal(rfi_prov.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA);
	fi_freeinfo(h);
}

/* ---- fabric, domain, AV, CQ ---- */

typedef struct objs {
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
} objs;

static void objs_open(objs *o)
{
	struct fi_fabric_attr fa = { .name = (char *)RFI_FABRIC_NAME };
	struct fi_av_attr aa = { .type = FI_AV_MAP };

	assert_int_equal(rfi_prov.fabric(&fa, &o->fab, NULL), 0);
	o->fab->api_version = FI_VERSION(1, 17);
	assert_int_equal(fi_domain(o->fab, NULL, &o->dom, NULL), 0);
	assert_int_equal(fi_av_open(o->dom, &aa, &o->av, NULL), 0);
}

static void objs_close(objs *o)
{
	assert_int_equal(fi_close(&o->av->fid), 0);
	assert_int_equal(fi_close(&o->dom->fid), 0);
	assert_int_equal(fi_close(&o->fab->fid), 0);
}

static void test_av(void **st)
{
	rfi_name a = name2(), b = name2();
	uint8_t names[3 * RFI_NAME_LEN], got[RFI_NAME_LEN];
	fi_addr_t addr[3], again;
	size_t len;
	objs o;

	(void)st;
	objs_open(&o);
	b.rail[0].port = 5000;
	rfi_name_write(&a, names);
	memset(names + RFI_NAME_LEN, 0x55, RFI_NAME_LEN); /* not a name */
	rfi_name_write(&b, names + 2 * RFI_NAME_LEN);
	assert_int_equal(fi_av_insert(o.av, names, 3, addr, 0, NULL), 2);
	assert_int_equal(addr[0], 0);
	assert_int_equal(addr[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(addr[2], 1);
	/* the same name again: the same fi_addr_t */
	assert_int_equal(fi_av_insert(o.av, names, 1, &again, 0, NULL), 1);
	assert_int_equal(again, 0);
	len = sizeof(got);
	assert_int_equal(fi_av_lookup(o.av, 1, got, &len), 0);
	assert_int_equal(len, RFI_NAME_LEN);
	assert_memory_equal(got, names + 2 * RFI_NAME_LEN, RFI_NAME_LEN);
	len = 8;
	assert_int_equal(fi_av_lookup(o.av, 1, got, &len), -FI_ETOOSMALL);
	assert_int_equal(len, RFI_NAME_LEN);
	assert_int_equal(rfi_av_find((rfi_av *)o.av, &b), 1);
	assert_int_equal(fi_av_remove(o.av, &addr[0], 1, 0), 0);
	assert_null(rfi_av_get((rfi_av *)o.av, 0));
	assert_int_equal(rfi_av_find((rfi_av *)o.av, &a), FI_ADDR_NOTAVAIL);
	len = sizeof(got);
	assert_int_equal(fi_av_lookup(o.av, 0, got, &len), -FI_EINVAL);
	/* the domain stays while something is open on it */
	assert_int_equal(fi_close(&o.dom->fid), -FI_EBUSY);
	objs_close(&o);
}

static void test_cq(void **st)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 2 };
	struct fi_cq_tagged_entry e = { 0 }, out[3];
	struct fi_cq_err_entry err = { 0 };
	struct fid_cq *f;
	fi_addr_t src[3];
	int ctx[3];
	objs o;

	(void)st;
	objs_open(&o);
	assert_int_equal(fi_cq_open(o.dom, &ca, &f, NULL), 0);
	assert_int_equal(fi_cq_read(f, out, 1), -FI_EAGAIN);
	for (int i = 0; i < 3; i++) { /* one more than its size: it grows, nothing is lost */
		e = (struct fi_cq_tagged_entry){ .op_context = &ctx[i], .flags = FI_RECV | FI_TAGGED,
						 .len = (size_t)i, .tag = 100u + (unsigned)i };
		assert_int_equal(rfi_cq_push((rfi_cq *)f, &e, (fi_addr_t)(7 + i)), 0);
	}
	assert_int_equal(fi_cq_readfrom(f, out, 1, src), 1);
	assert_ptr_equal(out[0].op_context, &ctx[0]);
	assert_int_equal(src[0], 7);
	assert_int_equal(fi_cq_readfrom(f, out, 3, src), 2);
	assert_ptr_equal(out[1].op_context, &ctx[2]);
	assert_int_equal(out[1].tag, 102);
	assert_int_equal(out[1].len, 2);
	assert_int_equal(src[1], 9);
	/* the error path: -FI_EAVAIL, then fi_cq_readerr */
	rfi_cq_push_err((rfi_cq *)f, &e, FI_ETRUNC, 90, 0);
	assert_int_equal(fi_cq_read(f, out, 1), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(f, &err, 0), 1);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.olen, 90);
	assert_ptr_equal(err.op_context, &ctx[2]);
	assert_int_equal(fi_cq_read(f, out, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(f, &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_close(&f->fid), 0);

	/* the context format: 8-byte entries */
	ca = (struct fi_cq_attr){ .format = FI_CQ_FORMAT_CONTEXT };
	assert_int_equal(fi_cq_open(o.dom, &ca, &f, NULL), 0);
	for (int i = 0; i < 2; i++) {
		e.op_context = &ctx[i];
		rfi_cq_push((rfi_cq *)f, &e, 0);
	}
	{
		struct fi_cq_entry c[2];

		assert_int_equal(fi_cq_read(f, c, 2), 2);
		assert_ptr_equal(c[0].op_context, &ctx[0]);
		assert_ptr_equal(c[1].op_context, &ctx[1]);
	}
	assert_int_equal(fi_close(&f->fid), 0);
	objs_close(&o);
}

/* ---- wait objects ---- */

static uint64_t mono(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A thread that, 20 ms in, signals a CQ or writes an EQ event; fails the test if nobody woke. */
typedef struct waker {
	pthread_t t;
	struct fid_cq *cq;
	struct fid_eq *eq;
	int done;
} waker;

static void *waker_main(void *arg)
{
	waker *w = arg;
	struct timespec ms20 = { 0, 20000000 };
	uint32_t v = 0x1234;

	nanosleep(&ms20, NULL);
	if (w->cq)
		fi_cq_signal(w->cq);
	else
		fi_eq_write(w->eq, FI_NOTIFY, &v, sizeof(v), 0);
	for (int i = 0; i < 250 && !__atomic_load_n(&w->done, __ATOMIC_ACQUIRE); i++)
		nanosleep(&ms20, NULL);
	if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
		fprintf(stderr, "a blocked read was not woken within 5 s\n");
		_exit(1);
	}
	return NULL;
}

static void waker_start(waker *w)
{
	assert_int_equal(pthread_create(&w->t, NULL, waker_main, w), 0);
}

static void waker_end(waker *w)
{
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	pthread_join(w->t, NULL);
}

static int fd_ready(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, 0);
}

/*
 * FI_WAIT_FD: FI_GETWAIT's fd is readable once a completion is queued and
 * fi_trywait says so; fi_cq_sread sleeps (little CPU) until its timeout;
 * fi_cq_signal wakes fi_cq_sread(-1), and one made before is not lost.
 */
static void test_cq_wait(void **st)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD };
	struct fi_cq_tagged_entry e = { .flags = FI_RECV }, out;
	enum fi_wait_obj wo;
	struct fid *fids[1];
	uint64_t t0, c0;
	struct fid_cq *f;
	waker w = { 0 };
	int fd = -1;
	objs o;

	(void)st;
	objs_open(&o);
	assert_int_equal(fi_cq_open(o.dom, &ca, &f, NULL), 0);
	fids[0] = &f->fid;
	assert_int_equal(fi_control(&f->fid, FI_GETWAIT, &fd), 0);
	assert_true(fd >= 0);
	assert_int_equal(fi_control(&f->fid, FI_GETWAITOBJ, &wo), 0);
	assert_int_equal(wo, FI_WAIT_FD);
	assert_int_equal(fi_trywait(o.fab, fids, 1), 0);
	assert_int_equal(fd_ready(fd), 0);
	pthread_mutex_lock(&((rfi_cq *)f)->dom->lock);
	assert_int_equal(rfi_cq_push((rfi_cq *)f, &e, 0), 0);
	pthread_mutex_unlock(&((rfi_cq *)f)->dom->lock);
	assert_int_equal(fd_ready(fd), 1);
	assert_int_equal(fi_trywait(o.fab, fids, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(f, &out, 1), 1);
	assert_int_equal(fi_trywait(o.fab, fids, 1), 0);
	assert_int_equal(fd_ready(fd), 0);
	/* nothing comes: it sleeps the whole 100 ms */
	t0 = mono(CLOCK_MONOTONIC);
	c0 = mono(CLOCK_THREAD_CPUTIME_ID);
	assert_int_equal(fi_cq_sread(f, &out, 1, NULL, 100), -FI_EAGAIN);
	assert_true(mono(CLOCK_MONOTONIC) - t0 >= 100000000);
	assert_true(mono(CLOCK_THREAD_CPUTIME_ID) - c0 < 25000000); /* no spinning */
	/* fi_cq_signal wakes a reader with no timeout */
	w.cq = f;
	waker_start(&w);
	assert_int_equal(fi_cq_sread(f, &out, 1, NULL, -1), -FI_EAGAIN);
	waker_end(&w);
	/* ...and one made before the read is kept for it */
	assert_int_equal(fi_cq_signal(f), 0);
	assert_int_equal(fi_cq_sread(f, &out, 1, NULL, -1), -FI_EAGAIN);
	assert_int_equal(fi_close(&f->fid), 0);
	/* FI_WAIT_UNSPEC is an fd too */
	ca.wait_obj = FI_WAIT_UNSPEC;
	assert_int_equal(fi_cq_open(o.dom, &ca, &f, NULL), 0);
	assert_int_equal(fi_control(&f->fid, FI_GETWAITOBJ, &wo), 0);
	assert_int_equal(wo, FI_WAIT_FD);
	assert_int_equal(fi_cq_sread(f, &out, 1, NULL, 10), -FI_EAGAIN);
	assert_int_equal(fi_close(&f->fid), 0);
	objs_close(&o);
}

/* The EQ: fi_eq_sread waits out its timeout, and wakes for an event written meanwhile. */
static void test_eq_wait(void **st)
{
	struct fi_eq_attr qa = { .wait_obj = FI_WAIT_UNSPEC };
	uint32_t type = 0, v = 0;
	struct fid_eq *q;
	waker w = { 0 };
	uint64_t t0;
	int fd = -1;
	objs o;

	(void)st;
	objs_open(&o);
	assert_int_equal(fi_eq_open(o.fab, &qa, &q, NULL), 0);
	assert_int_equal(fi_control(&q->fid, FI_GETWAIT, &fd), 0);
	t0 = mono(CLOCK_MONOTONIC);
	assert_int_equal(fi_eq_sread(q, &type, &v, sizeof(v), 100, 0), -FI_EAGAIN);
	assert_true(mono(CLOCK_MONOTONIC) - t0 >= 100000000);
	assert_int_equal(fd_ready(fd), 0);
	w.eq = q;
	waker_start(&w);
	assert_int_equal(fi_eq_sread(q, &type, &v, sizeof(v), -1, 0), sizeof(v));
	waker_end(&w);
	assert_int_equal(type, FI_NOTIFY);
	assert_int_equal(v, 0x1234);
	assert_int_equal(fi_eq_read(q, &type, &v, sizeof(v), 0), -FI_EAGAIN);
	assert_int_equal(fi_close(&q->fid), 0);
	objs_close(&o);
}

/* ---- endpoints (RI2N_RAILS) ---- */

typedef struct pair {
	objs o;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	fi_addr_t addr[2];
	struct fi_info *fi;
} pair;

static enum fi_wait_obj g_pair_wait = FI_WAIT_NONE; /* the pair's CQs' wait object */

static int pair_open(void **st)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = g_pair_wait };
	pair *p;

	*st = NULL;
	if (!getenv("RFI_TEST_NETNS"))
		return 0; /* no rails named: the endpoint cases skip */
	p = calloc(1, sizeof(*p));
	assert_non_null(p);
	objs_open(&p->o);
	p->fi = rfi_info_new(FI_VERSION(1, 17), NULL);
	for (int i = 0; i < 2; i++) {
		uint8_t nm[RFI_NAME_LEN];
		size_t len = sizeof(nm);

		if (fi_endpoint(p->o.dom, p->fi, &p->ep[i], NULL) != 0)
			return -1;
		assert_int_equal(fi_cq_open(p->o.dom, &ca, &p->cq[i], NULL), 0);
		assert_int_equal(fi_ep_bind(p->ep[i], &p->cq[i]->fid, FI_TRANSMIT | FI_RECV), 0);
		assert_int_equal(fi_ep_bind(p->ep[i], &p->o.av->fid, 0), 0);
		assert_int_equal(fi_enable(p->ep[i]), 0);
		assert_int_equal(fi_getname(&p->ep[i]->fid, nm, &len), 0);
		assert_int_equal(fi_av_insert(p->o.av, nm, 1, &p->addr[i], 0, NULL), 1);
	}
	*st = p;
	return 0;
}

static int pair_close(void **st)
{
	pair *p = *st;

	if (!p)
		return 0;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fi_close(&p->ep[i]->fid), 0);
		assert_int_equal(fi_close(&p->cq[i]->fid), 0);
	}
	objs_close(&p->o);
	fi_freeinfo(p->fi);
	free(p);
	return 0;
}

#define SKIP_WITHOUT_RAILS(st) do { if (!*(st)) skip(); } while (0)

/* Runs both endpoints, 20 virtual us a turn, until cq has an entry (or an error). */
static ssize_t wait_cq(pair *p, int i, struct fi_cq_tagged_entry *e, fi_addr_t *src, int turns)
{
	for (int t = 0; t < turns; t++) {
		ssize_t n = fi_cq_readfrom(p->cq[i], e, 1, src);

		if (n != -FI_EAGAIN)
			return n;
		fake_now += 20000;
		pthread_mutex_lock(&((rfi_ep *)p->ep[!i])->dom->lock);
		rfi_ep_pass((rfi_ep *)p->ep[!i]);
		pthread_mutex_unlock(&((rfi_ep *)p->ep[!i])->dom->lock);
	}
	return -FI_EAGAIN;
}

/* A message's bytes: the test kit's pattern (tools/kit/ri2n_kit.h). */
static void fill(uint8_t *b, size_t n, unsigned seed)
{
	kit_pattern_fill(b, seed, 0, n);
}

/* Tags with ignore masks, in order; a message before its receive; the source. */
static void test_ep_tagged(void **st)
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
static void test_ep_msg_large_and_trunc(void **st)
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
static void test_ep_directed_peek_cancel(void **st)
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
static void test_ep_unexpected_cap(void **st)
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

static void pass(rfi_ep *ep)
{
	pthread_mutex_lock(&ep->dom->lock);
	rfi_ep_pass(ep);
	pthread_mutex_unlock(&ep->dom->lock);
}

/* ---- whose messages (rfi_hello.c), unexpected messages' bounds ---- */

/* A third endpoint on the pair's domain and AV, with a CQ of its own. */
static void third_open(pair *p, struct fid_ep **ep, struct fid_cq **cq)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };

	assert_int_equal(fi_endpoint(p->o.dom, p->fi, ep, NULL), 0);
	assert_int_equal(fi_cq_open(p->o.dom, &ca, cq, NULL), 0);
	assert_int_equal(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV), 0);
	assert_int_equal(fi_ep_bind(*ep, &p->o.av->fid, 0), 0);
	assert_int_equal(fi_enable(*ep), 0);
}

static void third_close(struct fid_ep *ep, struct fid_cq *cq)
{
	assert_int_equal(fi_close(&ep->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* n turns of dt virtual ns, every endpoint of eps run each turn. */
static void run_all(struct fid_ep **eps, int n_eps, int turns, uint64_t dt)
{
	for (int t = 0; t < turns; t++) {
		fake_now += dt;
		for (int i = 0; i < n_eps; i++)
			pass((rfi_ep *)eps[i]);
	}
}

/* cq's next completion within turns of every endpoint running; n as fi_cq_readfrom. */
static ssize_t wait_all(struct fid_cq *cq, struct fid_ep **eps, int n_eps,
			struct fi_cq_tagged_entry *e, fi_addr_t *src, int turns)
{
	for (int t = 0; t < turns; t++) {
		ssize_t n = fi_cq_readfrom(cq, e, 1, src);

		if (n != -FI_EAGAIN)
			return n;
		run_all(eps, n_eps, 1, 20000);
	}
	return -FI_EAGAIN;
}

/*
 * A hello naming another AV peer (ep1) from a third endpoint's rails is
 * refused: a receive directed at ep1 never completes with the impostor's
 * bytes, and completes with ep1's own.
 */
static void test_ep_hostile_hello(void **st)
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

	for (rfi_link *l = ep->links; l; l = l->next)
		n += !l->peer && l->have_name && !l->dead && !l->retired;
	return n;
}

/*
 * A second stream in a live stream's name supersedes it (fi_av_xfer): ep1
 * removes ep0 from the AV and inserts it again, so its next send opens a
 * new connection while a message it sent on the old one is still on its
 * way.  ep0 takes both, in order, from ep1; the old stream ends cleanly on
 * both sides.
 */
static void test_ep_second_link(void **st)
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
	for (rfi_link *l = e0->links; l; l = l->next)
		if (l->retired)
			assert_int_equal(l->retired, RFI_RETIRED_DONE);
	for (rfi_link *l = e1->links; l; l = l->next)
		if (l->retired)
			assert_int_not_equal(rn_conn_state(l->conn), RN_ST_ESTABLISHED);
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
		for (rfi_link *l = e1->links; l; l = l->next)
			rn_conn_shutdown(l->conn, rfi_ep_now(e1));
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
static void test_ep_restart_same_ports(void **st)
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
	assert_int_equal(rn_conn_write(peer->link->conn, rfi_ep_now(ex), h, sizeof(h)),
			 (ssize_t)sizeof(h));
	if (blen)
		assert_int_equal(rn_conn_write(peer->link->conn, rfi_ep_now(ex), body, blen),
				 (ssize_t)blen);
	rfi_link_flush(peer->link, rfi_ep_now(ex));
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
static void test_ep_unexpected_bounds(void **st)
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
static void test_ep_unexpected_100mb(void **st)
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

static int pair_open_fd(void **st)
{
	int rc;

	g_pair_wait = FI_WAIT_FD;
	rc = pair_open(st);
	g_pair_wait = FI_WAIT_NONE;
	return rc;
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
static void test_ep_sread(void **st)
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
static void test_ep_cntr(void **st)
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
static void test_ep_connect_next_rail(void **st)
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
static void test_ep_unreachable_peer(void **st)
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

/* ---- the snapshot for ri2n-stat (rfi_stat.c) ---- */

static char g_run_dir[64];

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
static void test_ep_stat(void **st)
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

/* ---- what fabtests asks of the provider ---- */

/* fi_getinfo with node and service; 0 or its error.  *fi set on success. */
static int getinfo_at(const char *node, const char *service, uint64_t flags,
		      const struct fi_info *h, struct fi_info **fi)
{
	*fi = NULL;
	return rfi_prov.getinfo(FI_VERSION(1, 17), node, service, flags, h, fi);
}

/* An address on none of the rails' subnets. */
static uint32_t off_rails(const rn_rail_info *rails, int n)
{
	uint32_t ip = 0xcb00714d; /* 203.0.113.77 */

	for (int i = 0; i < n; i++) {
		uint32_t mask = rails[i].prefix >= 32 ? UINT32_MAX : ~(UINT32_MAX >> rails[i].prefix);

		if ((rails[i].ip & mask) == (ip & mask)) {
			ip += 0x01000000; /* another /8 */
			i = -1;
		}
	}
	return ip;
}

/* Node and service fill the source and destination names; bad ones are refused. */
static void test_getinfo_node_service(void **st)
{
	rn_rail_info rails[RN_MAX_RAILS];
	char err[128], ip[INET_ADDRSTRLEN], peer[INET_ADDRSTRLEN];
	struct fi_info *fi, *h;
	rfi_name nm;
	int n;

	(void)st;
	n = rn_rails_discover(rails, RN_MAX_RAILS, rfi_k.rails, err, sizeof(err));
	if (n <= 0 && !getenv("RFI_TEST_NETNS"))
		skip(); /* no IPv4 interface to call a rail here */
	assert_true(n > 0);
	rn_ip_str(rails[0].ip, ip, sizeof(ip));
	rn_ip_str(rails[0].ip ^ 0x3, peer, sizeof(peer)); /* another host on rail 1's subnet */
	/* nothing named: this host's rails, any port */
	assert_int_equal(getinfo_at(NULL, NULL, 0, NULL, &fi), 0);
	assert_int_equal(fi->src_addrlen, RFI_NAME_LEN);
	assert_int_equal(rfi_name_read_src(&nm, fi->src_addr, fi->src_addrlen), 0);
	assert_int_equal(nm.n, n);
	assert_int_equal(nm.rail[0].ip, rails[0].ip);
	assert_int_equal(nm.rail[0].port, 0);
	assert_null(fi->dest_addr);
	fi_freeinfo(fi);
	/* a service with FI_SOURCE: every rail on that port; a rail's address as node too */
	assert_int_equal(getinfo_at(NULL, "4567", FI_SOURCE, NULL, &fi), 0);
	assert_int_equal(rfi_name_read(&nm, fi->src_addr, fi->src_addrlen), 0);
	assert_int_equal(nm.rail[n - 1].port, 4567);
	fi_freeinfo(fi);
	assert_int_equal(getinfo_at(ip, "4567", FI_SOURCE, NULL, &fi), 0);
	fi_freeinfo(fi);
	/* node and service: the destination, its one rail on our subnet */
	assert_int_equal(getinfo_at(peer, "4568", 0, NULL, &fi), 0);
	assert_non_null(fi->src_addr);
	assert_int_equal(fi->dest_addrlen, RFI_NAME_LEN);
	assert_int_equal(rfi_name_read(&nm, fi->dest_addr, fi->dest_addrlen), 0);
	assert_int_equal(nm.n, 1);
	assert_int_equal(nm.rail[0].ip, rails[0].ip ^ 0x3);
	assert_int_equal(nm.rail[0].port, 4568);
	assert_int_equal(nm.rail[0].prefix, rails[0].prefix);
	fi_freeinfo(fi);
	/* a node alone: reachable, but no endpoint named */
	assert_int_equal(getinfo_at(peer, NULL, 0, NULL, &fi), 0);
	assert_null(fi->dest_addr);
	fi_freeinfo(fi);
	/* refused, never accepted: an unknown host, a port that is none, a source that is
	 * no rail of ours, a destination on none of our subnets */
	assert_int_equal(getinfo_at("no-such-host.invalid", "4567", 0, NULL, &fi), -FI_ENODATA);
	assert_null(fi);
	assert_int_equal(getinfo_at(peer, "http-ish", 0, NULL, &fi), -FI_ENODATA);
	assert_int_equal(getinfo_at(NULL, "70000", FI_SOURCE, NULL, &fi), -FI_ENODATA);
	assert_int_equal(getinfo_at(peer, "4567", FI_SOURCE, NULL, &fi), -FI_ENODATA);
	rn_ip_str(off_rails(rails, n), peer, sizeof(peer));
	assert_int_equal(getinfo_at(peer, "4567", 0, NULL, &fi), -FI_ENODATA);
	/* hints it cannot honour */
	h = fi_allocinfo();
	assert_non_null(h);
	h->domain_attr->cq_data_size = RFI_CQ_DATA_SIZE + 4;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->domain_attr->cq_data_size = 0;
	h->domain_attr->caps = FI_SHARED_AV;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->domain_attr->caps = 0;
	h->caps = FI_TAGGED | FI_SHARED_AV;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->caps = FI_TAGGED;
	h->tx_attr->iov_limit = RFI_IOV_MAX + 1;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->tx_attr->iov_limit = 0;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE; /* its sends are inject complete */
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->tx_attr->op_flags = FI_TRANSMIT_COMPLETE;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), -FI_ENODATA);
	h->tx_attr->op_flags = FI_INJECT_COMPLETE | FI_COMPLETION;
	assert_int_equal(getinfo_at(NULL, NULL, 0, h, &fi), 0);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Bad arguments are -FI_EINVAL, never a crash; a partial name finds its peer. */
static void test_av_bad_args_partial(void **st)
{
	rfi_name full = name2(), part = { .n = 1 };
	uint8_t w[RFI_NAME_LEN];
	fi_addr_t a = 0;
	size_t len = sizeof(w);
	objs o;

	(void)st;
	objs_open(&o);
	assert_int_equal(fi_av_insert(o.av, NULL, 1, &a, 0, NULL), -FI_EINVAL);
	assert_int_equal(fi_av_remove(o.av, NULL, 1, 0), -FI_EINVAL);
	assert_int_equal(fi_av_lookup(o.av, 0, w, NULL), -FI_EINVAL);
	assert_int_equal(fi_av_lookup(o.av, 0, NULL, &len), -FI_EINVAL);
	/* the one rail fi_getinfo's node and service name: the peer's full name is it */
	part.rail[0] = full.rail[1];
	rfi_name_write(&part, w);
	assert_int_equal(fi_av_insert(o.av, w, 1, &a, 0, NULL), 1);
	assert_int_equal(rfi_av_find((rfi_av *)o.av, &full), a);
	full.rail[1].port++; /* another endpoint on that host: not it */
	assert_int_equal(rfi_av_find((rfi_av *)o.av, &full), FI_ADDR_NOTAVAIL);
	objs_close(&o);
}

/* FI_INJECT as a flag completes; only fi_inject itself is silent. */
static void test_ep_inject_flag_completes(void **st)
{
	pair *p = *st;
	uint8_t s[3][32], r[3][32];
	struct iovec iov = { s[1], sizeof(s[1]) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .context = &iov };
	struct fi_cq_tagged_entry e;
	rfi_ep *tx;
	int c[3];

	SKIP_WITHOUT_RAILS(st);
	tx = (rfi_ep *)p->ep[1];
	m.addr = p->addr[0];
	for (int i = 0; i < 3; i++) {
		fill(s[i], sizeof(s[i]), 40u + (unsigned)i);
		assert_int_equal(fi_recv(p->ep[0], r[i], sizeof(r[i]), NULL, FI_ADDR_UNSPEC, &c[i]),
				 0);
	}
	assert_int_equal(fi_inject(p->ep[1], s[0], sizeof(s[0]), p->addr[0]), 0);
	assert_int_equal(fi_sendmsg(p->ep[1], &m, FI_INJECT | FI_COMPLETION), 0);
	memset(s[1], 0, sizeof(s[1])); /* the buffer is free at return */
	tx->tx_op_flags = FI_INJECT; /* as fi_getinfo's tx_attr->op_flags gives it */
	assert_int_equal(fi_send(p->ep[1], s[2], sizeof(s[2]), NULL, p->addr[0], &c[2]), 0);
	tx->tx_op_flags = 0;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
		assert_ptr_equal(e.op_context, &c[i]);
	}
	fill(s[1], sizeof(s[1]), 41);
	for (int i = 0; i < 3; i++)
		assert_memory_equal(r[i], s[i], sizeof(s[i]));
	/* two send completions, the sendmsg's and the send's; none for fi_inject */
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100), 1);
	assert_ptr_equal(e.op_context, &iov);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100), 1);
	assert_ptr_equal(e.op_context, &c[2]);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 1000), -FI_EAGAIN);
}

/* FI_PEEK | FI_DISCARD reports the message and drops it; the next receive gets the next. */
static void test_ep_peek_discard(void **st)
{
	pair *p = *st;
	uint8_t s[2][24], r[24];
	struct fi_cq_tagged_entry e;
	struct fi_context cx;
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 9, .context = &cx };
	int c;

	SKIP_WITHOUT_RAILS(st);
	fill(s[0], sizeof(s[0]), 50);
	fill(s[1], sizeof(s[1]), 51);
	assert_int_equal(fi_tsend(p->ep[1], s[0], 20, NULL, p->addr[0], 9, &c), 0);
	assert_int_equal(wait_cq(p, 1, &e, NULL, 100000), 1); /* sent */
	e.op_context = NULL;
	for (int t = 0; t < 100000; t++) {
		assert_int_equal(fi_trecvmsg(p->ep[0], &m, FI_PEEK | FI_DISCARD), 0);
		if (wait_cq(p, 0, &e, NULL, 1) == 1)
			break;
		assert_int_equal(fi_cq_readerr(p->cq[0], &(struct fi_cq_err_entry){ 0 }, 0), 1);
		assert_int_equal(wait_cq(p, 1, &e, NULL, 1), -FI_EAGAIN); /* ep 0 reads */
	}
	assert_ptr_equal(e.op_context, &cx);
	assert_int_equal(e.len, 20);
	assert_null(((rfi_ep *)p->ep[0])->ux); /* gone */
	assert_int_equal(((rfi_ep *)p->ep[0])->ux_bytes, 0);
	assert_int_equal(fi_tsend(p->ep[1], s[1], sizeof(s[1]), NULL, p->addr[0], 9, NULL), 0);
	assert_int_equal(fi_trecv(p->ep[0], r, sizeof(r), NULL, FI_ADDR_UNSPEC, 9, 0, &c), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_ptr_equal(e.op_context, &c);
	assert_int_equal(e.len, sizeof(r));
	assert_memory_equal(r, s[1], sizeof(r));
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100), -FI_EAGAIN); /* nothing for the discard */
}

/* Remote CQ data: with posted and unexpected receives, every send call; never on the next. */
static void test_ep_cq_data(void **st)
{
	pair *p = *st;
	uint8_t s[32], r[5][32];
	struct iovec iov = { s, 7 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .data = 0x5151 };
	struct fi_cq_tagged_entry e;
	int c[5];

	SKIP_WITHOUT_RAILS(st);
	m.addr = p->addr[0];
	fill(s, sizeof(s), 70);
	assert_int_equal(fi_trecv(p->ep[0], r[0], 32, NULL, FI_ADDR_UNSPEC, 5, 0, &c[0]), 0);
	assert_int_equal(fi_tsenddata(p->ep[1], s, 20, NULL, 0xfeedface12345678, p->addr[0], 5,
				      NULL), 0);
	assert_int_equal(fi_senddata(p->ep[1], s, 0, NULL, 0x77, p->addr[0], NULL), 0);
	assert_int_equal(fi_injectdata(p->ep[1], s, 9, 0x88, p->addr[0]), 0);
	assert_int_equal(fi_sendmsg(p->ep[1], &m, FI_REMOTE_CQ_DATA), 0);
	assert_int_equal(fi_send(p->ep[1], s, 11, NULL, p->addr[0], NULL), 0);
	assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
	assert_ptr_equal(e.op_context, &c[0]);
	assert_true(e.flags & FI_REMOTE_CQ_DATA);
	assert_int_equal(e.data, 0xfeedface12345678);
	assert_int_equal(e.len, 20);
	assert_memory_equal(r[0], s, 20);
	/* the rest came before their receives */
	for (int t = 0; t < 1000 && ((rfi_ep *)p->ep[0])->unexpected < 4; t++)
		assert_int_equal(wait_cq(p, 0, &e, NULL, 1), -FI_EAGAIN);
	for (int i = 1; i < 5; i++)
		assert_int_equal(fi_recv(p->ep[0], r[i], 32, NULL, FI_ADDR_UNSPEC, &c[i]), 0);
	{
		static const uint64_t data[] = { 0, 0x77, 0x88, 0x5151, 0 };
		static const size_t len[] = { 0, 0, 9, 7, 11 };

		for (int i = 1; i < 5; i++) {
			assert_int_equal(wait_cq(p, 0, &e, NULL, 100000), 1);
			assert_ptr_equal(e.op_context, &c[i]);
			assert_int_equal(e.len, len[i]);
			assert_int_equal(e.data, data[i]);
			assert_int_equal(!!(e.flags & FI_REMOTE_CQ_DATA), i < 4);
			assert_memory_equal(r[i], s, len[i]);
		}
	}
}

int main(void)
{
	struct timespec ts;
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_roundtrip),
		cmocka_unit_test(test_name_rejects),
		cmocka_unit_test(test_getinfo_hints),
		cmocka_unit_test(test_av),
		cmocka_unit_test(test_cq),
		cmocka_unit_test(test_cq_wait),
		cmocka_unit_test(test_eq_wait),
		cmocka_unit_test_setup_teardown(test_ep_tagged, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_msg_large_and_trunc, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_directed_peek_cancel, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_unexpected_cap, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_hostile_hello, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_second_link, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_restart_same_ports, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_unexpected_bounds, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_unexpected_100mb, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_sread, pair_open_fd, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_cntr, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_connect_next_rail, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_unreachable_peer, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_stat, pair_open, pair_close),
		cmocka_unit_test(test_getinfo_node_service),
		cmocka_unit_test(test_av_bad_args_partial),
		cmocka_unit_test_setup_teardown(test_ep_inject_flag_completes, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_peek_discard, pair_open, pair_close),
		cmocka_unit_test_setup_teardown(test_ep_cq_data, pair_open, pair_close),
	};

	/* the fake clock runs far ahead of the kernel's: arrival stamps never pull it along */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fake_now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (UINT64_C(1) << 50);
	fi_prov_ini();
	rfi_clock = fake_clock;
	rfi_k.keeper_ns = 0;  /* the test drives every pass itself */
	rfi_k.linger_ns = 0;
	/* the endpoints' snapshots for ri2n-stat go to a directory of the test's own */
	snprintf(g_run_dir, sizeof(g_run_dir), "/tmp/rfi-test.XXXXXX");
	if (!mkdtemp(g_run_dir))
		return 1;
	setenv("RI2N_RUN_DIR", g_run_dir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(g_run_dir); /* empty: every endpoint closed removed its file */
	return rc;
}
