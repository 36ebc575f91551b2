/*
 * api_process.c - threads, fork and the event queue: many threads moving
 * data on many connections at once, descriptors inherited across fork and
 * a child's own engine, and the events ri2n reports to the application.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"

/* ---- threads ---- */

enum { T_THREADS = 4, T_CONNS = 4, T_BYTES = 4 * MIB };

/* A client thread: T_CONNS connections, T_BYTES each way on each, checked. */
struct tclient {
	pthread_t th;
	int id;
	uint16_t port;
	char why[256];
	int ok;
};

static void *tclient_main(void *arg)
{
	struct tclient *t = arg;
	struct flow f[T_CONNS];

	memset(f, 0, sizeof(f));
	for (int k = 0; k < T_CONNS; k++)
		f[k].fd = -1;
	for (int k = 0; k < T_CONNS; k++) {
		struct sockaddr_in a = sin_of(RAIL1, t->port);
		uint32_t id = (uint32_t)(t->id * T_CONNS + k);
		int fd = ri2n_socket();

		if (fd < 0 || ri2n_connect(fd, SA(&a), sizeof(a)) < 0) {
			snprintf(t->why, sizeof(t->why), "thread %d connect %d: %s", t->id, k,
				 strerror(errno));
			if (fd >= 0)
				ri2n_close(fd);
			goto out;
		}
		f[k] = (struct flow){ .fd = fd, .tx_seed = 1000 + id, .rx_seed = 2000 + id,
				      .tx_total = T_BYTES, .rx_total = T_BYTES, .shut_wr = 1,
				      .want_eof = 1 };
		/* who we are, so the acceptor knows which pattern to expect */
		if (write(fd, &id, sizeof(id)) != sizeof(id)) {
			snprintf(t->why, sizeof(t->why), "thread %d: id: %s", t->id, strerror(errno));
			goto out;
		}
	}
	if (run_flows(f, T_CONNS, 80000, t->why, sizeof(t->why)) == 0)
		t->ok = 1;
out:
	for (int k = 0; k < T_CONNS; k++)
		if (f[k].fd >= 0)
			ri2n_close(f[k].fd);
	return NULL;
}

/* Accepts one thread's connection; its first 4 bytes say which patterns it moves. */
static struct flow accept_flow(int l, int *seen, int n)
{
	struct sockaddr_in peer;
	uint32_t id = UINT32_MAX;
	int fd = accept_within(l, 30000, &peer);

	assert_true(wait_fd(fd, POLLIN, 30000) & POLLIN);
	assert_int_equal(read(fd, &id, sizeof(id)), sizeof(id));
	assert_true(id < (uint32_t)n);
	assert_int_equal(seen[id], 0);
	seen[id] = 1;
	return (struct flow){ .fd = fd, .tx_seed = 2000 + id, .rx_seed = 1000 + id,
			      .tx_total = T_BYTES, .rx_total = T_BYTES, .shut_wr = 1,
			      .want_eof = 1 };
}

/* 4 threads x 4 connections to one listener, 4 MiB each way on each, every byte checked. */
void test_threads(void **state)
{
	enum { N = T_THREADS * T_CONNS };
	/* static: a failed assertion must not leave running threads a dead stack frame */
	static struct tclient t[T_THREADS];
	static struct flow f[N];
	int seen[N] = { 0 };
	uint16_t port;
	uint64_t t0 = now_ms();
	char why[256];
	int l, rc;

	(void)state;
	l = make_listener(NULL, N, &port);
	for (int i = 0; i < T_THREADS; i++) {
		t[i] = (struct tclient){ .id = i, .port = port };
		assert_int_equal(pthread_create(&t[i].th, NULL, tclient_main, &t[i]), 0);
	}
	for (int k = 0; k < N; k++)
		f[k] = accept_flow(l, seen, N);
	rc = run_flows(f, N, 80000, why, sizeof(why));
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(t[i].th, NULL);
	if (rc)
		fail_msg("acceptor: %s", why);
	for (int i = 0; i < T_THREADS; i++)
		if (!t[i].ok)
			fail_msg("%s", t[i].why);
	for (int k = 0; k < N; k++)
		assert_int_equal(ri2n_close(f[k].fd), 0);
	assert_int_equal(ri2n_close(l), 0);
	print_message("%d connections x %u MiB each way: %" PRIu64 " ms\n", N, T_BYTES / MIB,
		      now_ms() - t0);
}

