/*
 * test_hconn.c - the polling drivers' links (src/host/rn_hconn.h): a link
 * filed in the table and the list as it is added, filed again under its
 * connection's new id, its hooks for the dispatcher, freed once dead with
 * the driver's hook called last and the living ones left alone; and
 * connecting over the peer's rails in turn: a rail in none of our subnets
 * skipped, the first rail silent until the attempt times out, the next
 * one answering and the handshake completing there, no rail at all
 * refused; and the pass's steps: a rail verdict due asks for one more
 * receive only while the sockets hold data, a link's timers refile it and
 * mark it; and a rail gone or back told to every live link, and a rail
 * that gets its first address opened and offered (rn_hgrow).
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include <string.h>

#include "rn_conn.h" /* a rail made suspect by hand */
#include "rn_hconn.h"
#include "rn_hgrow.h"

/* A driver's link: the kit's part first, then the driver's own. */
typedef struct tlink {
	rn_hconn h;
	int tag;
} tlink;

/* The driver's side of the links: what its reap hook saw. */
typedef struct driver {
	rn_htab tab;
	rn_hset io;
	rn_hmon mon;
	rn_hpoll_links lk;
	rn_hconns links;
	int reaped[8];
	int nreaped;
	int conn_left; /* a reaped link still had its connection */
} driver;

static void gone(void *arg, rn_hconn *h)
{
	driver *d = arg;
	tlink *l = (tlink *)h;

	d->conn_left += h->conn != NULL;
	d->reaped[d->nreaped++] = l->tag;
	free(l);
}

static void driver_init(driver *d)
{
	memset(d, 0, sizeof(*d));
	assert_int_equal(rn_htab_init(&d->tab, 4), 0);
	d->lk = (rn_hpoll_links){ .tab = &d->tab, .mon = &d->mon };
	d->links = (rn_hconns){ .tab = &d->tab, .io = &d->io, .lk = &d->lk, .on_reap = gone,
				.arg = d };
}

static tlink *add(driver *d, un_net *n, int tag, uint64_t now)
{
	un_side *cl = &n->side[UN_CLIENT];
	tlink *l = calloc(1, sizeof(*l));
	rn_conn *c;

	assert_non_null(l);
	l->tag = tag;
	assert_int_equal(rn_conn_connect(&c, &cl->cfg, &cl->env, cl->rails, cl->nrails,
					 un_addr(n, UN_SERVER, 0), now), 0);
	assert_int_equal(rn_hconns_add(&d->links, &l->h, c, now), 0);
	return l;
}

/* A link on un_net's client connection (established), whose events still go to its side. */
static tlink *add_client(driver *d, un_net *n, uint64_t now)
{
	tlink *l = calloc(1, sizeof(*l));
	rn_conn *c = n->side[UN_CLIENT].c;

	assert_non_null(l);
	assert_int_equal(rn_hconns_add(&d->links, &l->h, c, now), 0);
	rn_conn_set_user(c, &n->side[UN_CLIENT]); /* un_net's events go to its side */
	return l;
}

/* Tags of the list from its head. */
static int list_tags(const driver *d, int *out)
{
	int n = 0;

	for (const rn_hconn *h = d->links.head; h; h = h->next) {
		assert_true(h->next == NULL || h->next->prev == h);
		out[n++] = ((const tlink *)h)->tag;
	}
	return n;
}

