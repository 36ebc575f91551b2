/*
 * test_hsock.c - the host kit's rail sockets: the arrival-clock clamp with
 * literal times, GSO runs built from a queue, GRO runs split back into
 * datagrams, a batch sent and received over loopback UDP (every byte
 * checked), a short queue taken out to be sent after its lock (in order,
 * the set's buffers reused meanwhile), and kernel errors: a port unreachable about one destination is
 * reported for that destination and never fails a send to another, and no
 * error-queue entry is left to keep a poller awake (issue 14, finding 2).
 */
#define _GNU_SOURCE
#include "unit_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_hsock.h"
#include "rn_rails.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define LO 0x7f000001u

static void test_clock_clamp(void **state)
{
	uint64_t floor = UT_T0 + 100;

	(void)state;
	/* no stamp: the read's time */
	assert_true(rn_hclock_clamp(&floor, 0, UT_T0 + 200) == UT_T0 + 200);
	assert_true(floor == UT_T0 + 200);
	/* a stamp between the floor and the read: as stamped */
	floor = UT_T0 + 100;
	assert_true(rn_hclock_clamp(&floor, UT_T0 + 150, UT_T0 + 200) == UT_T0 + 150);
	assert_true(floor == UT_T0 + 150);
	/* older than what the core already saw: never backwards */
	assert_true(rn_hclock_clamp(&floor, UT_T0 + 120, UT_T0 + 200) == UT_T0 + 150);
	assert_true(floor == UT_T0 + 150);
	/* ahead of the read (clocks stepped): never ahead */
	assert_true(rn_hclock_clamp(&floor, UT_T0 + 300, UT_T0 + 250) == UT_T0 + 250);
	assert_true(floor == UT_T0 + 250);
}

/* A socket with a queue of `n` datagrams (no descriptor) for build_msgs. */
static rn_hsock *queue_of(const uint16_t *lens, const uint16_t *ports, int n)
{
	static uint8_t buf[RN_HTXQ][1500];
	rn_hsock *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->fd = -1;
	for (int i = 0; i < n; i++) {
		s->bufs[i] = buf[i];
		s->q[i] = (rn_htx){ .to.v4 = { .sin_family = AF_INET, .sin_port = htons(ports[i]),
					       .sin_addr.s_addr = htonl(LO) }, .len = lens[i] };
	}
	s->qn = n;
	return s;
}

static void test_gso_runs(void **state)
{
	struct mmsghdr msgs[RN_HTXQ];
	struct iovec iov[RN_HTXQ];
	uint8_t ctl[RN_HTXQ * CMSG_SPACE(sizeof(uint16_t))];
	int counts[RN_HTXQ], nm;
	uint16_t lens[RN_HTXQ], ports[RN_HTXQ];
	rn_hsock *s;

	(void)state;
	/* equal sizes to one address, a shorter one ends the run */
	uint16_t l1[] = { 1000, 1000, 1000, 500, 1000 }, p1[] = { 9, 9, 9, 9, 9 };
	s = queue_of(l1, p1, 5);
	nm = rn_hsock_build_msgs(s, 1, msgs, iov, ctl, counts);
	assert_int_equal(nm, 2);
	assert_int_equal(counts[0], 4);
	assert_int_equal(counts[1], 1);
	assert_int_equal(msgs[0].msg_hdr.msg_iovlen, 4);
	{
		struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[0].msg_hdr);

		assert_non_null(c);
		assert_int_equal(c->cmsg_type, UDP_SEGMENT);
		assert_int_equal(*(uint16_t *)CMSG_DATA(c), 1000);
	}
	assert_int_equal(msgs[1].msg_hdr.msg_controllen, 0); /* a lone datagram: plain */
	/* without GSO: one message per datagram */
	assert_int_equal(rn_hsock_build_msgs(s, 0, msgs, iov, ctl, counts), 5);
	free(s);
	/* another address, or a larger datagram, starts a new run */
	uint16_t l2[] = { 800, 800, 800, 900, 900 }, p2[] = { 9, 9, 10, 10, 10 };
	s = queue_of(l2, p2, 5);
	nm = rn_hsock_build_msgs(s, 1, msgs, iov, ctl, counts);
	assert_int_equal(nm, 3);
	assert_int_equal(counts[0], 2);
	assert_int_equal(counts[1], 1);
	assert_int_equal(counts[2], 2);
	free(s);
	/* a run stays within 65000 bytes: 46 x 1400 = 64400 */
	for (int i = 0; i < 50; i++) {
		lens[i] = 1400;
		ports[i] = 9;
	}
	s = queue_of(lens, ports, 50);
	nm = rn_hsock_build_msgs(s, 1, msgs, iov, ctl, counts);
	assert_int_equal(nm, 2);
	assert_int_equal(counts[0], 46);
	assert_int_equal(counts[1], 4);
	free(s);
	/* and within 64 datagrams */
	for (int i = 0; i < RN_HTXQ; i++) {
		lens[i] = 100;
		ports[i] = 9;
	}
	s = queue_of(lens, ports, RN_HTXQ);
	assert_int_equal(rn_hsock_build_msgs(s, 1, msgs, iov, ctl, counts), 1);
	assert_int_equal(counts[0], RN_HTXQ);
	free(s);
}