/* ---- fork ---- */

/*
 * In the child: writes on the inherited connection c (the parent's engine
 * serves it; ri2n_getpeername still names its peer, the parent's listener
 * RAIL1:port; ri2n's data calls on it fail with ENOTSOCK), then makes a connection
 * of its own (its own engine starts) to the parent's listener and moves
 * data both ways.  exit(0) on success, _exit(code) on failure.
 */
__attribute__((noreturn)) static void fork_child_main(int c, int s, int l, uint16_t port)
{
	struct sockaddr_in a = sin_of(RAIL1, port), b;
	socklen_t len = sizeof(b);
	char why[256];
	struct flow f;
	int nc;

	if (ri2n_getpeername(c, SA(&b), &len) != 0 || len != sizeof(b) ||
	    b.sin_addr.s_addr != a.sin_addr.s_addr || b.sin_port != a.sin_port)
		_exit(10);
	if (ri2n_send(c, why, 1, MSG_NOSIGNAL) != -1 || errno != ENOTSOCK)
		_exit(10);
	f = (struct flow){ .fd = c, .tx_seed = 102, .tx_total = 64 * KIB };
	if (run_flows(&f, 1, 20000, why, sizeof(why)))
		_exit(11);
	close(c);
	close(s);
	close(l);
	nc = ri2n_socket();
	if (nc < 0)
		_exit(12);
	if (ri2n_connect(nc, SA(&a), sizeof(a)) < 0)
		_exit(13);
	f = (struct flow){ .fd = nc, .tx_seed = 103, .rx_seed = 104, .tx_total = 256 * KIB,
			   .rx_total = 128 * KIB, .shut_wr = 1, .want_eof = 1 };
	if (run_flows(&f, 1, 30000, why, sizeof(why))) {
		fprintf(stderr, "fork child: %s\n", why);
		_exit(14);
	}
	ri2n_close(nc);
	exit(0); /* exit, not _exit: ri2n delivers what is owed first */
}

/*
 * After fork, a descriptor the child inherited keeps working in both
 * processes, and the child's first ri2n call starts its own engine for its
 * own connections (ri2n.h, docs/API.md "fork").
 */