/* New, rekey, reap: the table and the list follow each link. */
static void test_life(void **state)
{
	un_net *n = un_new(1);
	driver d;
	tlink *a, *b, *c;
	uint64_t real, fake;
	int tags[8];

	(void)state;
	driver_init(&d);
	a = add(&d, n, 1, UT_T0);
	b = add(&d, n, 2, UT_T0 + UT_MS);
	c = add(&d, n, 3, UT_T0 + 2 * UT_MS);
	/* filed under their ids, each its connection's user, newest first */
	assert_int_equal(d.tab.n, 3);
	assert_true(b->h.id == rn_conn_id(b->h.conn));
	assert_ptr_equal(rn_htab_get(&d.tab, b->h.id), b);
	assert_ptr_equal(rn_conn_user(b->h.conn), b);
	assert_true(b->h.created_ns == UT_T0 + UT_MS);
	assert_true(b->h.expiry_ns == rn_conn_expiry(b->h.conn));
	assert_int_equal(list_tags(&d, tags), 3);
	assert_true(tags[0] == 3 && tags[1] == 2 && tags[2] == 1);

	/* the hooks the dispatcher and the sockets' errors take */
	assert_ptr_equal(rn_hconn_conn_of(b), b->h.conn);
	rn_hconn_mark(b);
	rn_hconn_due(b);
	assert_true(b->h.dirty == 1 && b->h.expiry_ns == 0);
	assert_true(a->h.dirty == 0 && a->h.expiry_ns != 0);

	/* the connection's id is not the one b is filed under: the entry follows it */
	real = b->h.id;
	fake = real ^ 0x77;
	assert_int_equal(rn_htab_rekey(&d.tab, real, fake, b), 0);
	b->h.id = fake;
	rn_hconn_rekey(&d.links, &b->h);
	assert_true(b->h.id == real);
	assert_ptr_equal(rn_htab_get(&d.tab, real), b);
	assert_null(rn_htab_get(&d.tab, fake));
	rn_hconn_rekey(&d.links, &b->h); /* the same id: nothing moves */
	assert_int_equal(d.tab.n, 3);

	/* nothing dead: nothing goes */
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 0);
	/* the middle one dies: it leaves the table and the list, its connection freed first */
	b->h.dead = 1;
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 1);
	assert_int_equal(d.reaped[0], 2);
	assert_int_equal(d.conn_left, 0);
	assert_null(rn_htab_get(&d.tab, real));
	assert_ptr_equal(rn_htab_get(&d.tab, a->h.id), a);
	assert_int_equal(d.tab.n, 2);
	assert_int_equal(list_tags(&d, tags), 2);
	assert_true(tags[0] == 3 && tags[1] == 1);
	/* the head and the tail die together */
	a->h.dead = c->h.dead = 1;
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 3);
	assert_null(d.links.head);
	assert_int_equal(d.tab.n, 0);
	assert_int_equal(d.conn_left, 0);
	rn_htab_free(&d.tab);
	un_del(n);
}

/* Datagrams from the client to the server's rail 0 are lost. */
static int rail0_silent(un_net *n, const un_rec *r, void *arg)
{
	(void)n;
	(void)arg;
	return r->from == UN_CLIENT && r->dst_rail == 0;
}

static rn_rail_addr peer_rail(un_net *n, int rail)
{
	rn_addr a = un_addr(n, UN_SERVER, rail);

	return (rn_rail_addr){ .ip = a.ip, .port = a.port, .prefix = 24 };
}

/* The first rail of ours never answers, the next does: the second attempt connects. */
static void test_dial_in_turn(void **state)
{
	un_net *n = un_new(2);
	un_side *cl = &n->side[UN_CLIENT];
	driver d;
	/* the first is in none of our subnets: skipped without an attempt */
	rn_rail_addr peer[3] = { { .ip = UT_IP(192, 0, 2, 9), .port = 9, .prefix = 24 },
				 peer_rail(n, 0), peer_rail(n, 1) };
	rn_hdial dial = { .io = &d.io, .cfg = &cl->cfg, .env = &cl->env, .peer = peer,
			  .npeer = 3 };
	tlink *l = calloc(1, sizeof(*l));
	rn_conn *c;
	uint64_t t;
	int next = 0;

	(void)state;
	assert_non_null(l);
	driver_init(&d);
	d.io.n = cl->nrails;
	for (int i = 0; i < cl->nrails; i++)
		d.io.s[i].addr = cl->rails[i];
	cl->cfg.connect_timeout_ns = UT_S; /* one attempt: a second */
	un_listen(n);
	n->filter = rail0_silent;
	n->now = UT_T0;

	assert_int_equal(rn_hconn_dial(&c, &dial, &next, UT_T0), 1);
	assert_int_equal(next, 2);
	assert_true(rn_conn_peer(c).ip == peer[1].ip && rn_conn_peer(c).port == peer[1].port);
	assert_int_equal(rn_hconns_add(&d.links, &l->h, c, UT_T0), 0);
	rn_conn_set_user(c, cl); /* un_net's events go to its side */
	cl->c = c;
	un_run(n, UT_T0 + 3 * UT_S);
	assert_int_not_equal(rn_conn_error(c), 0); /* no answer: the attempt gave up */
	assert_int_not_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
	cl->c = NULL;
	l->h.dead = 1;
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 1);

	/* the next attempt goes to the rail after it, which answers */
	t = n->now;
	assert_int_equal(rn_hconn_dial(&c, &dial, &next, t), 2);
	assert_int_equal(next, 3);
	assert_true(rn_conn_peer(c).ip == peer[2].ip);
	cl->c = c;
	for (uint64_t u = t; u < t + 10 * UT_MS && rn_conn_state(c) != RN_ST_ESTABLISHED;
	     u += 10 * UT_US)
		un_run(n, u);
	un_run(n, n->now + UT_MS); /* the server's COOKIE_ACK sent: it is up too */
	assert_int_equal(rn_conn_state(c), RN_ST_ESTABLISHED);
	assert_int_equal(rn_conn_state(n->side[UN_SERVER].c), RN_ST_ESTABLISHED);
	/* round again: the skipped rail is skipped, the first of ours comes next */
	assert_int_equal(rn_hconn_dial(&c, &dial, &next, t), 1);
	assert_int_equal(next, 5);
	rn_conn_del(c);

	/* none of the peer's rails is in our subnets: refused, the turn unchanged */
	dial.peer = peer;
	dial.npeer = 1;
	next = 0;
	assert_int_equal(rn_hconn_dial(&c, &dial, &next, t), RN_ERR_NOROUTE);
	assert_null(c);
	assert_int_equal(next, 0);
	rn_htab_free(&d.tab);
	un_del(n);
}

