/*
 * test_hpass.c - the polling drivers' pass (src/host/rn_hpass.c) with fake
 * hooks that write down when they run: the receive with its turn budget,
 * the verdict re-read straight after it (only when a rail verdict is due
 * and the sockets hold more), the clock read after every receive that
 * brought something, the driver's timers after both receives and with
 * their time, then each live link (hello deadline, check, timers, serve,
 * settle), the reap and the after hook last.
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include "unit_net.h"

#include <stdio.h>
#include <string.h>

#include "rn_conn.h" /* a rail made suspect by hand */
#include "rn_hpass.h"

typedef struct tlink {
	rn_hconn h;
	int tag;        /* 1: an established link; 2: accepted, no hello */
	int busy;
} tlink;

/* The driver: its kit parts, the trace of hook calls and what the fake receive does. */
typedef struct driver {
	rn_htab tab;
	rn_hset io;
	rn_hmon mon;
	rn_hrxbuf rx;
	rn_hdisp disp;
	rn_hpoll_links lk;
	rn_hconns links;
	rn_hpass pass;
	uint64_t core_now;
	uint32_t rx_more;
	char trace[256];
	int nrecv;
	int got[4];         /* what each receive reads */
	uint32_t more[4];   /* what each receive leaves in the sockets */
	uint64_t until[4];  /* the arrival time each receive raises the floor to */
	uint64_t timers_at; /* the time the driver's timers saw */
	int reaped;
} driver;

static void put(driver *d, const char *s)
{
	strncat(d->trace, s, sizeof(d->trace) - strlen(d->trace) - 1);
}

static void put_link(driver *d, char what, rn_hconn *h)
{
	char b[4] = { what, (char)('0' + ((tlink *)h)->tag), ' ', 0 };

	put(d, b);
}

static int fake_recv(rn_hset *io, rn_hrxbuf *rx, int rounds, uint64_t *now,
		     rn_hsock_input_fn fn, void *arg, uint32_t *more)
{
	driver *d = (driver *)((uint8_t *)io - offsetof(driver, io));
	int k = d->nrecv++;

	/* the kit's sockets, buffer, dispatcher and budget */
	assert_ptr_equal(rx, &d->rx);
	assert_ptr_equal(arg, &d->disp);
	assert_true(fn == rn_hdisp_input);
	assert_ptr_equal(now, &d->core_now);
	assert_ptr_equal(more, &d->rx_more);
	assert_int_equal(rounds, RN_HPOLL_RX_ROUNDS);
	put(d, "R ");
	*more = d->more[k];
	if (d->until[k] > *now)
		*now = d->until[k];
	return d->got[k];
}

static uint64_t h_now(void *arg)
{
	driver *d = arg;

	put(d, "N ");
	return d->core_now;
}

static void h_timers(void *arg, uint64_t now)
{
	driver *d = arg;

	put(d, "T ");
	d->timers_at = now;
}

static int h_unbound(const void *v) { return ((const tlink *)v)->tag == 2; }

static void h_late(void *arg, rn_hconn *h, uint64_t now)
{
	(void)now;
	put_link(arg, 'U', h);
}

/* C: the core's timers are still due (the check comes before they run), c: not due */
static void h_check(void *arg, rn_hconn *h, uint64_t now)
{
	put_link(arg, rn_conn_expiry(h->conn) <= now ? 'C' : 'c', h);
}

static int h_busy(void *arg, rn_hconn *h)
{
	(void)arg;
	return ((tlink *)h)->busy;
}

static int h_serve(void *arg, rn_hconn *h, uint64_t now)
{
	(void)now;
	put_link(arg, 's', h);
	h->dirty = 0;
	return 1;
}

/* e: after the flush, which refreshed the cached expiry; E: before it */
static void h_settle(void *arg, rn_hconn *h, uint64_t now)
{
	(void)now;
	put_link(arg, h->expiry_ns == rn_conn_expiry(h->conn) ? 'e' : 'E', h);
}

/* A and the links reaped so far: the reap comes before */
static void h_after(void *arg, uint64_t now)
{
	driver *d = arg;
	char b[8];

	(void)now;
	snprintf(b, sizeof(b), "A%d", d->reaped);
	put(d, b);
}

static const rn_hpass_ops ops = {
	.now = h_now, .timers = h_timers, .unbound = h_unbound, .on_unbound_late = h_late,
	.check = h_check, .busy = h_busy, .serve = h_serve, .settle = h_settle,
	.after = h_after, .recv = fake_recv,
};

static void gone(void *arg, rn_hconn *h)
{
	((driver *)arg)->reaped++;
	free(h);
}

static driver *driver_new(void)
{
	driver *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	assert_int_equal(rn_htab_init(&d->tab, 4), 0);
	d->lk = (rn_hpoll_links){ .tab = &d->tab, .mon = &d->mon };
	d->links = (rn_hconns){ .tab = &d->tab, .io = &d->io, .lk = &d->lk, .on_reap = gone,
				.arg = d };
	d->pass = (rn_hpass){ .links = &d->links, .rx = &d->rx, .disp = &d->disp,
			      .core_now = &d->core_now, .rx_more = &d->rx_more, .ops = &ops };
	return d;
}

static void driver_del(driver *d)
{
	rn_hconn *h = d->links.head;

	for (; h; h = h->next)
		h->dead = 1;
	rn_hconns_reap(&d->links);
	rn_hmon_free(&d->mon);
	rn_htab_free(&d->tab);
	free(d);
}

