/*
 * api_harness.c - the helpers of the API semantics tests (api_harness.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api_harness.h"
#include "ri2n_kit.h"

/* ---- time, addresses, descriptors ---- */

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct sockaddr_in sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (ip)
		inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

const char *sin_str(const struct sockaddr_in *a)
{
	static __thread char buf[4][32];
	static __thread int k;
	char ip[INET_ADDRSTRLEN];
	char *b = buf[k++ & 3];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, 32, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

short wait_fd(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		int left = (int)(end > now_ms() ? end - now_ms() : 0), n = poll(&p, 1, left);

		if (n > 0)
			return p.revents;
		if (n == 0 || errno != EINTR)
			return 0;
	}
}

void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK), 0);
}

int get_so_error(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(ri2n_getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(len, sizeof(int));
	return v;
}

int plain_is_fast(void)
{
	const char *v = getenv("RI2N_PLAIN_FAST");

	return !v || strcmp(v, "0") != 0;
}

int get_opt(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(ri2n_getsockopt(fd, RI2N_SOL, name, &v, &len), 0);
	return v;
}

void set_opt(int fd, int name, int v)
{
	assert_int_equal(ri2n_setsockopt(fd, RI2N_SOL, name, &v, sizeof(v)), 0);
}

/* ---- the pattern: the test kit's (tools/kit/ri2n_kit.h) ---- */

void pat_fill(uint8_t *b, size_t n, uint32_t seed, uint64_t off)
{
	kit_pattern_fill(b, seed, off, n);
}

int64_t pat_check(const uint8_t *b, size_t n, uint32_t seed, uint64_t off)
{
	if (kit_pattern_check(b, seed, off, n) == 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (b[i] != kit_pattern_byte(seed, off + i))
			return (int64_t)i;
	return -1;
}

/* ---- flows ---- */

enum { FLOW_CHUNK = 128 * 1024 };

static int flow_done(const struct flow *f)
{
	return f->tx == f->tx_total && (!f->shut_wr || f->shut_done) && f->rx == f->rx_total &&
	       (!f->want_eof || f->eof);
}

/* Reads what is there and checks it; 0, or -1 with why. */
static int flow_read(struct flow *x, int i, uint8_t *buf, char *why, size_t whylen)
{
	uint64_t want = x->rx_total - x->rx;
	ssize_t r = read(x->fd, buf, want && want < FLOW_CHUNK ? want : FLOW_CHUNK);
	int64_t bad;

	if (r < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		snprintf(why, whylen, "flow %d: read after %" PRIu64 " bytes: %s", i, x->rx,
			 strerror(errno));
		return -1;
	}
	if (r == 0) {
		if (x->rx < x->rx_total) {
			snprintf(why, whylen, "flow %d: end of stream after %" PRIu64 " of %" PRIu64
				 " bytes", i, x->rx, x->rx_total);
			return -1;
		}
		x->eof = 1;
		return 0;
	}
	if ((uint64_t)r > want) {
		snprintf(why, whylen, "flow %d: %zd bytes more than the %" PRIu64 " sent", i, r,
			 x->rx_total);
		return -1;
	}
	bad = pat_check(buf, (size_t)r, x->rx_seed, x->rx);
	if (bad >= 0) {
		snprintf(why, whylen, "flow %d: byte %" PRIu64 " is wrong", i, x->rx + (uint64_t)bad);
		return -1;
	}
	x->rx += (uint64_t)r;
	return 0;
}

/* Writes the next piece of the pattern; 0, or -1 with why. */
static int flow_write(struct flow *x, int i, uint8_t *buf, char *why, size_t whylen)
{
	uint64_t want = x->tx_total - x->tx;
	size_t len = want < FLOW_CHUNK ? (size_t)want : FLOW_CHUNK;
	ssize_t w;

	pat_fill(buf, len, x->tx_seed, x->tx);
	w = send(x->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w > 0)
		x->tx += (uint64_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		snprintf(why, whylen, "flow %d: write after %" PRIu64 " bytes: %s", i, x->tx,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* What flow i waits for now (0: done); shuts down writing once all is written. */
static short flow_events(struct flow *x, int i, char *why, size_t whylen)
{
	short ev = 0;

	if (x->tx == x->tx_total && x->shut_wr && !x->shut_done) {
		if (shutdown(x->fd, SHUT_WR) < 0) {
			snprintf(why, whylen, "flow %d: shutdown: %s", i, strerror(errno));
			return -1;
		}
		x->shut_done = 1;
	}
	if (flow_done(x))
		return 0;
	if (x->rx < x->rx_total || (x->want_eof && !x->eof))
		ev |= POLLIN;
	if (x->tx < x->tx_total)
		ev |= POLLOUT;
	return ev;
}

static void flow_timeout(const struct flow *f, int n, int ms, char *why, size_t whylen)
{
	for (int i = 0; i < n; i++) {
		if (flow_done(&f[i]))
			continue;
		snprintf(why, whylen, "flow %d timed out after %d ms: sent %" PRIu64 "/%" PRIu64
			 ", received %" PRIu64 "/%" PRIu64 "%s", i, ms, f[i].tx, f[i].tx_total,
			 f[i].rx, f[i].rx_total, f[i].want_eof && !f[i].eof ? ", no EOF yet" : "");
		return;
	}
}

/* One poll round over the flows: 1 when all are done, 0 to go on, -1 on an error. */
static int flow_round(struct flow *f, int n, struct pollfd *p, uint8_t *buf, int left,
		      char *why, size_t whylen)
{
	int active = 0;

	for (int i = 0; i < n; i++) {
		short ev = flow_events(&f[i], i, why, whylen);

		if (ev < 0)
			return -1;
		p[i] = (struct pollfd){ .fd = ev ? f[i].fd : -1, .events = ev };
		active += ev != 0;
	}
	if (!active)
		return 1;
	if (left == 0)
		return -2;
	if (poll(p, (nfds_t)n, left) < 0 && errno != EINTR) {
		snprintf(why, whylen, "poll: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (p[i].fd < 0 || !p[i].revents)
			continue;
		if ((p[i].events & POLLIN) && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    flow_read(&f[i], i, buf, why, whylen))
			return -1;
		if ((p[i].events & POLLOUT) && (p[i].revents & (POLLOUT | POLLERR | POLLHUP)) &&
		    flow_write(&f[i], i, buf, why, whylen))
			return -1;
	}
	return 0;
}

int run_flows(struct flow *f, int n, int timeout_ms, char *why, size_t whylen)
{
	uint8_t *buf = malloc(FLOW_CHUNK);
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	int *fl = calloc((size_t)n, sizeof(*fl));
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int rc = -1;

	if (!buf || !p || !fl) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		fl[i] = fcntl(f[i].fd, F_GETFL);
		fcntl(f[i].fd, F_SETFL, fl[i] | O_NONBLOCK);
	}
	do {
		uint64_t t = now_ms();

		rc = flow_round(f, n, p, buf, (int)(end > t ? end - t : 0), why, whylen);
	} while (rc == 0);
	if (rc == -2)
		flow_timeout(f, n, timeout_ms, why, whylen);
	rc = rc == 1 ? 0 : -1;
	for (int i = 0; i < n; i++)
		fcntl(f[i].fd, F_SETFL, fl[i]);
out:
	free(buf);
	free(p);
	free(fl);
	return rc;
}

void flow1(int fd, uint32_t tx_seed, uint64_t tx, uint32_t rx_seed, uint64_t rx,
		  int shut_wr, int want_eof)
{
	struct flow f = { .fd = fd, .tx_seed = tx_seed, .rx_seed = rx_seed, .tx_total = tx,
			  .rx_total = rx, .shut_wr = shut_wr, .want_eof = want_eof };
	char why[256];

	if (run_flows(&f, 1, 30000, why, sizeof(why)))
		fail_msg("%s", why);
}

void flow2(int a, int b, uint64_t a_to_b, uint64_t b_to_a, int shut, uint32_t seed)
{
	struct flow f[2] = {
		{ .fd = a, .tx_seed = seed, .rx_seed = seed + 1, .tx_total = a_to_b,
		  .rx_total = b_to_a, .shut_wr = shut, .want_eof = shut },
		{ .fd = b, .tx_seed = seed + 1, .rx_seed = seed, .tx_total = b_to_a,
		  .rx_total = a_to_b, .shut_wr = shut, .want_eof = shut },
	};
	char why[256];

	if (run_flows(f, 2, 60000, why, sizeof(why)))
		fail_msg("%s", why);
}

/* ---- sockets ---- */

int make_listener(const char *ip, int backlog, uint16_t *port)
{
	struct sockaddr_in a = sin_of(ip, 0), got;
	socklen_t len = sizeof(got);
	int l = ri2n_socket();

	assert_true(l >= 0);
	assert_int_equal(ri2n_bind(l, SA(&a), sizeof(a)), 0);
	assert_int_equal(ri2n_listen(l, backlog), 0);
	assert_int_equal(ri2n_getsockname(l, SA(&got), &len), 0);
	assert_int_not_equal(ntohs(got.sin_port), 0);
	*port = ntohs(got.sin_port);
	return l;
}

int child_accept_one(int wfd)
{
	struct sockaddr_in any = sin_of(NULL, 0), from;
	socklen_t len = sizeof(any);
	uint16_t port;
	int l = ri2n_socket(), s;

	if (l < 0 || ri2n_bind(l, SA(&any), sizeof(any)) || ri2n_listen(l, 1) ||
	    ri2n_getsockname(l, SA(&any), &len))
		_exit(10);
	port = ntohs(any.sin_port);
	if (write(wfd, &port, sizeof(port)) != sizeof(port))
		_exit(11);
	if (!(wait_fd(l, POLLIN, 20000) & POLLIN))
		_exit(12);
	len = sizeof(from);
	s = ri2n_accept(l, SA(&from), &len);
	if (s < 0)
		_exit(13);
	return s;
}

int accept_within(int l, int ms, struct sockaddr_in *peer)
{
	socklen_t len = sizeof(*peer);
	short ev = wait_fd(l, POLLIN, ms);
	int fd;

	if (!(ev & POLLIN))
		fail_msg("no connection to accept within %d ms (revents %#x)", ms, ev);
	fd = ri2n_accept(l, SA(peer), &len);
	if (fd < 0)
		fail_msg("ri2n_accept: %s", strerror(errno));
	assert_int_equal(len, sizeof(*peer));
	return fd;
}

int connect_to(uint16_t port)
{
	struct sockaddr_in a = sin_of(RAIL1, port);
	int fd = ri2n_socket();

	assert_true(fd >= 0);
	if (ri2n_connect(fd, SA(&a), sizeof(a)) < 0)
		fail_msg("ri2n_connect to %s: %s", sin_str(&a), strerror(errno));
	return fd;
}

/* A connected pair through a fresh listener, which is closed again. */
void connect_pair(int *c, int *s)
{
	struct sockaddr_in peer;
	uint16_t port;
	int l = make_listener(NULL, 4, &port);

	*c = connect_to(port);
	*s = accept_within(l, 10000, &peer);
	assert_int_equal(ri2n_close(l), 0);
}

/* A port nobody listens on: a listener's, closed again. */
uint16_t dead_port(void)
{
	uint16_t port;
	int l = make_listener(NULL, 1, &port);

	assert_int_equal(ri2n_close(l), 0);
	usleep(50 * 1000); /* the engine closes the rail sockets when it sees the close */
	return port;
}

/* ---- children ---- */

int reap(pid_t pid, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int st = 0;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0)
			fail_msg("waitpid: %s", strerror(errno));
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("child %d did not finish within %d ms", (int)pid, ms);
		}
		usleep(10 * 1000);
	}
}

/*
 * A forked child that calls exit() runs ri2n's drain (an atexit handler
 * registered with the first ri2n_socket, so after this one) and then this
 * handler, which leaves before LeakSanitizer's check: the parent's objects
 * the child inherited and let go of (ri2n.h, "Threads") are not its to free.
 */
static pid_t g_main_pid;

static void child_exit_hook(void)
{
	if (getpid() != g_main_pid)
		_exit(0); /* children only exit() on success; failures _exit(code) */
}

pid_t fork_child(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
	return pid;
}

static struct {
	char msg[160];
	size_t len;
	unsigned seconds;
	int hold;
} g_dog;

static void on_alarm(int sig)
{
	(void)sig;
	if (write(2, g_dog.msg, g_dog.len) < 0) {
		/* nothing more to do */
	}
	while (g_dog.hold)
		pause();
	_exit(124);
}

void harness_watchdog(const char *prog, unsigned seconds)
{
	int n = snprintf(g_dog.msg, sizeof(g_dog.msg),
			 "%s: a test ran past its %u s watchdog; aborting\n", prog, seconds);

	g_dog.len = n > 0 && (size_t)n < sizeof(g_dog.msg) ? (size_t)n : 0;
	g_dog.seconds = seconds;
	g_dog.hold = getenv("API_TEST_HOLD") != NULL;
	signal(SIGALRM, on_alarm);
}

int harness_arm(void **state)
{
	(void)state;
	alarm(g_dog.seconds);
	return 0;
}

int harness_disarm(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

#if defined(__SANITIZE_THREAD__)
/*
 * Forked children start an engine thread of their own (ri2n.h: after fork
 * the child starts its own engine on first use).  TSan refuses new threads
 * after a multi-threaded fork unless told otherwise; TSAN_OPTIONS still wins.
 */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#endif

void harness_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines, also when fork()s follow */
	signal(SIGPIPE, SIG_IGN); /* writes on dead connections: EPIPE, not death */
	g_main_pid = getpid();
	atexit(child_exit_hook); /* before any ri2n call: runs after ri2n's drain */
}