/* A due timer with a rail verdict pending reads the sockets first; the timer refiles the link. */
static void test_pass_steps(void **state)
{
	un_net *n = un_new(1);
	driver d;
	tlink *l;
	uint64_t t = un_handshake(n, UT_T0) + UT_MS, real;
	rn_conn *c = n->side[UN_CLIENT].c;

	(void)state;
	driver_init(&d);
	l = add_client(&d, n, t);
	l->h.expiry_ns = t;
	assert_int_equal(rn_hconns_verdict_due(&d.links, 1, t), 0); /* no verdict pending */
	assert_true(c->rail[0].rx_up);
	c->rail[0].suspect = 1;
	assert_int_equal(rn_hconns_verdict_due(&d.links, 1, t), 1);
	assert_int_equal(rn_hconns_verdict_due(&d.links, 0, t), 0); /* the sockets are empty */
	assert_int_equal(rn_hconns_verdict_due(&d.links, 1, t - 1), 0); /* not due yet */
	l->h.dead = 1;
	assert_int_equal(rn_hconns_verdict_due(&d.links, 1, t), 0); /* dead: no verdict */
	l->h.dead = 0;
	c->rail[0].suspect = 0;

	/* the timer: filed under the connection's id again, and dirty */
	real = l->h.id;
	assert_int_equal(rn_htab_rekey(&d.tab, real, real ^ 0x77, l), 0);
	l->h.id = real ^ 0x77;
	rn_hconn_timer(&d.links, &l->h, t);
	assert_true(l->h.id == real);
	assert_ptr_equal(rn_htab_get(&d.tab, real), l);
	assert_int_equal(l->h.dirty, 1);
	n->side[UN_CLIENT].c = NULL; /* the link's now */
	l->h.dead = 1;
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 1);
	rn_htab_free(&d.tab);
	un_del(n);
}

/* A rail gone and back (rn_hfollow's hook): every live link hears it and is dirty. */
static void test_rail_gone(void **state)
{
	un_net *n = un_new(2);
	driver d;
	tlink *a, *b;
	uint64_t t = un_handshake(n, UT_T0) + UT_MS;
	rn_conn *c = n->side[UN_CLIENT].c;
	rn_conn_stats st;

	(void)state;
	driver_init(&d);
	a = add_client(&d, n, t);
	b = add(&d, n, 2, t);
	b->h.dead = 1; /* on its way out: left alone */
	rn_conn_get_stats(c, &st);
	assert_int_equal(st.npaths, 2);
	assert_true(st.rail[0].tx_up && st.rail[1].tx_up);
	assert_int_equal(rn_hconns_rail(&d.links, 1, 0, RN_CAUSE_ADDR_GONE, t + UT_MS), 1);
	assert_true(a->h.dirty && !b->h.dirty);
	rn_conn_get_stats(c, &st);
	assert_true(st.rail[0].tx_up && !st.rail[1].tx_up);
	assert_int_equal(st.rail[1].last_cause, RN_CAUSE_ADDR_GONE);
	a->h.dirty = 0;
	assert_int_equal(rn_hconns_rail(&d.links, 1, 1, RN_CAUSE_ADDR_BACK, t + 2 * UT_MS), 1);
	assert_true(a->h.dirty);
	rn_conn_get_stats(c, &st);
	assert_true(st.rail[0].tx_up && st.rail[1].tx_up);
	n->side[UN_CLIENT].c = NULL; /* the link's now */
	a->h.dead = 1;
	rn_hconns_reap(&d.links);
	assert_int_equal(d.nreaped, 2);
	rn_htab_free(&d.tab);
	un_del(n);
}