/* A hand-made batch: one GRO run of 3500 bytes in 1000-byte segments, then a plain datagram. */
static void test_gro_split(void **state)
{
	static rn_hrx b;
	static uint8_t run[3500], one[77];
	rn_hdgram d;
	size_t lens[8];
	int n = 0;

	(void)state;
	memset(&b, 0, sizeof(b));
	for (size_t i = 0; i < sizeof(run); i++)
		run[i] = (uint8_t)(i / 1000 + 1); /* segment k holds byte k+1 */
	memset(one, 0x55, sizeof(one));
	b.iov[0] = (struct iovec){ run, sizeof(run) };
	b.iov[1] = (struct iovec){ one, sizeof(one) };
	for (int k = 0; k < 2; k++) {
		b.from[k].v4 = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(5000 + k),
						     .sin_addr.s_addr = htonl(LO) };
		b.msgs[k].msg_hdr.msg_iov = &b.iov[k];
		b.msgs[k].msg_hdr.msg_iovlen = 1;
		b.msgs[k].msg_len = (unsigned)b.iov[k].iov_len;
	}
	{
		struct msghdr *h = &b.msgs[0].msg_hdr;
		struct cmsghdr *c;
		int seg = 1000;

		h->msg_control = b.ctl[0];
		h->msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(h);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_GRO;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
	b.at[0] = UT_T0 + 7;
	b.n = 2;
	while (rn_hrx_next(&b, &d)) {
		assert_true(n < 8);
		lens[n] = d.len;
		if (n < 4) {
			assert_int_equal(d.d[0], n + 1);
			assert_int_equal(d.d[d.len - 1], n + 1);
			assert_int_equal(d.from.port, 5000);
			assert_true(d.at == UT_T0 + 7);
		} else {
			assert_int_equal(d.d[0], 0x55);
			assert_int_equal(d.from.port, 5001);
		}
		n++;
	}
	assert_int_equal(n, 5);
	assert_int_equal(lens[0], 1000);
	assert_int_equal(lens[1], 1000);
	assert_int_equal(lens[2], 1000);
	assert_int_equal(lens[3], 500);
	assert_int_equal(lens[4], 77);
}

/* ---- loopback ---- */

typedef struct seen {
	int dgrams, bad, send_errors, errors, refused_x;
	uint64_t last_at, err_owner;
	uint16_t x_port;
	size_t bytes;
} seen;

static void on_input(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t at)
{
	seen *s = arg;

	(void)idx;
	(void)from;
	/* datagram k: k's low byte everywhere, 1200 bytes but the last of a run */
	for (size_t i = 1; i < len; i++)
		if (d[i] != d[0])
			s->bad++;
	if (at < s->last_at)
		s->bad++; /* never backwards */
	s->last_at = at;
	s->dgrams++;
	s->bytes += len;
}

static void on_send_error(void *arg, int idx, uint64_t owner, int err)
{
	seen *s = arg;

	(void)idx;
	(void)err;
	s->send_errors++;
	s->err_owner = owner;
}