void test_fork(void **state)
{
	struct sockaddr_in peer;
	uint16_t port;
	int l, c, s, n, st;
	pid_t pid;

	(void)state;
	l = make_listener(NULL, 2, &port);
	c = connect_to(port);
	s = accept_within(l, 10000, &peer);
	flow2(c, s, 16 * KIB, 16 * KIB, 0, 101); /* it works before the fork */
	pid = fork_child();
	if (pid == 0)
		fork_child_main(c, s, l, port);
	/* what the child wrote on the inherited descriptor */
	flow1(s, 0, 0, 102, 64 * KIB, 0, 0);
	/* the child's own connection */
	n = accept_within(l, 15000, &peer);
	flow1(n, 104, 128 * KIB, 103, 256 * KIB, 1, 1);
	assert_int_equal(ri2n_close(n), 0);
	st = reap(pid, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the forked child failed: status %#x (exit %d)", st,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	/* the parent's connection outlives the child's copy of it */
	flow2(c, s, 32 * KIB, 32 * KIB, 1, 105);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* ---- events ---- */

/* The peer a descriptor's events must name: what ri2n_getpeername says. */
static struct sockaddr_in peer_of(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	assert_int_equal(ri2n_getpeername(fd, SA(&a), &len), 0);
	return a;
}

/* Whether e is an event of type `type` for the connection on fd (whose peer is p). */
static int is_event(const struct ri2n_event *e, int type, int fd, const struct sockaddr_in *p)
{
	return e->type == type && e->fd == fd && e->peer.sin_addr.s_addr == p->sin_addr.s_addr &&
	       e->peer.sin_port == p->sin_port;
}

/* Reads events up to ms until one of each kind for c and s came; FAILED fails. */
static void expect_events(int efd, int type, int c, int s, int ms)
{
	struct sockaddr_in pc = peer_of(c), ps = peer_of(s);
	uint64_t end = now_ms() + (uint64_t)ms;
	int got_c = 0, got_s = 0;
	struct ri2n_event e;

	while (!(got_c && got_s) && now_ms() < end) {
		if (ri2n_read_event(&e) != 1) {
			wait_fd(efd, POLLIN, 100);
			continue;
		}
		assert_int_equal(e.missed, 0);
		assert_true(e.time_ns > 0);
		assert_int_equal(e.rail, -1);
		if (e.type == RI2N_EVENT_FAILED && (e.fd == c || e.fd == s))
			fail_msg("a FAILED event (fd %d, %s)", e.fd, strerror(e.error));
		got_c += is_event(&e, type, c, &pc);
		got_s += is_event(&e, type, s, &ps);
	}
	if (!got_c || !got_s)
		fail_msg("no event %d for the %s within %d ms", type,
			 got_c ? "accepted end" : "client", ms);
}

/* The event queue: CONNECTED for both ends, CLOSED after a clean close; the fd polls. */
void test_events(void **state)
{
	struct ri2n_event e;
	int efd, c, s;

	(void)state;
	efd = ri2n_event_fd();
	assert_true(efd >= 0);
	assert_int_equal(ri2n_event_fd(), efd); /* one per process */
	while (ri2n_read_event(&e) == 1)
		;
	assert_int_equal(wait_fd(efd, POLLIN, 0), 0);
	assert_int_equal(ri2n_read_event(&e), 0);
	connect_pair(&c, &s);
	assert_true(wait_fd(efd, POLLIN, 10000) & POLLIN);
	expect_events(efd, RI2N_EVENT_CONNECTED, c, s, 10000);
	flow2(c, s, 16 * KIB, 16 * KIB, 1, 121);
	expect_events(efd, RI2N_EVENT_CLOSED, c, s, 10000);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/*
 * accept's number is the lowest the program does not hold when it calls
 * accept, as TCP's, not one taken when the handshake ended: a connection
 * waits while the program closes a lower descriptor, then is accepted
 * there; while it waits, the program's own next number is unchanged.  Its
 * CONNECTED event, still queued, names the number accept returned.
 */
void test_accept_lowest(void **state)
{
	struct sockaddr_in a;
	struct ri2n_stats st;
	struct ri2n_event e;
	uint16_t port;
	int efd, l, c, s, hole, next, q;

	(void)state;
	efd = ri2n_event_fd();
	assert_true(efd >= 0);
	while (ri2n_read_event(&e) == 1)
		;
	l = make_listener(NULL, 4, &port);
	c = ri2n_socket();
	assert_true(c >= 0);
	/* the two lowest free numbers: one held, one left free */
	hole = open("/dev/null", O_RDONLY);
	next = open("/dev/null", O_RDONLY);
	assert_true(hole >= 0 && next > hole);
	assert_int_equal(close(next), 0);
	a = sin_of(RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&a), sizeof(a)), 0);
	/* the handshake is over on both sides: the connection waits for accept */
	assert_true(wait_fd(l, POLLIN, 10000) & POLLIN);
	q = open("/dev/null", O_RDONLY);
	if (q != next)
		fail_msg("open() with a connection waiting returned %d, not %d", q, next);
	assert_int_equal(close(q), 0);
	assert_int_equal(close(hole), 0);
	s = ri2n_accept(l, NULL, NULL);
	if (s != hole)
		fail_msg("ri2n_accept returned %d, the lowest free number is %d", s, hole);
	assert_int_equal(fcntl(s, F_GETFD), 0); /* as accept's: no FD_CLOEXEC */
	expect_events(efd, RI2N_EVENT_CONNECTED, c, s, 10000);
	assert_int_equal(ri2n_stats(s, &st), 0);
	flow2(c, s, 64 * KIB, 64 * KIB, 1, 122);
	expect_events(efd, RI2N_EVENT_CLOSED, c, s, 10000);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* Whether bytes [from, to) of p are all zero. */
static int zero_from(const void *p, size_t from, size_t to)
{
	const unsigned char *b = p;

	for (size_t i = from; i < to; i++)
		if (b[i])
			return 0;
	return 1;
}

/*
 * The structs that grow at their end (ri2n.h): a size below 0.1.0's struct
 * is EINVAL and takes no event; 0.1.0's two-argument symbols still answer
 * with the 0.1.0 struct; a caller built against a newer ri2n.h (a larger
 * struct) gets the fields this library knows and its extra bytes zeroed.
 */
void test_sized_structs(void **state)
{
	union {
		struct ri2n_stats st;
		unsigned char b[sizeof(struct ri2n_stats) + 64];
	} big;
	union {
		struct ri2n_event ev;
		unsigned char b[sizeof(struct ri2n_event) + 64];
	} bige;
	struct ri2n_stats st;
	struct ri2n_event e;
	uint64_t end;
	int efd, c, s, got_c = 0, got_s = 0;

	(void)state;
	efd = ri2n_event_fd();
	assert_true(efd >= 0);
	while (ri2n_read_event(&e) == 1)
		;
	connect_pair(&c, &s);

	expect_fail(ri2n_stats_sz(c, &st, RI2N_STATS_SIZE_V1 - 1), EINVAL);
	expect_fail(ri2n_stats_sz(c, &st, 0), EINVAL);
	memset(&big, 0xa5, sizeof(big));
	assert_int_equal(ri2n_stats_sz(c, &big.st, sizeof(big)), 0);
	assert_true(zero_from(&big, sizeof(struct ri2n_stats), sizeof(big)));
	assert_string_equal(big.st.state, "established");
	assert_int_equal(big.st.nrails, 2);
	assert_true(big.st.copies == 0); /* RI2N_REDUNDANT_BYTES is off */
	memset(&st, 0xa5, sizeof(st));
	assert_int_equal((ri2n_stats)(c, &st), 0); /* the 0.1.0 symbol, not the macro */
	assert_string_equal(st.state, "established");
	assert_int_equal(st.nrails, 2);
	assert_int_equal(st.mss, big.st.mss);
	assert_memory_equal(&st.rail[1].remote, &big.st.rail[1].remote, sizeof(st.rail[1].remote));
	assert_true(zero_from(&st.rail[2], 0, (RI2N_MAX_RAILS - 2) * sizeof(st.rail[0])));
	/* nothing written past 0.1.0's struct: the fields added since keep their bytes */
	assert_true(st.copies == 0xa5a5a5a5a5a5a5a5ULL);

	/* the two CONNECTED events: a short size takes neither */
	assert_true(wait_fd(efd, POLLIN, 10000) & POLLIN);
	expect_fail(ri2n_read_event_sz(&e, RI2N_EVENT_SIZE_V1 - 1), EINVAL);
	expect_fail(ri2n_read_event_sz(&e, 0), EINVAL);
	assert_true(wait_fd(efd, POLLIN, 0) & POLLIN);
	end = now_ms() + 10000;
	while (!(got_c && got_s) && now_ms() < end) {
		int rc;

		memset(&bige, 0xa5, sizeof(bige));
		if (!got_c && !got_s) /* the first as a newer caller, the rest as 0.1.0's */
			rc = ri2n_read_event_sz(&bige.ev, sizeof(bige));
		else
			rc = (ri2n_read_event)(&bige.ev);
		if (rc != 1) {
			assert_int_equal(rc, 0);
			wait_fd(efd, POLLIN, 100);
			continue;
		}
		if (!got_c && !got_s)
			assert_true(zero_from(&bige, sizeof(struct ri2n_event), sizeof(bige)));
		else /* nothing written past 0.1.0's struct */
			assert_int_equal(bige.b[RI2N_EVENT_SIZE_V1], 0xa5);
		assert_true(bige.ev.time_ns > 0);
		got_c |= bige.ev.type == RI2N_EVENT_CONNECTED && bige.ev.fd == c;
		got_s |= bige.ev.type == RI2N_EVENT_CONNECTED && bige.ev.fd == s;
	}
	if (!got_c || !got_s)
		fail_msg("CONNECTED events: client %d, accepted end %d", got_c, got_s);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* Round trips of 8 bytes from c to s and back, each read whole. */
static void small_round_trips(int c, int s, int n)
{
	char b[8];

	for (int i = 0; i < n; i++) {
		memset(b, 'a' + i % 26, sizeof(b));
		assert_int_equal(ri2n_send(c, b, sizeof(b), 0), (ssize_t)sizeof(b));
		assert_int_equal(ri2n_recv(s, b, sizeof(b), MSG_WAITALL), (ssize_t)sizeof(b));
		assert_int_equal(ri2n_send(s, b, sizeof(b), 0), (ssize_t)sizeof(b));
		assert_int_equal(ri2n_recv(c, b, sizeof(b), MSG_WAITALL), (ssize_t)sizeof(b));
		assert_int_equal(b[7], 'a' + i % 26);
	}
}

/* Whether this process's published state (ri2n-stat's snapshot) has a role's connection with copies=want. */
static int published_copies(const char *role, unsigned long long want)
{
	const char *env = getenv("RI2N_RUN_DIR");
	char dirs[4][128], path[sizeof(dirs) + 32], line[1024], r[32], w[40];
	int found = 0;

	snprintf(dirs[0], sizeof(dirs[0]), "%s", env ? env : "");
	snprintf(dirs[1], sizeof(dirs[1]), "/run/ri2n");
	snprintf(dirs[2], sizeof(dirs[2]), "/run/user/%u/ri2n", (unsigned)geteuid());
	snprintf(dirs[3], sizeof(dirs[3]), "/tmp/ri2n-%u", (unsigned)geteuid());
	snprintf(r, sizeof(r), " role=%s ", role);
	snprintf(w, sizeof(w), " copies=%llu", want);
	for (int i = 0; i < 4 && !found; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%d.stat", dirs[i], (int)getpid());
		f = *dirs[i] ? fopen(path, "r") : NULL;
		while (f && !found && fgets(line, sizeof(line), f)) {
			size_t n = strcspn(line, "\n"), k = strlen(w);

			line[n] = 0; /* copies= is the line's last field */
			found = !strncmp(line, "conn ", 5) && strstr(line, r) && n >= k &&
				!strcmp(line + n - k, w);
		}
		if (f)
			fclose(f);
	}
	return found;
}

/*
 * ri2n_stats' copies (a field added after 0.1.0): the end with
 * RI2N_REDUNDANT_BYTES counts the small messages it also sent on rail 2,
 * the peer without it none, in ri2n_stats and in the published state; a
 * caller with 0.1.0's struct gets the rest.
 */
void test_stats_copies(void **state)
{
	struct sockaddr_in peer, a;
	struct ri2n_stats st;
	unsigned long long want;
	uint64_t end;
	uint16_t port;
	int l = make_listener(NULL, 4, &port), c = ri2n_socket(), s;

	(void)state;
	assert_true(c >= 0);
	set_opt(c, RI2N_REDUNDANT_BYTES, 64);
	a = sin_of(RAIL1, port);
	assert_int_equal(ri2n_connect(c, SA(&a), sizeof(a)), 0);
	s = accept_within(l, 10000, &peer);
	assert_int_equal(ri2n_close(l), 0);
	/* the first few go once, until the peer's rail-2 address is proven */
	small_round_trips(c, s, 200);

	assert_int_equal(ri2n_stats(c, &st), 0);
	if (st.copies == 0 || st.copies > st.rail[0].tx_data + st.rail[1].tx_data)
		fail_msg("client copies %llu for %llu + %llu DATA packets",
			 (unsigned long long)st.copies, (unsigned long long)st.rail[0].tx_data,
			 (unsigned long long)st.rail[1].tx_data);
	want = st.copies;
	assert_int_equal(ri2n_stats(s, &st), 0);
	if (st.copies != 0)
		fail_msg("%llu copies from the end without the option", (unsigned long long)st.copies);
	/* and ri2n-stat's snapshot has them (one every RI2N_STAT_MS, 250 ms by default) */
	end = now_ms() + 5000;
	while (!(published_copies("client", want) && published_copies("server", 0)) &&
	       now_ms() < end)
		usleep(50 * 1000);
	if (now_ms() >= end)
		fail_msg("no snapshot with copies=%llu (client) and 0 (server)", want);

	memset(&st, 0xa5, sizeof(st));
	assert_int_equal(ri2n_stats_sz(c, &st, RI2N_STATS_SIZE_V1), 0);
	assert_string_equal(st.state, "established");
	assert_true(st.app_tx_bytes == 200 * 8);
	assert_true(st.copies == 0xa5a5a5a5a5a5a5a5ULL);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}