/*
 * A rail with no address at start (rn_hgrow): no socket then; its first
 * address opens one as io's next, named by its rail, offered to the live
 * link and to the listener; an address the kernel will not bind yet is
 * tried again, and given up after RN_HGROW_TRIES tries.
 */
static void test_rail_new(void **state)
{
	un_net *n = un_new(2);
	driver d;
	tlink *a;
	uint64_t t = un_handshake(n, UT_T0) + UT_MS;
	rn_conn *c = n->side[UN_CLIENT].c;
	rn_rail_info rails[4] = {
		{ .name = "lo", .ifindex = 1, .ip = 0x7f000001, .prefix = 32, .mtu = 1500 },
		{ .name = "lo", .ifindex = 1, .ip = 0x7f000002, .prefix = 32, .mtu = 1500 },
		{ .name = "w", .ifindex = 99, .mtu = 1500 }, /* waiting */
		{ .name = "x", .ifindex = 98, .mtu = 1500 }, /* waiting */
	};
	rn_hpoll_rails r = { .rails = rails, .n = 4, .opts = { .dgram = 1500 } };
	rn_hrxbuf rx;
	rn_listener lis;
	rn_rail_addr addrs[2];
	rn_hgrow g = { .rails = rails, .open = &r, .links = &d.links, .lis = &lis };
	rn_hlink_ev ev = { .type = RN_HLINK_ADDR_ADD, .ifindex = 99, .ip = 0x7f000003, .prefix = 0 };
	char err[128];

	(void)state;
	driver_init(&d);
	rn_htab_free(&d.tab); /* rn_hpoll_open makes it */
	assert_int_equal(rn_hpoll_open(&d.io, &rx, &d.tab, &r, err, sizeof(err)), 0);
	assert_int_equal(d.io.n, 2);
	assert_int_equal(rn_hpoll_sock_of(&d.io, 2), -1);
	for (int i = 0; i < 2; i++)
		addrs[i] = d.io.s[i].addr;
	assert_int_equal(rn_listener_init(&lis, &n->side[UN_SERVER].cfg, &n->side[UN_SERVER].env,
					  addrs, 2), 0);
	a = add_client(&d, n, t);
	/* another interface's address, and a removal: nothing */
	ev.ifindex = 5;
	rn_hgrow_event(&g, &ev);
	ev.ifindex = 99;
	ev.type = RN_HLINK_ADDR_DEL;
	rn_hgrow_event(&g, &ev);
	assert_int_equal(g.pending, 0);
	ev.type = RN_HLINK_ADDR_ADD;
	rn_hgrow_event(&g, &ev);
	assert_int_equal(g.pending, 1u << 2);
	assert_int_equal(rails[2].ip, 0x7f000003);
	assert_int_equal(rails[2].prefix, 32);
	rn_hgrow_run(&g, t + UT_MS);
	assert_int_equal(g.pending, 0);
	assert_int_equal(d.io.n, 3);
	assert_int_equal(rn_hpoll_sock_of(&d.io, 2), 2);
	assert_int_equal(d.io.s[2].rail, 2);
	assert_int_equal(d.io.s[2].addr.ip, 0x7f000003);
	assert_true(d.io.s[2].addr.port != 0);
	assert_true(a->h.dirty);
	assert_int_equal(c->nlocal, 3); /* the link's connection has it (RAILS to its peer) */
	assert_int_equal(lis.nrails, 3);
	assert_int_equal(rn_hpoll_rail_add(&d.io, &r, 2), -EEXIST);
	/* an address not bindable (not on this host): tried again, then given up */
	ev.ifindex = 98;
	ev.ip = 0xc0000263; /* 192.0.2.99: on no interface here */
	rn_hgrow_event(&g, &ev);
	assert_int_equal(g.pending, 1u << 3);
	rn_hgrow_run(&g, t + 2 * UT_MS);
	assert_int_equal(g.pending, 1u << 3); /* EADDRNOTAVAIL: again later */
	rn_hgrow_run(&g, t + 2 * UT_MS + 1); /* too soon: no try */
	assert_int_equal(g.tries[3], 1);
	for (int i = 1; i < RN_HGROW_TRIES + 2 && g.pending; i++)
		rn_hgrow_run(&g, t + 3 * UT_MS + (uint64_t)i * RN_HGROW_AGAIN_NS);
	assert_int_equal(g.pending, 0);
	assert_int_equal(g.tries[3], RN_HGROW_TRIES);
	assert_int_equal(d.io.n, 3);
	n->side[UN_CLIENT].c = NULL; /* the link's now */
	a->h.dead = 1;
	rn_hconns_reap(&d.links);
	rn_listener_wipe(&lis);
	rn_hpoll_close(&d.io, &rx, &d.tab);
	un_del(n);
}