static void on_error(void *arg, int idx, const rn_hsock_err *e)
{
	seen *s = arg;

	(void)idx;
	s->errors++;
	if (e->icmp && e->type == 3 && e->code == 3 && e->dest.port == s->x_port &&
	    e->dest.ip == LO)
		s->refused_x++;
}

static void set_open(rn_hset *h, seen *sn, int gro)
{
	rn_hsock_opts o = { .dgram = 1500, .gro = gro, .rx_ts = 1, .recverr = 1 };

	assert_int_equal(rn_hset_init(h, 1500, 0), 0);
	assert_int_equal(rn_hsock_open(&h->s[0], LO, 0, 8, &o), 0);
	h->n = 1;
	h->ops = (rn_hsock_ops){ .on_send_error = on_send_error, .on_error = on_error };
	h->arg = sn;
}

static void queue_dgram(rn_hset *h, uint16_t port, size_t len, uint8_t fill, uint64_t owner)
{
	memset(rn_hset_spare(h), fill, len);
	assert_true(rn_hset_queue(h, 0, (rn_addr){ .ip = LO, .port = port }, len, owner) >= 0);
}

static void test_loopback_batch(void **state)
{
	rn_hset tx, rx;
	rn_hrxbuf rb;
	seen st = { 0 }, sr = { 0 };
	uint64_t floor = 0;
	uint32_t more;
	int total = 0;

	(void)state;
	set_open(&tx, &st, 0);
	set_open(&rx, &sr, 1);
	tx.gso = rn_hsock_probe_gso(tx.s[0].fd); /* runs if the kernel has GSO */
	assert_int_equal(rn_hrxbuf_init(&rb, RN_HGRO_BUF, 8), 0);
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < 40; k++)
			queue_dgram(&tx, rx.s[0].addr.port, k == 39 ? 300 : 1200,
				    (uint8_t)(round * 40 + k), 1);
		assert_int_equal(rn_hset_flush_one(&tx, 0), 0);
		assert_int_equal(tx.s[0].qn, 0);
	}
	for (int tries = 0; tries < 200 && total < 160; tries++) {
		struct pollfd pf = { rx.s[0].fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		total += rn_hset_recv(&rx, &rb, 1, 1, 16, &floor, on_input, &sr, &more);
	}
	assert_int_equal(total, 160);
	assert_int_equal(sr.dgrams, 160);
	assert_int_equal(sr.bad, 0);
	assert_int_equal(sr.bytes, 4 * (39 * 1200 + 300));
	assert_true(floor == sr.last_at);
	assert_int_equal(st.send_errors, 0);
	rn_hrxbuf_free(&rb);
	rn_hset_free(&tx);
	rn_hset_free(&rx);
}

/* A port nobody listens on (bound, then closed). */
static uint16_t dead_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(LO) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Datagrams received on rx (up to want, for up to 2 s); their fills in order into fills. */
typedef struct order {
	seen s;
	uint8_t fills[16];
	int n;
} order;

static void on_ordered(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len, uint64_t at)
{
	order *o = arg;

	on_input(&o->s, idx, from, d, len, at);
	if (o->n < (int)sizeof(o->fills))
		o->fills[o->n++] = d[0];
}

