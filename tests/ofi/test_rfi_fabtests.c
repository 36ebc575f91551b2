/*
 * test_rfi_fabtests.c - what fabtests asks of the provider: getinfo with
 * node and service, bad AV arguments, FI_INJECT, FI_PEEK | FI_DISCARD,
 * remote CQ data.
 */
#include "test_rfi.h"

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
void test_getinfo_node_service(void **st)
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
void test_av_bad_args_partial(void **st)
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
void test_ep_inject_flag_completes(void **st)
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
void test_ep_peek_discard(void **st)
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
void test_ep_cq_data(void **st)
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