/* The driver's rn_hfollow_fn in test_rail_moved: the links hear it. */
static int moved_links_heard(void *arg, int rail, int usable, rn_cause cause)
{
	driver *d = arg;

	return rn_hconns_rail(&d->links, rail, usable, cause, UT_T0);
}

/*
 * A rail whose address went gets another on its interface, as the kernel
 * tells rn_hfollow: rn_hgrow hears of the move, and at the next pass the
 * rail's socket is bound there, at the same index with the same port; the
 * link's connection and the listener take the new address, and the rail
 * counts as addressed again.  Another rail's address is never taken.
 */
static void test_rail_moved(void **state)
{
	un_net *n = un_new(2);
	driver d;
	tlink *a;
	uint64_t t = un_handshake(n, UT_T0) + UT_MS;
	rn_conn *c = n->side[UN_CLIENT].c;
	rn_rail_info rails[2] = {
		{ .name = "lo", .ifindex = 1, .ip = 0x7f000001, .prefix = 8, .mtu = 1500 },
		{ .name = "lo", .ifindex = 1, .ip = 0x7f000002, .prefix = 8, .mtu = 1500 },
	};
	rn_hpoll_rails r = { .rails = rails, .n = 2, .opts = { .dgram = 1500 } };
	rn_hrxbuf rx;
	rn_listener lis;
	rn_rail_addr addrs[2];
	rn_hfollow f;
	rn_hgrow g = { .rails = rails, .open = &r, .links = &d.links, .lis = &lis, .follow = &f };
	rn_hlink_ev ev = { .type = RN_HLINK_ADDR_ADD, .ifindex = 1, .ip = 0x7f000009, .prefix = 8 };
	uint16_t port;
	char err[128];

	(void)state;
	driver_init(&d);
	rn_htab_free(&d.tab); /* rn_hpoll_open makes it */
	assert_int_equal(rn_hpoll_open(&d.io, &rx, &d.tab, &r, err, sizeof(err)), 0);
	rn_hfollow_init(&f, rails, 2, moved_links_heard, &d);
	f.moved = rn_hgrow_moved;
	f.moved_arg = &g;
	for (int i = 0; i < 2; i++)
		addrs[i] = d.io.s[i].addr;
	port = addrs[1].port;
	assert_int_equal(rn_listener_init(&lis, &n->side[UN_SERVER].cfg, &n->side[UN_SERVER].env,
					  addrs, 2), 0);
	a = add_client(&d, n, t);
	/* an address while the rail still has its own: nothing */
	rn_hfollow_apply(&f, &ev);
	assert_int_equal(g.moving, 0);
	/* rail 1's address goes: loopback's other address is rail 0's, not for it */
	ev.type = RN_HLINK_ADDR_DEL;
	ev.ip = 0x7f000002;
	rn_hfollow_apply(&f, &ev);
	assert_int_equal(f.no_addr[1], 1);
	assert_int_equal(g.moving, 0);
	/* rail 0's address announced again: still not for rail 1 */
	ev.type = RN_HLINK_ADDR_ADD;
	ev.ip = 0x7f000001;
	rn_hfollow_apply(&f, &ev);
	assert_int_equal(g.moving, 0);
	/* 127.0.0.9 came */
	ev.ip = 0x7f000009;
	rn_hfollow_apply(&f, &ev);
	assert_int_equal(g.moving, 1u << 1);
	rn_hgrow_run(&g, t + UT_MS);
	assert_int_equal(g.moving, 0);
	assert_int_equal(d.io.n, 2);
	assert_int_equal(rn_hpoll_sock_of(&d.io, 1), 1);
	assert_int_equal(d.io.s[1].addr.ip, 0x7f000009);
	assert_int_equal(d.io.s[1].addr.port, port);
	assert_int_equal(rails[1].ip, 0x7f000009);
	assert_int_equal(f.no_addr[1], 0);
	assert_true(a->h.dirty);
	assert_int_equal(c->local[1].ip, 0x7f000009); /* the link's connection tells its peer */
	assert_int_equal(lis.rails[1].ip, 0x7f000009);
	n->side[UN_CLIENT].c = NULL; /* the link's now */
	a->h.dead = 1;
	rn_hconns_reap(&d.links);
	rn_listener_wipe(&lis);
	rn_hpoll_close(&d.io, &rx, &d.tab);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_life),
		cmocka_unit_test(test_dial_in_turn),
		cmocka_unit_test(test_pass_steps),
		cmocka_unit_test(test_rail_gone),
		cmocka_unit_test(test_rail_new),
		cmocka_unit_test(test_rail_moved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