static int recv_some(rn_hset *rx, rn_hrxbuf *rb, order *o, int want)
{
	uint64_t floor = 0;
	uint32_t more;

	for (int tries = 0; tries < 200 && o->n < want; tries++) {
		struct pollfd pf = { rx->s[0].fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		rn_hset_recv(rx, rb, 1, 1, 16, &floor, on_ordered, o, &more);
	}
	return o->n;
}

/*
 * A short queue taken out of the set (rn_hset_take) leaves it empty and
 * counted, and goes out in its order from the copy, every byte intact, the
 * queue's buffers reused meanwhile; a queue too long, or a blocked
 * socket's, stays where it is.
 */
static void test_take_send(void **state)
{
	rn_hset tx, rx;
	rn_hrxbuf rb;
	seen st = { 0 };
	order o = { 0 };
	rn_htake *t = malloc(sizeof(*t));
	uint16_t to;

	(void)state;
	assert_non_null(t);
	set_open(&tx, &st, 0);
	set_open(&rx, &o.s, 0);
	rx.arg = &o;
	to = rx.s[0].addr.port;
	assert_int_equal(rn_hrxbuf_init(&rb, RN_HGRO_BUF, 8), 0);
	for (int k = 0; k < 3; k++)
		queue_dgram(&tx, to, k == 2 ? 100 : 1400, (uint8_t)(10 + k), 1);
	assert_int_equal(rn_hset_take(&tx, 0, t), 1);
	assert_int_equal(tx.s[0].qn, 0);
	assert_int_equal(tx.s[0].tx_dgrams, 3);
	/* the queue's buffers are free again: what is queued now leaves the copy alone */
	for (int k = 0; k < 3; k++)
		queue_dgram(&tx, to, 1400, 0xee, 1);
	assert_int_equal(rn_htake_send(t), 0);
	assert_int_equal(recv_some(&rx, &rb, &o, 3), 3);
	assert_int_equal(o.fills[0], 10);
	assert_int_equal(o.fills[1], 11);
	assert_int_equal(o.fills[2], 12);
	assert_int_equal(o.s.bytes, 2 * 1400 + 100);
	assert_int_equal(o.s.bad, 0);

	/* too many datagrams (bytes: 8 of this set's 1500 never reach the limit), a blocked socket */
	for (int k = 3; k < RN_HTAKE_MAX + 1; k++)
		queue_dgram(&tx, to, 100, 0xee, 1);
	assert_int_equal(rn_hset_take(&tx, 0, t), 0);
	assert_int_equal(tx.s[0].qn, RN_HTAKE_MAX + 1);
	assert_int_equal(rn_hset_flush_one(&tx, 0), 0);
	queue_dgram(&tx, to, 100, 0xee, 1);
	tx.s[0].blocked = 1;
	assert_int_equal(rn_hset_take(&tx, 0, t), 0);
	assert_int_equal(tx.s[0].qn, 1);
	assert_int_equal(rn_hset_flush_one(&tx, 0), 0);

	/* a copy whose socket refuses it says why */
	queue_dgram(&tx, dead_port(), 100, 0x20, 1);
	assert_int_equal(rn_hset_take(&tx, 0, t), 1);
	t->fd = -1;
	assert_int_equal(rn_htake_send(t), EBADF);
	free(t);
	rn_hrxbuf_free(&rb);
	rn_hset_free(&tx);
	rn_hset_free(&rx);
}

/* Waits until the socket reports an error (the ICMP came back). */
static int wait_err(int fd)
{
	for (int i = 0; i < 200; i++) {
		struct pollfd pf = { fd, 0, 0 };

		if (poll(&pf, 1, 5) > 0 && (pf.revents & POLLERR))
			return 1;
	}
	return 0;
}

static int pollerr_now(int fd)
{
	struct pollfd pf = { fd, POLLIN, 0 };

	return poll(&pf, 1, 0) > 0 && (pf.revents & POLLERR);
}

/*
 * Peer X is gone (port unreachable), peer Y is healthy; both are reached
 * through one socket.  The error about X surfaces in the next send, which
 * is Y's: it must be reported for X, and Y's datagram must still go out.
 */
static void test_error_attributed(void **state)
{
	rn_hset h, y;
	rn_hrxbuf rb;
	seen sh = { 0 }, sy = { 0 };
	uint64_t floor = 0;
	int got = 0;

	(void)state;
	set_open(&h, &sh, 0);
	set_open(&y, &sy, 0);
	assert_int_equal(rn_hrxbuf_init(&rb, 2048, 8), 0);
	sh.x_port = dead_port();
	queue_dgram(&h, sh.x_port, 100, 1, 0x1111);
	rn_hset_flush(&h);
	assert_true(wait_err(h.s[0].fd));
	/* Y's datagram: the pending error is X's */
	queue_dgram(&h, y.s[0].addr.port, 100, 2, 0x2222);
	rn_hset_flush(&h);
	assert_int_equal(h.s[0].qn, 0);
	assert_int_equal(sh.send_errors, 0);   /* nobody's rail failed */
	assert_int_equal(sh.refused_x, 1);     /* X's error, named by its destination */
	assert_false(pollerr_now(h.s[0].fd));  /* nothing left to wake a poller */
	for (int i = 0; i < 100 && !got; i++) {
		struct pollfd pf = { y.s[0].fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		got = rn_hset_recv(&y, &rb, 1, 1, 4, &floor, on_input, &sy, NULL);
	}
	assert_int_equal(got, 1);
	assert_int_equal(sy.bad, 0);
	assert_int_equal(sy.bytes, 100);
	rn_hrxbuf_free(&rb);
	rn_hset_free(&h);
	rn_hset_free(&y);
}

/*
 * The spin of finding 2: a send outside the kit took the socket's pending
 * error (sk_err) but left its error-queue entry, so poll says POLLERR while
 * a read says EAGAIN.  A read that finds nothing must clear it.
 */
static void test_no_error_left_behind(void **state)
{
	rn_hset h, y;
	rn_hrxbuf rb;
	seen sh = { 0 }, sy = { 0 };
	uint64_t floor = 0;
	struct sockaddr_in ya;
	char b = 0;

	(void)state;
	set_open(&h, &sh, 0);
	set_open(&y, &sy, 0);
	assert_int_equal(rn_hrxbuf_init(&rb, 2048, 8), 0);
	sh.x_port = dead_port();
	queue_dgram(&h, sh.x_port, 10, 1, 0x1111);
	rn_hset_flush(&h);
	assert_true(wait_err(h.s[0].fd));
	ya = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(y.s[0].addr.port),
				   .sin_addr.s_addr = htonl(LO) };
	/* this send gets X's ECONNREFUSED and takes sk_err; the entry stays queued */
	assert_true(sendto(h.s[0].fd, &b, 1, 0, (struct sockaddr *)&ya, sizeof(ya)) < 0);
	assert_int_equal(errno, ECONNREFUSED);
	assert_true(pollerr_now(h.s[0].fd));
	/* a read of sockets nobody reported ready does not look (no extra syscall) */
	assert_int_equal(rn_hset_recv(&h, &rb, 1, 0, 4, &floor, on_input, &sh, NULL), 0);
	assert_true(pollerr_now(h.s[0].fd));
	/* the poller reported it: its empty read looks at the error queue */
	assert_int_equal(rn_hset_recv(&h, &rb, 1, 1, 4, &floor, on_input, &sh, NULL), 0);
	assert_false(pollerr_now(h.s[0].fd));
	assert_int_equal(sh.refused_x, 1);
	assert_int_equal(sh.send_errors, 0);
	rn_hrxbuf_free(&rb);
	rn_hset_free(&h);
	rn_hset_free(&y);
}

/* A datagram's own error (here: port 0, refused by the kernel) fails its owner's rail, once. */
static void test_own_error_reported(void **state)
{
	rn_hset h;
	seen sh = { 0 };

	(void)state;
	set_open(&h, &sh, 0);
	memset(rn_hset_spare(&h), 0, 10);
	assert_true(rn_hset_queue(&h, 0, (rn_addr){ .ip = LO, .port = 0 }, 10, 0x3333) >= 0);
	rn_hset_flush(&h);
	assert_int_equal(h.s[0].qn, 0);
	assert_int_equal(sh.send_errors, 1);
	assert_true(sh.err_owner == 0x3333);
	rn_hset_free(&h);
}

/* ---- IPv6 rails: AF_INET6 sockets on ::1 ---- */

/* ::1 as an IPv6 rail at port (0: any). */
static rn_rail_addr lo6(uint16_t port)
{
	rn_rail_addr a = { .port = port, .prefix = 128, .v6 = 1 };

	a.ip6[15] = 1;
	return a;
}

typedef struct seen6 {
	int dgrams, bad, errors, refused;
	uint16_t from_port, dead_port;
	size_t bytes;
} seen6;

static void on_input6(void *arg, int idx, rn_addr from, const uint8_t *d, size_t len,
		      uint64_t at)
{
	seen6 *s = arg;
	rn_rail_addr l = lo6(s->from_port);

	(void)idx;
	(void)at;
	/* every datagram comes from the sender's IPv6 rail, byte k of datagram k its fill */
	if (!rn_addr_eq(from, rn_addr_of_rail(&l)))
		s->bad++;
	for (size_t i = 1; i < len; i++)
		if (d[i] != d[0])
			s->bad++;
	s->dgrams++;
	s->bytes += len;
}

static void on_error6(void *arg, int idx, const rn_hsock_err *e)
{
	seen6 *s = arg;
	rn_rail_addr dead = lo6(s->dead_port);

	(void)idx;
	s->errors++;
	if (rn_hsock_err_port_unreach(e) && rn_addr_eq(e->dest, rn_addr_of_rail(&dead)))
		s->refused++;
}

/* A set of one IPv6 rail socket on ::1, or skip (77) when this host has no IPv6 loopback. */
static void set_open6(rn_hset *h, seen6 *sn)
{
	rn_hsock_opts o = { .dgram = 1500, .gro = 1, .rx_ts = 1, .recverr = 1 };
	rn_rail_addr a = lo6(0);
	int rc;

	struct sockaddr_in6 probe = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);

	/* the host, not the kit, may lack IPv6: a plain socket tells */
	rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&probe, sizeof(probe));
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		skip();
	assert_int_equal(rn_hset_init(h, 1500, 0), 0);
	rc = rn_hsock_open_rail(&h->s[0], &a, &o);
	assert_int_equal(rc, 0);
	assert_true(h->s[0].addr.v6 && h->s[0].addr.port != 0);
	h->n = 1;
	h->ops = (rn_hsock_ops){ .on_error = on_error6 };
	h->arg = sn;
}

