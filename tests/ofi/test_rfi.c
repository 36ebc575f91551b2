/*
 * test_rfi.c - the libfabric provider's objects, driven directly: names,
 * getinfo, the address vector, the completion queue and, where RI2N_RAILS
 * names rails (tests/ofi/test_rfi_netns.sh), endpoints talking to each
 * other in one process.  Time is a fake clock the test moves (rfi_clock):
 * connect attempts and the connect timeout run in virtual seconds.
 *
 * This file holds what the tests share (test_rfi.h) and main; the tests,
 * by group: test_rfi_objs.c (names, getinfo, AV, CQ, wait objects),
 * test_rfi_ep.c (two endpoints), test_rfi_hello.c (whose messages, the
 * ri2n-stat snapshot), test_rfi_fabtests.c (what fabtests asks).
 */
#include "test_rfi.h"

uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

rfi_name name2(void)
{
	rfi_name nm = { .n = 2 };

	nm.rail[0] = (rn_rail_addr){ .ip = 0xc6120101, .port = 4000, .prefix = 24 }; /* 198.18.1.1 */
	nm.rail[1] = (rn_rail_addr){ .ip = 0xc6120201, .port = 4001, .prefix = 24 };
	return nm;
}

void objs_open(objs *o)
{
	struct fi_fabric_attr fa = { .name = (char *)RFI_FABRIC_NAME };
	struct fi_av_attr aa = { .type = FI_AV_MAP };

	assert_int_equal(rfi_prov.fabric(&fa, &o->fab, NULL), 0);
	o->fab->api_version = FI_VERSION(1, 17);
	assert_int_equal(fi_domain(o->fab, NULL, &o->dom, NULL), 0);
	assert_int_equal(fi_av_open(o->dom, &aa, &o->av, NULL), 0);
}

void objs_close(objs *o)
{
	assert_int_equal(fi_close(&o->av->fid), 0);
	assert_int_equal(fi_close(&o->dom->fid), 0);
	assert_int_equal(fi_close(&o->fab->fid), 0);
}

static enum fi_wait_obj g_pair_wait = FI_WAIT_NONE; /* the pair's CQs' wait object */

int pair_open(void **st)
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

int pair_close(void **st)
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

/* Runs both endpoints, 20 virtual us a turn, until cq has an entry (or an error). */
ssize_t wait_cq(pair *p, int i, struct fi_cq_tagged_entry *e, fi_addr_t *src, int turns)
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
void fill(uint8_t *b, size_t n, unsigned seed)
{
	kit_pattern_fill(b, seed, 0, n);
}

void pass(rfi_ep *ep)
{
	pthread_mutex_lock(&ep->dom->lock);
	rfi_ep_pass(ep);
	pthread_mutex_unlock(&ep->dom->lock);
}

/* A third endpoint on the pair's domain and AV, with a CQ of its own. */
void third_open(pair *p, struct fid_ep **ep, struct fid_cq **cq)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };

	assert_int_equal(fi_endpoint(p->o.dom, p->fi, ep, NULL), 0);
	assert_int_equal(fi_cq_open(p->o.dom, &ca, cq, NULL), 0);
	assert_int_equal(fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV), 0);
	assert_int_equal(fi_ep_bind(*ep, &p->o.av->fid, 0), 0);
	assert_int_equal(fi_enable(*ep), 0);
}

void third_close(struct fid_ep *ep, struct fid_cq *cq)
{
	assert_int_equal(fi_close(&ep->fid), 0);
	assert_int_equal(fi_close(&cq->fid), 0);
}

/* n turns of dt virtual ns, every endpoint of eps run each turn. */
void run_all(struct fid_ep **eps, int n_eps, int turns, uint64_t dt)
{
	for (int t = 0; t < turns; t++) {
		fake_now += dt;
		for (int i = 0; i < n_eps; i++)
			pass((rfi_ep *)eps[i]);
	}
}

/* cq's next completion within turns of every endpoint running; n as fi_cq_readfrom. */
ssize_t wait_all(struct fid_cq *cq, struct fid_ep **eps, int n_eps,
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

int pair_open_fd(void **st)
{
	int rc;

	g_pair_wait = FI_WAIT_FD;
	rc = pair_open(st);
	g_pair_wait = FI_WAIT_NONE;
	return rc;
}

char g_run_dir[64];

int main(void)
{
	struct timespec ts;
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_roundtrip),
		cmocka_unit_test(test_name_rejects),
		cmocka_unit_test(test_name_v6),
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