/* A link on un_net's established client connection (its events still go to its side). */
static tlink *add_client(driver *d, un_net *n, uint64_t now)
{
	tlink *l = calloc(1, sizeof(*l));
	rn_conn *c = n->side[UN_CLIENT].c;

	assert_non_null(l);
	l->tag = 1;
	assert_int_equal(rn_hconns_add(&d->links, &l->h, c, now), 0);
	rn_conn_set_user(c, &n->side[UN_CLIENT]);
	n->side[UN_CLIENT].c = NULL; /* the link's now */
	return l;
}

/* A link whose connection is still in its handshake: an accepted peer's before its hello. */
static tlink *add_unbound(driver *d, un_net *n, uint64_t now)
{
	un_side *cl = &n->side[UN_CLIENT];
	tlink *l = calloc(1, sizeof(*l));
	rn_conn *c;

	assert_non_null(l);
	l->tag = 2;
	assert_int_equal(rn_conn_connect(&c, &cl->cfg, &cl->env, cl->rails, cl->nrails,
					 un_addr(n, UN_SERVER, 0), now), 0);
	assert_int_equal(rn_hconns_add(&d->links, &l->h, c, now), 0);
	rn_conn_set_user(c, cl); /* un_net's events go to its side */
	return l;
}

/* A driver with one established link, its core timers due at t and a rail verdict pending. */
typedef struct bed {
	un_net *n;
	driver *d;
	tlink *l;
	rn_conn *c;
	uint64_t t;
} bed;

static void bed_new(bed *b)
{
	b->n = un_new(1);
	b->t = un_handshake(b->n, UT_T0) + UT_MS;
	b->c = b->n->side[UN_CLIENT].c;
	b->d = driver_new();
	b->l = add_client(b->d, b->n, b->t);
	b->t = rn_conn_expiry(b->c);
	assert_true(b->t < UINT64_MAX - UT_S);
	b->l->h.expiry_ns = b->t;
	b->c->rail[0].suspect = 1;
}

static void bed_del(bed *b)
{
	b->c->rail[0].suspect = 0;
	driver_del(b->d);
	un_del(b->n);
}

/*
 * A rail verdict due and the first receive left data behind: the sockets
 * are read again before any timer, the clock after each receive, and the
 * driver's timers see the newest arrival; then the link's turn.
 */
static void test_verdict_reread_order(void **state)
{
	bed b;
	driver *d;
	uint64_t t;

	(void)state;
	bed_new(&b);
	d = b.d, t = b.t;
	d->got[0] = 3, d->more[0] = 1, d->until[0] = t + 10;
	d->got[1] = 2, d->more[1] = 0, d->until[1] = t + 20;
	assert_int_equal(rn_hpass_run(&d->pass, d, t), 3 + 2 + 1);
	assert_string_equal(d->trace, "R N R N T C1 s1 e1 A0");
	assert_true(d->timers_at == t + 20); /* never before the arrivals just read */
	assert_true(d->core_now == t + 20);
	assert_true(b.l->h.expiry_ns == rn_conn_expiry(b.c));
	bed_del(&b);
}

/* No re-read when the sockets are empty or no verdict is pending; no clock when nothing came. */
static void test_no_reread(void **state)
{
	bed b;
	driver *d;

	(void)state;
	bed_new(&b);
	d = b.d;
	d->got[0] = 1, d->more[0] = 0; /* everything read in the first turns */
	assert_int_equal(rn_hpass_run(&d->pass, d, b.t), 1 + 1);
	assert_string_equal(d->trace, "R N T C1 s1 e1 A0");
	b.c->rail[0].suspect = 0;

	/* data left, no verdict: no re-read; nothing read: no clock; the time never goes back */
	d->trace[0] = 0;
	d->nrecv = 0;
	d->got[0] = 0, d->more[0] = 1;
	b.l->h.expiry_ns = UINT64_MAX;
	assert_int_equal(rn_hpass_run(&d->pass, d, b.t - UT_MS), 0);
	assert_string_equal(d->trace, "R T c1 A0");
	assert_true(d->timers_at == b.t);
	bed_del(&b);
}

/*
 * Links: a busy one is served though not dirty; a dead one is skipped and
 * reaped before the after hook; an accepted link silent past the hello
 * deadline is reset once, then served.
 */
static void test_links(void **state)
{
	un_net *n = un_new(1);
	uint64_t t = un_handshake(n, UT_T0) + UT_MS;
	driver *d = driver_new();
	tlink *a = add_client(d, n, t), *u = add_unbound(d, n, t);

	(void)state;
	a->h.expiry_ns = u->h.expiry_ns = UINT64_MAX;
	u->h.dirty = 0;
	/* the deadline is not passed yet; a busy link is served */
	a->busy = 1;
	assert_int_equal(rn_hpass_run(&d->pass, d, t + RN_HPASS_UNBOUND_NS), 1);
	assert_string_equal(d->trace, "R T C2 C1 s1 e1 A0");
	/* past it: reset once, and served */
	a->busy = 0;
	a->h.expiry_ns = UINT64_MAX;
	d->trace[0] = 0;
	d->nrecv = 0;
	assert_int_equal(rn_hpass_run(&d->pass, d, t + RN_HPASS_UNBOUND_NS + 1), 1);
	assert_string_equal(d->trace, "R T U2 c2 s2 e2 C1 A0");
	assert_int_equal(rn_conn_state(u->h.conn), RN_ST_CLOSED);
	d->trace[0] = 0;
	d->nrecv = 0;
	a->h.expiry_ns = u->h.expiry_ns = UINT64_MAX;
	u->h.dead = 1;
	assert_int_equal(rn_hpass_run(&d->pass, d, t + RN_HPASS_UNBOUND_NS + 2), 0);
	assert_string_equal(d->trace, "R T C1 A1");
	assert_ptr_equal(d->links.head, &a->h);
	driver_del(d);
	un_del(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_reread_order),
		cmocka_unit_test(test_no_reread),
		cmocka_unit_test(test_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