/* An IPv6 socket is IPv6 only: IPV6_V6ONLY, so an IPv4 rail's port stays free for it. */
static void test_v6_socket_only_v6(void **state)
{
	rn_hset h;
	seen6 sn = { 0 };
	int v = 0;
	socklen_t len = sizeof(v);

	(void)state;
	set_open6(&h, &sn);
	assert_int_equal(getsockopt(h.s[0].fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len), 0);
	assert_int_equal(v, 1);
	rn_hset_free(&h);
}

/*
 * 160 datagrams in runs (GSO where the kernel has it) from one IPv6 rail
 * socket to another over ::1, then one sent at once: every byte arrives,
 * each from the sender's IPv6 address and port; a datagram to a port
 * nobody holds comes back as an ICMPv6 port unreachable naming it.
 */
static void test_v6_loopback(void **state)
{
	rn_hset tx, rx;
	rn_hrxbuf rb;
	seen6 st = { 0 }, sr = { 0 };
	uint64_t floor = 0;
	rn_rail_addr to, dead;
	int total = 0;
	uint8_t one[64];

	(void)state;
	set_open6(&tx, &st);
	set_open6(&rx, &sr);
	tx.gso = rn_hsock_probe_gso(tx.s[0].fd);
	sr.from_port = tx.s[0].addr.port;
	to = lo6(rx.s[0].addr.port);
	assert_int_equal(rn_hrxbuf_init(&rb, RN_HGRO_BUF, 8), 0);
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < 40; k++) {
			memset(rn_hset_spare(&tx), (uint8_t)(round * 40 + k), k == 39 ? 300 : 1200);
			assert_true(rn_hset_queue(&tx, 0, rn_addr_of_rail(&to), k == 39 ? 300 : 1200,
						  1) >= 0);
		}
		assert_int_equal(rn_hset_flush_one(&tx, 0), 0);
	}
	memset(one, 0x77, sizeof(one));
	assert_int_equal(rn_hset_send_now(&tx, 0, rn_addr_of_rail(&to), one, sizeof(one)), 0);
	for (int tries = 0; tries < 200 && total < 161; tries++) {
		struct pollfd pf = { rx.s[0].fd, POLLIN, 0 };

		poll(&pf, 1, 10);
		total += rn_hset_recv(&rx, &rb, 1, 1, 16, &floor, on_input6, &sr, NULL);
	}
	assert_int_equal(total, 161);
	assert_int_equal(sr.dgrams, 161);
	assert_int_equal(sr.bad, 0);
	assert_int_equal(sr.bytes, 4 * (39 * 1200 + 300) + sizeof(one));
	/* nothing listens there: the error queue names the IPv6 destination */
	rn_hset_free(&rx);
	st.dead_port = to.port;
	dead = lo6(st.dead_port);
	memset(rn_hset_spare(&tx), 1, 100);
	assert_true(rn_hset_queue(&tx, 0, rn_addr_of_rail(&dead), 100, 0x1111) >= 0);
	rn_hset_flush(&tx);
	assert_true(wait_err(tx.s[0].fd));
	assert_true(rn_hset_drain_errors(&tx, 0) > 0);
	assert_int_equal(st.refused, 1);
	rn_hrxbuf_free(&rb);
	rn_hset_free(&tx);
}

