/*
 * test_rfi.h - what the provider's unit tests share (defined in test_rfi.c):
 * the fake clock, a fabric with its domain and AV, a pair of endpoints and
 * the helpers that run them; and the tests, by file, for main.
 */
#ifndef TEST_RFI_H
#define TEST_RFI_H

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

/* The provider's clock (rfi_clock), ns: the tests move it. */
extern uint64_t fake_now;
/* The directory the endpoints' snapshots for ri2n-stat go to (RI2N_RUN_DIR). */
extern char g_run_dir[64];

typedef struct objs {
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
} objs;

typedef struct pair {
	objs o;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	fi_addr_t addr[2];
	struct fi_info *fi;
} pair;

#define SKIP_WITHOUT_RAILS(st) do { if (!*(st)) skip(); } while (0)

/* A name of two rails, 198.18.1.1:4000 and 198.18.2.1:4001. */
rfi_name name2(void);
/* Opens / closes a fabric, its domain and an AV (FI_AV_MAP). */
void objs_open(objs *o);
void objs_close(objs *o);
/* cmocka setup / teardown: two endpoints on one AV (*st NULL without rails). */
int pair_open(void **st);
int pair_close(void **st);
/* pair_open with FI_WAIT_FD CQs. */
int pair_open_fd(void **st);
/* Runs the other endpoint until cq i has an entry (or an error); n as fi_cq_readfrom. */
ssize_t wait_cq(pair *p, int i, struct fi_cq_tagged_entry *e, fi_addr_t *src, int turns);
/* A message's bytes: the test kit's pattern. */
void fill(uint8_t *b, size_t n, unsigned seed);
/* One pass of ep under its domain's lock. */
void pass(rfi_ep *ep);
/* A third endpoint on the pair's domain and AV, with a CQ of its own; and its close. */
void third_open(pair *p, struct fid_ep **ep, struct fid_cq **cq);
void third_close(struct fid_ep *ep, struct fid_cq *cq);
/* n turns of dt virtual ns, every endpoint of eps run each turn. */
void run_all(struct fid_ep **eps, int n_eps, int turns, uint64_t dt);
/* cq's next completion within turns of every endpoint running; n as fi_cq_readfrom. */
ssize_t wait_all(struct fid_cq *cq, struct fid_ep **eps, int n_eps,
		 struct fi_cq_tagged_entry *e, fi_addr_t *src, int turns);

/* test_rfi_objs.c */
void test_name_roundtrip(void **st);
void test_name_rejects(void **st);
void test_name_v6(void **st);
void test_getinfo_hints(void **st);
void test_av(void **st);
void test_cq(void **st);
void test_cq_wait(void **st);
void test_eq_wait(void **st);
/* test_rfi_ep.c */
void test_ep_tagged(void **st);
void test_ep_msg_large_and_trunc(void **st);
void test_ep_directed_peek_cancel(void **st);
void test_ep_unexpected_cap(void **st);
void test_ep_sread(void **st);
void test_ep_cntr(void **st);
void test_ep_connect_next_rail(void **st);
void test_ep_unreachable_peer(void **st);
/* test_rfi_hello.c */
void test_ep_hostile_hello(void **st);
void test_ep_second_link(void **st);
void test_ep_restart_same_ports(void **st);
void test_ep_unexpected_bounds(void **st);
void test_ep_unexpected_100mb(void **st);
void test_ep_stat(void **st);
/* test_rfi_fabtests.c */
void test_getinfo_node_service(void **st);
void test_av_bad_args_partial(void **st);
void test_ep_inject_flag_completes(void **st);
void test_ep_peek_discard(void **st);
void test_ep_cq_data(void **st);

#endif
