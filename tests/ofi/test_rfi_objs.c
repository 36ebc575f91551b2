/*
 * test_rfi_objs.c - the provider's objects without endpoints: names,
 * getinfo, fabric, domain, the address vector, the completion queue and the
 * wait objects of CQs and EQs.
 */
#include "test_rfi.h"

/* ---- names ---- */

void test_name_roundtrip(void **st)
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

void test_name_rejects(void **st)
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
	bad[1] = 3; /* version */
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

/* Some rail IPv6: the second form, the same length; rails that do not fit are refused. */
void test_name_v6(void **st)
{
	rfi_name a = name2(), b;
	uint8_t w[RFI_NAME_LEN], bad[RFI_NAME_LEN];
	char s[160];

	(void)st;
	a.rail[1] = (rn_rail_addr){ .v6 = 1, .port = 4001, .prefix = 64 };
	assert_int_equal(inet_pton(AF_INET6, "2001:2:0:2::1", a.rail[1].ip6), 1);
	assert_true(rfi_name_fits(&a));
	rfi_name_write(&a, w);
	assert_int_equal(w[1], 2);
	assert_int_equal(rfi_name_read(&b, w, sizeof(w)), 0);
	assert_true(rfi_name_eq(&a, &b));
	assert_int_equal(b.rail[1].prefix, 64);
	assert_true(b.rail[1].v6 && !b.rail[0].v6);
	rfi_name_str(&b, s, sizeof(s));
	assert_string_equal(s, "ri2n://198.18.1.1:4000/24,[2001:2:0:2::1]:4001/64");
	memcpy(bad, w, sizeof(w));
	bad[4 + 8] = 5; /* the second rail's family */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[4 + 8 + 1] = 129; /* its prefix */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	memcpy(bad, w, sizeof(w));
	bad[2] = 4; /* rails past the end of the name */
	assert_int_equal(rfi_name_read(&b, bad, sizeof(bad)), -FI_EINVAL);
	/* two IPv6 rails and two IPv4 ones fit; a third IPv6 one does not */
	a.n = 4;
	a.rail[2] = a.rail[1];
	a.rail[2].ip6[15] = 2;
	a.rail[3] = a.rail[0];
	a.rail[3].ip = 0xc6120301;
	assert_true(rfi_name_fits(&a));
	rfi_name_write(&a, w);
	assert_int_equal(rfi_name_read(&b, w, sizeof(w)), 0);
	assert_true(rfi_name_eq(&a, &b));
	a.rail[3] = a.rail[1];
	a.rail[3].ip6[15] = 3;
	assert_false(rfi_name_fits(&a));
}

/* ---- getinfo ---- */

void test_getinfo_hints(void **st)
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

void test_av(void **st)
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

void test_cq(void **st)
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
void test_cq_wait(void **st)
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
void test_eq_wait(void **st)
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