/* Socket addresses both ways: IPv4, IPv6 with a link-local scope, v4-mapped as IPv4. */
static void test_sa_round_trip(void **state)
{
	rn_addr v4 = { .ip = 0xc6120101u, .port = 7000 }, ll = { .port = 7001, .v6 = 1, .scope = 5 };
	rn_addr g = { .port = 7002, .v6 = 1, .scope = 0 };
	rn_hsa sa;

	(void)state;
	assert_int_equal(rn_hsock_sa_of(&sa, v4), sizeof(struct sockaddr_in));
	assert_true(rn_addr_eq(rn_hsock_sa_addr(&sa), v4));
	ll.ip6[0] = 0xfe;
	ll.ip6[1] = 0x80;
	ll.ip6[15] = 9;
	assert_int_equal(rn_hsock_sa_of(&sa, ll), sizeof(struct sockaddr_in6));
	assert_int_equal(sa.v6.sin6_scope_id, 5);
	assert_true(rn_addr_eq(rn_hsock_sa_addr(&sa), ll));
	/* a global address keeps no scope, whatever the kernel wrote */
	g.ip6[0] = 0x20;
	g.ip6[1] = 0x01;
	g.ip6[3] = 0x02;
	rn_hsock_sa_of(&sa, g);
	sa.v6.sin6_scope_id = 3;
	assert_true(rn_addr_eq(rn_hsock_sa_addr(&sa), g));
	/* ::ffff:198.18.1.1 */
	memset(&sa, 0, sizeof(sa));
	sa.v6.sin6_family = AF_INET6;
	sa.v6.sin6_port = htons(7000);
	sa.v6.sin6_addr.s6_addr[10] = sa.v6.sin6_addr.s6_addr[11] = 0xff;
	sa.v6.sin6_addr.s6_addr[12] = 198;
	sa.v6.sin6_addr.s6_addr[13] = 18;
	sa.v6.sin6_addr.s6_addr[14] = 1;
	sa.v6.sin6_addr.s6_addr[15] = 1;
	assert_true(rn_addr_eq(rn_hsock_sa_addr(&sa), v4));
}

/* Addresses for logs and ri2n-stat: IPv6 in brackets beside a port, link-local with its scope. */
static void test_addr_strings(void **state)
{
	rn_addr v4 = { .ip = 0xc6120102u, .port = 7000 };
	rn_addr g = { .port = 7000, .v6 = 1, .ip6 = { 0x20, 0x01, 0, 0x02, 0, 0, 0, 1 } };
	rn_addr ll = { .port = 7001, .v6 = 1, .scope = 3, .ip6 = { 0xfe, 0x80 } };
	char b[RN_ADDR_STRLEN];

	(void)state;
	g.ip6[15] = 2;
	ll.ip6[15] = 1;
	assert_string_equal(rn_addr_str(v4, b, sizeof(b)), "198.18.1.2");
	assert_string_equal(rn_addrport_str(v4, b, sizeof(b)), "198.18.1.2:7000");
	assert_string_equal(rn_addr_str(g, b, sizeof(b)), "2001:2:0:1::2");
	assert_string_equal(rn_addrport_str(g, b, sizeof(b)), "[2001:2:0:1::2]:7000");
	assert_string_equal(rn_addrport_str(ll, b, sizeof(b)), "[fe80::1%3]:7001");
	/* the longest there is fits */
	memset(g.ip6, 0xff, sizeof(g.ip6));
	g.scope = UINT32_MAX;
	g.port = 65535;
	assert_string_equal(rn_addrport_str(g, b, sizeof(b)),
			    "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%4294967295]:65535");
}

/*
 * A rail of rn_rails.h as sockets and the core take it: an IPv6 rail's
 * bytes, a link-local one's interface as its scope; which addresses are its
 * own; waiting (no address) is either family's absence.
 */
static void test_rail_info_addr(void **state)
{
	rn_rail_info v4 = { .name = "r1", .ip = 0xc6120101u, .prefix = 24, .ifindex = 4 };
	rn_rail_info g = { .name = "r2", .prefix = 64, .ifindex = 5, .v6 = 1, .backup = 1,
			   .ip6 = { 0x20, 0x01, 0, 2, 0, 0, 0, 2 } };
	rn_rail_info ll = { .name = "r3", .prefix = 64, .ifindex = 6, .v6 = 1,
			    .ip6 = { 0xfe, 0x80 } };
	rn_rail_info waiting = { .name = "r4", .ifindex = 7 };
	rn_rail_addr a;
	rn_addr x;
	char b[RN_ADDR_STRLEN];

	(void)state;
	g.ip6[15] = 1;
	ll.ip6[15] = 1;
	assert_true(rn_rails_has_addr(&v4) && rn_rails_has_addr(&g) && rn_rails_has_addr(&ll));
	assert_false(rn_rails_has_addr(&waiting));
	a = rn_rails_addr(&v4, 7000);
	assert_true(!a.v6 && a.ip == v4.ip && a.port == 7000 && a.prefix == 24 && a.scope == 0);
	a = rn_rails_addr(&g, 7001);
	assert_true(a.v6 && a.ip == 0 && a.port == 7001 && a.prefix == 64 && a.backup == 1);
	assert_int_equal(a.scope, 0); /* a global address has no scope */
	assert_memory_equal(a.ip6, g.ip6, 16);
	a = rn_rails_addr(&ll, 0);
	assert_int_equal(a.scope, 6);
	assert_string_equal(rn_rails_str(&v4, b, sizeof(b)), "198.18.1.1");
	assert_string_equal(rn_rails_str(&g, b, sizeof(b)), "2001:2:0:2::1");
	assert_string_equal(rn_rails_str(&ll, b, sizeof(b)), "fe80::1%6");
	/* its own: the same family and address, a link-local one on its interface or unscoped */
	x = (rn_addr){ .ip = v4.ip };
	assert_true(rn_rails_is(&v4, x));
	assert_false(rn_rails_is(&g, x));
	x = (rn_addr){ .v6 = 1 };
	memcpy(x.ip6, g.ip6, 16);
	assert_true(rn_rails_is(&g, x));
	assert_false(rn_rails_is(&v4, x));
	x.ip6[15] = 2;
	assert_false(rn_rails_is(&g, x));
	memcpy(x.ip6, ll.ip6, 16);
	assert_true(rn_rails_is(&ll, x));
	x.scope = 6;
	assert_true(rn_rails_is(&ll, x));
	x.scope = 9;
	assert_false(rn_rails_is(&ll, x));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_clamp),
		cmocka_unit_test(test_gso_runs),
		cmocka_unit_test(test_gro_split),
		cmocka_unit_test(test_loopback_batch),
		cmocka_unit_test(test_take_send),
		cmocka_unit_test(test_error_attributed),
		cmocka_unit_test(test_no_error_left_behind),
		cmocka_unit_test(test_own_error_reported),
		cmocka_unit_test(test_sa_round_trip),
		cmocka_unit_test(test_addr_strings),
		cmocka_unit_test(test_rail_info_addr),
		cmocka_unit_test(test_v6_socket_only_v6),
		cmocka_unit_test(test_v6_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
