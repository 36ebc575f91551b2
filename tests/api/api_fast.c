/*
 * api_fast.c - the fast path (ri2n.h, "the fast path"): ri2n_send,
 * ri2n_recv, ri2n_writev and ri2n_readv, where the calling thread drives its
 * connection itself under the host lock and waits on the rails' sockets.
 *
 * What is checked: every byte (the harness's pattern) in ping-pong and bulk
 * transfers both ways; order kept when fast calls and plain read/write/poll
 * mix on one descriptor; many threads on one connection (the host lock under
 * contention); EAGAIN and SO_RCVTIMEO/SO_SNDTIMEO; a receiver blocked inline
 * while timers run, while the peer dies, while the peer closes, while another
 * thread shuts the descriptor down or closes it; fork; bad descriptors and
 * states; RI2N_BUSY_POLL_US; a thread's resources after it exits.
 *
 * Every blocking fast call is bounded: the descriptors get SO_RCVTIMEO and
 * SO_SNDTIMEO (FAST_TIMEO_S), so a call that would hang returns EAGAIN and
 * the check reports a hang.  Helpers that may run in other threads return 0
 * or -1 with a sentence; only the test's main thread asserts.
 *
 * (Longer than docs/STYLE.md's ~800 lines: one file per feature, as the other
 * api_*.c; split by section, 1-5 and 6-10, if it grows further.)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"

enum {
	FAST_TIMEO_S = 20, /* no fast call blocks longer: beyond it, a hang */
	WHY = 256,
};

/* ---- helpers for any thread ---- */

static void set_timeo(int fd, int name, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	assert_int_equal(ri2n_setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv)), 0);
}

/* Both timeouts at FAST_TIMEO_S: a blocking fast call cannot hang the test. */
static void bound(int fd)
{
	set_timeo(fd, SO_RCVTIMEO, FAST_TIMEO_S * 1000);
	set_timeo(fd, SO_SNDTIMEO, FAST_TIMEO_S * 1000);
}

/* A connected pair, both ends bounded. */
static void fast_pair(int *c, int *s)
{
	connect_pair(c, s);
	bound(*c);
	bound(*s);
}

/* A small per-thread generator (xorshift), for sizes. */
static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * Sends n bytes of pattern `seed` from stream offset off with ri2n_send,
 * calls of `chunk` bytes at most.  A blocking send (flags without
 * MSG_DONTWAIT) must take every byte of each call.  0, or -1 with why.
 */
static int send_pat(int fd, uint32_t seed, uint64_t off, uint64_t n, size_t chunk, int flags,
		    char *why)
{
	uint8_t *b = malloc(chunk);
	uint64_t done = 0;
	int rc = 0;

	if (!b) {
		snprintf(why, WHY, "out of memory");
		return -1;
	}
	while (done < n) {
		size_t len = n - done < chunk ? (size_t)(n - done) : chunk;
		ssize_t w;

		pat_fill(b, len, seed, off + done);
		w = ri2n_send(fd, b, len, flags | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || (size_t)w != len) {
			snprintf(why, WHY, "ri2n_send of %zu bytes at %" PRIu64 ": %zd (%s)%s", len,
				 off + done, w, w < 0 ? strerror(errno) : "short",
				 w < 0 && errno == EAGAIN ? ": blocked past the bound, a hang" : "");
			rc = -1;
			break;
		}
		done += len;
	}
	free(b);
	return rc;
}

/*
 * Receives n bytes with ri2n_recv (calls of `chunk` at most) and checks them
 * against pattern `seed` from offset off.  MSG_WAITALL calls must return all
 * they asked for.  0, or -1 with why.
 */
static int recv_pat(int fd, uint32_t seed, uint64_t off, uint64_t n, size_t chunk, int flags,
		    char *why)
{
	uint8_t *b = malloc(chunk);
	uint64_t done = 0;
	int rc = 0;

	if (!b) {
		snprintf(why, WHY, "out of memory");
		return -1;
	}
	while (done < n) {
		size_t len = n - done < chunk ? (size_t)(n - done) : chunk;
		ssize_t r = ri2n_recv(fd, b, len, flags);
		int64_t bad;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || ((flags & MSG_WAITALL) && (size_t)r != len)) {
			snprintf(why, WHY, "ri2n_recv of %zu bytes at %" PRIu64 " of %" PRIu64
				 ": %zd (%s)", len, off + done, off + n, r,
				 r < 0 ? strerror(errno) : r == 0 ? "end of stream" : "short WAITALL");
			rc = -1;
			break;
		}
		bad = pat_check(b, (size_t)r, seed, off + done);
		if (bad >= 0) {
			snprintf(why, WHY, "byte %" PRIu64 " of pattern %u is wrong", off + done +
				 (uint64_t)bad, seed);
			rc = -1;
			break;
		}
		done += (uint64_t)r;
	}
	free(b);
	return rc;
}

/* A thread running one of the functions above, or a test's own. */
struct job {
	pthread_t th;
	int fd;
	uint32_t seed;
	uint64_t off, bytes;
	size_t chunk;
	int flags;
	int rc;
	char why[WHY];
	void *arg; /* a test's own state */
};

static void *job_send(void *arg)
{
	struct job *j = arg;

	j->rc = send_pat(j->fd, j->seed, j->off, j->bytes, j->chunk, j->flags, j->why);
	return NULL;
}

static void *job_recv(void *arg)
{
	struct job *j = arg;

	j->rc = recv_pat(j->fd, j->seed, j->off, j->bytes, j->chunk, j->flags, j->why);
	return NULL;
}

static void job_start(struct job *j, void *(*fn)(void *))
{
	j->rc = -1;
	snprintf(j->why, WHY, "did not finish");
	assert_int_equal(pthread_create(&j->th, NULL, fn, j), 0);
}

static void job_join(struct job *j, const char *what)
{
	pthread_join(j->th, NULL);
	if (j->rc)
		fail_msg("%s: %s", what, j->why);
}

/* A call the main thread makes: 0 or fails the test with why. */
static void must(int rc, const char *what, const char *why)
{
	if (rc)
		fail_msg("%s: %s", what, why);
}

/* A check that failed on code before the fix it names. */
#define regression(cond, ...)                                                               \
	do {                                                                                \
		if (!(cond))                                                                \
			fail_msg(__VA_ARGS__);                                              \
	} while (0)

/* ---- 1. round trips ---- */

struct pingpong {
	int fd;            /* this side's descriptor */
	int rounds[5];
	uint64_t tx, rx;   /* stream offsets */
	uint32_t tx_seed, rx_seed;
};

static const size_t pp_sizes[5] = { 1, 8, KIB, 64 * KIB, MIB };

/* The responder: receives each message (MSG_WAITALL), checks it, answers with as many. */
static void *job_echo(void *arg)
{
	struct job *j = arg;
	struct pingpong *p = j->arg;

	for (int k = 0; k < 5; k++) {
		for (int i = 0; i < p->rounds[k]; i++) {
			size_t n = pp_sizes[k];

			if (recv_pat(p->fd, p->rx_seed, p->rx, n, n, MSG_WAITALL, j->why) ||
			    send_pat(p->fd, p->tx_seed, p->tx, n, n, 0, j->why))
				return NULL;
			p->rx += n;
			p->tx += n;
		}
	}
	j->rc = 0;
	return NULL;
}

/* One direction's ping-pong: main pings on a, a thread answers on b. */
static void ping_pong(int a, int b, uint32_t seed)
{
	static const int rounds[5] = { 50, 50, 20, 10, 3 };
	struct pingpong pa = { .fd = a, .tx_seed = seed, .rx_seed = seed + 1 };
	struct pingpong pb = { .fd = b, .tx_seed = seed + 1, .rx_seed = seed };
	struct job echo = { .arg = &pb };
	char why[WHY];

	memcpy(pb.rounds, rounds, sizeof(rounds));
	job_start(&echo, job_echo);
	for (int k = 0; k < 5; k++) {
		for (int i = 0; i < rounds[k]; i++) {
			size_t n = pp_sizes[k];

			if (send_pat(a, pa.tx_seed, pa.tx, n, n, 0, why) ||
			    recv_pat(a, pa.rx_seed, pa.rx, n, n, i & 1 ? MSG_WAITALL : 0, why)) {
				pthread_join(echo.th, NULL);
				fail_msg("ping-pong of %zu bytes, round %d: %s (responder: %s)", n, i,
					 why, echo.rc ? echo.why : "fine");
			}
			pa.tx += n;
			pa.rx += n;
		}
	}
	job_join(&echo, "responder");
}

/* Reads exactly the iovecs' total with ri2n_readv (moving on after short reads). */
static int readv_all(int fd, const struct iovec *iov, int iovcnt, char *why)
{
	struct iovec v[16];
	size_t total = 0, got = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	while (got < total) {
		size_t skip_ = got;
		int n = 0;
		ssize_t r;

		for (int i = 0; i < iovcnt; i++) {
			if (skip_ >= iov[i].iov_len) {
				skip_ -= iov[i].iov_len;
				continue;
			}
			v[n++] = (struct iovec){ (uint8_t *)iov[i].iov_base + skip_,
						 iov[i].iov_len - skip_ };
			skip_ = 0;
		}
		r = ri2n_readv(fd, v, n);
		if (r <= 0) {
			snprintf(why, WHY, "ri2n_readv after %zu of %zu bytes: %zd (%s)", got, total,
				 r, r < 0 ? strerror(errno) : "end of stream");
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* ri2n_writev of several buffers, ri2n_readv into differently cut ones; MSG_PEEK. */
static void vector_round(int a, int b, uint32_t seed)
{
	static uint8_t src[5][70 * 1024], dst[6][70 * 1024];
	static const size_t wl[5] = { 1, 100, 4096, 7, 65536 }, rl[6] = { 3, 5000, 13, 1, 61000,
									   3723 };
	struct iovec wv[5], rv[6];
	uint64_t off = 0;
	char why[WHY], pk[8];

	for (int i = 0; i < 5; i++) {
		pat_fill(src[i], wl[i], seed, off);
		wv[i] = (struct iovec){ src[i], wl[i] };
		off += wl[i];
	}
	for (int i = 0; i < 6; i++)
		rv[i] = (struct iovec){ dst[i], rl[i] };
	assert_int_equal(ri2n_writev(a, wv, 5), (ssize_t)off);
	/* MSG_PEEK: the descriptor's own path, the same bytes, which stay */
	assert_int_equal(ri2n_recv(b, pk, sizeof(pk), MSG_PEEK | MSG_WAITALL), sizeof(pk));
	assert_int_equal(pat_check((uint8_t *)pk, sizeof(pk), seed, 0), -1);
	must(readv_all(b, rv, 6, why), "ri2n_readv", why);
	off = 0;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(pat_check(dst[i], rl[i], seed, off), -1);
		off += rl[i];
	}
	/* zero-length calls and an empty vector */
	assert_int_equal(ri2n_send(a, src[0], 0, MSG_NOSIGNAL), 0);
	assert_int_equal(ri2n_writev(a, wv, 0), 0);
	assert_int_equal(ri2n_recv(b, dst[0], 0, MSG_DONTWAIT), 0);
}

/*
 * Ping-pong of 1 B, 8 B, 1 KiB, 64 KiB and 1 MiB messages with ri2n_send
 * and ri2n_recv, each way in turn, every byte checked; then writev/readv.
 */
void test_fast_round_trip(void **state)
{
	int c, s;

	(void)state;
	fast_pair(&c, &s);
	ping_pong(c, s, 1301);
	ping_pong(s, c, 1311);
	vector_round(c, s, 1321);
	vector_round(s, c, 1331);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- 2. bulk ---- */

#define BULK (64 * MIB)

/*
 * 64 MiB one way (1 MiB blocking sends; half received with MSG_WAITALL in
 * 256 KiB calls, half in plain 1 MiB calls), then 64 MiB each way at once
 * (a sending and a receiving thread per direction); every byte checked.
 */
void test_fast_bulk(void **state)
{
	struct job tx1 = { 0 }, tx2 = { 0 }, rx2 = { 0 };
	uint64_t t0 = now_ms();
	char why[WHY];
	int c, s;

	(void)state;
	fast_pair(&c, &s);
	tx1 = (struct job){ .fd = c, .seed = 1401, .bytes = BULK, .chunk = MIB };
	job_start(&tx1, job_send);
	must(recv_pat(s, 1401, 0, BULK / 2, 256 * KIB, MSG_WAITALL, why), "bulk, MSG_WAITALL", why);
	must(recv_pat(s, 1401, BULK / 2, BULK / 2, MIB, 0, why), "bulk", why);
	job_join(&tx1, "bulk sender");
	print_message("%u MiB one way: %" PRIu64 " ms\n", BULK / MIB, now_ms() - t0);

	t0 = now_ms();
	tx1 = (struct job){ .fd = c, .seed = 1402, .bytes = BULK, .chunk = MIB };
	tx2 = (struct job){ .fd = s, .seed = 1403, .bytes = BULK, .chunk = 512 * KIB };
	rx2 = (struct job){ .fd = c, .seed = 1403, .bytes = BULK, .chunk = 128 * KIB,
			    .flags = MSG_WAITALL };
	job_start(&tx1, job_send);
	job_start(&tx2, job_send);
	job_start(&rx2, job_recv);
	why[0] = 0;
	if (recv_pat(s, 1402, 0, BULK, 700 * KIB, 0, why)) {
		/* the others end within their bounds; their reasons may say more */
		pthread_join(tx1.th, NULL);
		pthread_join(tx2.th, NULL);
		pthread_join(rx2.th, NULL);
		fail_msg("both ways, receiving on the accepted end: %s (sender: %s)", why,
			 tx1.rc ? tx1.why : "fine");
	}
	job_join(&tx1, "client's sender");
	job_join(&tx2, "accepted end's sender");
	job_join(&rx2, "client's receiver");
	print_message("%u MiB each way at once: %" PRIu64 " ms\n", BULK / MIB, now_ms() - t0);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- 3. fast and plain calls on one descriptor ---- */

static const char *const mixed_way[] = { "write", "ri2n_send", "ri2n_writev", "sendfile" };

/*
 * sendfile() of b[0..len) into fd from a memory file: libri2n reads the file
 * and sends its bytes through the fast path, in order with the others.
 */
static ssize_t send_by_sendfile(int fd, int mfd, const uint8_t *b, size_t len)
{
	off_t off = 0;

	if (ftruncate(mfd, 0) < 0 || pwrite(mfd, b, len, 0) != (ssize_t)len)
		return -1;
	return sendfile(fd, mfd, &off, len);
}

/*
 * Writes n bytes of the pattern alternating write(), ri2n_send(),
 * ri2n_writev() and sendfile().
 */
static void *job_mixed_writer(void *arg)
{
	struct job *j = arg;
	uint8_t *b = malloc(128 * KIB);
	uint64_t done = 0;
	uint32_t x = j->seed * 2654435761u | 1;
	int mfd = memfd_create("mixed", MFD_CLOEXEC);

	if (mfd < 0) {
		snprintf(j->why, WHY, "memfd_create: %s", strerror(errno));
		free(b);
		return NULL;
	}
	for (int i = 0; b && done < j->bytes; i++) {
		size_t len = 1 + rnd(&x) % (128 * KIB), put = 0;

		if (len > j->bytes - done)
			len = (size_t)(j->bytes - done);
		pat_fill(b, len, j->seed, done);
		while (put < len) {
			ssize_t w;

			if (i % 4 == 0) {
				w = write(j->fd, b + put, len - put);
			} else if (i % 4 == 1) {
				w = ri2n_send(j->fd, b + put, len - put, MSG_NOSIGNAL);
			} else if (i % 4 == 2) {
				size_t h = (len - put) / 2;
				struct iovec v[2] = { { b + put, h }, { b + put + h, len - put - h } };

				w = ri2n_writev(j->fd, v, 2);
			} else {
				w = send_by_sendfile(j->fd, mfd, b + put, len - put);
			}
			if (w <= 0 && !(w < 0 && errno == EINTR)) {
				snprintf(j->why, WHY, "%s after %" PRIu64 " bytes: %zd (%s)",
					 mixed_way[i % 4], done + put, w, strerror(errno));
				free(b);
				close(mfd);
				return NULL;
			}
			if (w > 0)
				put += (size_t)w;
		}
		done += len;
	}
	close(mfd);
	j->rc = b ? 0 : -1;
	free(b);
	return NULL;
}

/*
 * Receives n bytes: read() after poll() (plain_only), else read(),
 * ri2n_recv() and ri2n_readv() in turn; every byte checked.
 */
static int mixed_read(int fd, uint32_t seed, uint64_t n, int plain_only, char *why)
{
	uint8_t *b = malloc(128 * KIB);
	uint64_t done = 0;
	uint32_t x = seed * 40503u | 1;
	int rc = -1;

	for (int i = 0; b && done < n; i++) {
		size_t len = 1 + rnd(&x) % (128 * KIB);
		int how = plain_only ? 0 : i % 3;
		ssize_t r;

		if (how == 0) {
			short ev = wait_fd(fd, POLLIN, 10000);

			if (!(ev & POLLIN)) {
				snprintf(why, WHY, "poll: not readable within 10 s after %" PRIu64
					 " of %" PRIu64 " bytes (revents %#x)", done, n, ev);
				goto out;
			}
			r = read(fd, b, len);
		} else if (how == 1) {
			r = ri2n_recv(fd, b, len, 0);
		} else {
			size_t h = len / 3;
			struct iovec v[2] = { { b, h }, { b + h, len - h } };

			r = ri2n_readv(fd, v, 2);
		}
		if (r < 0 && (errno == EINTR || (how == 0 && errno == EAGAIN)))
			continue;
		if (r <= 0) {
			snprintf(why, WHY, "%s after %" PRIu64 " bytes: %zd (%s)",
				 how == 0 ? "read" : how == 1 ? "ri2n_recv" : "ri2n_readv", done, r,
				 r < 0 ? strerror(errno) : "end of stream");
			goto out;
		}
		if ((uint64_t)r > n - done || pat_check(b, (size_t)r, seed, done) >= 0) {
			snprintf(why, WHY, "%s: wrong bytes near %" PRIu64,
				 how == 0 ? "read" : how == 1 ? "ri2n_recv" : "ri2n_readv", done);
			goto out;
		}
		done += (uint64_t)r;
	}
	rc = b ? 0 : -1;
out:
	free(b);
	return rc;
}

/*
 * Plain write() and fast sends interleaved on one side, plain read() and
 * fast receives on the other: one stream, in order.  Then a writer that
 * only sends fast and a reader that only polls and reads: bytes nobody
 * waits for inline reach the descriptor.  Then a fast receive that leaves
 * bytes behind: poll sees them, read gets them.
 */
void test_fast_mixed_paths(void **state)
{
	struct job w;
	char why[WHY];
	uint8_t b[16 * 1024];
	int c, s, avail;

	(void)state;
	fast_pair(&c, &s);
	w = (struct job){ .fd = c, .seed = 1501, .bytes = 16 * MIB };
	job_start(&w, job_mixed_writer);
	must(mixed_read(s, 1501, 16 * MIB, 0, why), "mixed reader", why);
	job_join(&w, "mixed writer");

	w = (struct job){ .fd = s, .seed = 1502, .bytes = 8 * MIB, .chunk = 100 * KIB };
	job_start(&w, job_send);
	must(mixed_read(c, 1502, 8 * MIB, 1, why), "plain reader of fast sends", why);
	job_join(&w, "fast sender");

	/* one fast receive takes 1 byte; the other 16383 go to the descriptor */
	must(send_pat(c, 1503, 0, sizeof(b), sizeof(b), 0, why), "send", why);
	assert_int_equal(ri2n_recv(s, b, 1, 0), 1);
	assert_int_equal(pat_check(b, 1, 1503, 0), -1);
	assert_true(wait_fd(s, POLLIN, 5000) & POLLIN);
	{
		uint64_t end = now_ms() + 5000;

		do
			assert_int_equal(ioctl(s, FIONREAD, &avail), 0);
		while (avail < (int)sizeof(b) - 1 && now_ms() < end && usleep(1000) == 0);
	}
	assert_int_equal(avail, sizeof(b) - 1);
	assert_int_equal(read(s, b, sizeof(b)), sizeof(b) - 1);
	assert_int_equal(pat_check(b, sizeof(b) - 1, 1503, 1), -1);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- 4. many threads on one connection ---- */

enum { CC_SENDERS = 2, CC_RECORDS = 150, CC_MAXBODY = 64 * 1024 };

struct rec_hdr {
	uint32_t magic, tid, seq, len;
};
#define REC_MAGIC 0x72693266u

/* One direction of the shared connection: its senders' and receivers' locks and tally. */
struct cc_dir {
	int tx_fd, rx_fd;
	uint32_t seed0;
	pthread_mutex_t tx_mu, rx_mu;
	uint32_t next_seq[CC_SENDERS]; /* (rx_mu) */
	uint64_t off[CC_SENDERS];      /* (rx_mu) pattern offset per sender */
	int records;                   /* (rx_mu) received so far */
	int failed;                    /* (rx_mu) a receiver gave up: the others stop */
};

struct cc_thread {
	struct job j;
	struct cc_dir *d;
	uint32_t tid;
};

/* Sends CC_RECORDS records (header and body in one ri2n_writev) under the sending lock. */
static void *cc_sender(void *arg)
{
	struct cc_thread *t = arg;
	uint8_t *body = malloc(CC_MAXBODY);
	uint32_t x = 77 + t->tid * 1000 + t->d->seed0;
	uint64_t off = 0;

	for (uint32_t seq = 0; body && seq < CC_RECORDS; seq++) {
		struct rec_hdr h = { REC_MAGIC, t->tid, seq, 1 + rnd(&x) % CC_MAXBODY };
		struct iovec v[2] = { { &h, sizeof(h) }, { body, h.len } };
		ssize_t w;

		pat_fill(body, h.len, t->d->seed0 + t->tid, off);
		pthread_mutex_lock(&t->d->tx_mu);
		w = ri2n_writev(t->d->tx_fd, v, 2);
		pthread_mutex_unlock(&t->d->tx_mu);
		if (w != (ssize_t)(sizeof(h) + h.len)) {
			snprintf(t->j.why, WHY, "sender %u record %u: ri2n_writev %zd (%s)", t->tid,
				 seq, w, w < 0 ? strerror(errno) : "short");
			free(body);
			return NULL;
		}
		off += h.len;
	}
	t->j.rc = body ? 0 : -1;
	free(body);
	return NULL;
}

/* One record under the receiving lock; 1 when all are in, 0 for more, -1 on an error. */
static int cc_recv_one(struct cc_thread *t, uint8_t *body)
{
	struct cc_dir *d = t->d;
	struct rec_hdr h;
	ssize_t r;

	if (d->failed)
		return -1;
	if (d->records == CC_SENDERS * CC_RECORDS)
		return 1;
	r = ri2n_recv(d->rx_fd, &h, sizeof(h), MSG_WAITALL);
	if (r != sizeof(h) || h.magic != REC_MAGIC || h.tid >= CC_SENDERS || h.len == 0 ||
	    h.len > CC_MAXBODY || h.seq != d->next_seq[h.tid % CC_SENDERS]) {
		snprintf(t->j.why, WHY, "receiver %u, record %d: header %zd (%s): magic %#x "
			 "sender %u seq %u len %u", t->tid, d->records, r,
			 r < 0 ? strerror(errno) : "", h.magic, h.tid, h.seq, h.len);
		return -1;
	}
	r = ri2n_recv(d->rx_fd, body, h.len, MSG_WAITALL);
	if (r != (ssize_t)h.len || pat_check(body, h.len, d->seed0 + h.tid, d->off[h.tid]) >= 0) {
		snprintf(t->j.why, WHY, "receiver %u: body of sender %u record %u: %zd of %u "
			 "bytes (%s)", t->tid, h.tid, h.seq, r, h.len,
			 r < 0 ? strerror(errno) : "wrong bytes or short");
		return -1;
	}
	d->next_seq[h.tid]++;
	d->off[h.tid] += h.len;
	d->records++;
	return 0;
}

static void *cc_receiver(void *arg)
{
	struct cc_thread *t = arg;
	uint8_t *body = malloc(CC_MAXBODY);
	int rc = body ? 0 : -1;

	while (rc == 0) {
		pthread_mutex_lock(&t->d->rx_mu);
		rc = cc_recv_one(t, body);
		if (rc < 0)
			t->d->failed = 1;
		pthread_mutex_unlock(&t->d->rx_mu);
	}
	t->j.rc = rc == 1 ? 0 : -1;
	if (rc == -1 && !strcmp(t->j.why, "did not finish"))
		snprintf(t->j.why, WHY, "stopped: another receiver failed");
	free(body);
	return NULL;
}

/*
 * One shared connection, both ways at once: per direction two threads send
 * records (a header with sender, sequence number and length, then a pattern
 * body; one sending lock so records do not interleave) and two threads
 * receive them (one receiving lock per record).  Beside it, a second
 * connection streams both ways with no locks at all.  Every record arrives
 * once, in each sender's order, with every byte right; nothing hangs.
 */
void test_fast_concurrent(void **state)
{
	static struct cc_dir d[2];
	static struct cc_thread tx[2][CC_SENDERS], rx[2][2];
	struct job sx[4];
	int c, s, c2, s2;

	(void)state;
	fast_pair(&c, &s);
	fast_pair(&c2, &s2);
	for (int k = 0; k < 2; k++) {
		d[k] = (struct cc_dir){ .tx_fd = k ? s : c, .rx_fd = k ? c : s,
					.seed0 = 1600 + 10 * (uint32_t)k };
		pthread_mutex_init(&d[k].tx_mu, NULL);
		pthread_mutex_init(&d[k].rx_mu, NULL);
	}
	/* the lock-free pair: random-size fast calls, each way */
	sx[0] = (struct job){ .fd = c2, .seed = 1651, .bytes = 8 * MIB, .chunk = 24 * KIB };
	sx[1] = (struct job){ .fd = s2, .seed = 1651, .bytes = 8 * MIB, .chunk = 40 * KIB };
	sx[2] = (struct job){ .fd = s2, .seed = 1652, .bytes = 8 * MIB, .chunk = 300 * KIB };
	sx[3] = (struct job){ .fd = c2, .seed = 1652, .bytes = 8 * MIB, .chunk = 7 * KIB,
			      .flags = MSG_WAITALL };
	for (int i = 0; i < 4; i++)
		job_start(&sx[i], i & 1 ? job_recv : job_send);
	for (int k = 0; k < 2; k++) {
		for (uint32_t i = 0; i < CC_SENDERS; i++) {
			tx[k][i] = (struct cc_thread){ .d = &d[k], .tid = i };
			job_start(&tx[k][i].j, cc_sender);
		}
		for (uint32_t i = 0; i < 2; i++) {
			rx[k][i] = (struct cc_thread){ .d = &d[k], .tid = i };
			job_start(&rx[k][i].j, cc_receiver);
		}
	}
	/* job_start passed &tx.j, which is the struct's first member: the thread's argument */
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < CC_SENDERS; i++)
			pthread_join(tx[k][i].j.th, NULL);
		for (int i = 0; i < 2; i++)
			pthread_join(rx[k][i].j.th, NULL);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(sx[i].th, NULL);
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < CC_SENDERS; i++)
			if (tx[k][i].j.rc)
				fail_msg("direction %d: %s", k, tx[k][i].j.why);
		for (int i = 0; i < 2; i++)
			if (rx[k][i].j.rc)
				fail_msg("direction %d: %s", k, rx[k][i].j.why);
		assert_int_equal(d[k].records, CC_SENDERS * CC_RECORDS);
		pthread_mutex_destroy(&d[k].tx_mu);
		pthread_mutex_destroy(&d[k].rx_mu);
	}
	for (int i = 0; i < 4; i++)
		if (sx[i].rc)
			fail_msg("the lock-free connection, %s %d: %s", i & 1 ? "receiver" : "sender",
				 i / 2, sx[i].why);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(c2), 0);
	assert_int_equal(ri2n_close(s2), 0);
}

/* ---- 5. non-blocking calls and timeouts ---- */

/* ri2n_send with MSG_DONTWAIT until it has said EAGAIN for 200 ms running; bytes taken. */
static uint64_t fill_until_full(int fd, uint32_t seed, uint64_t off, int flags)
{
	static uint8_t b[256 * 1024];
	uint64_t sent = 0, full_since = 0, end = now_ms() + 30000;

	for (;;) {
		ssize_t w;

		pat_fill(b, sizeof(b), seed, off + sent);
		w = ri2n_send(fd, b, sizeof(b), flags | MSG_NOSIGNAL);
		if (w > 0) {
			sent += (uint64_t)w;
			full_since = 0;
			continue;
		}
		if (w == 0 || errno != EAGAIN)
			fail_msg("ri2n_send while filling: %zd (%s)", w, strerror(errno));
		if (!full_since)
			full_since = now_ms();
		else if (now_ms() - full_since >= 200)
			return sent;
		if (now_ms() > end)
			fail_msg("the connection never stayed full (after %" PRIu64 " bytes)", sent);
		usleep(10 * 1000);
	}
}

/*
 * MSG_DONTWAIT and O_NONBLOCK: EAGAIN with nothing to read and when the
 * send ring is full (then every byte taken arrives); SO_RCVTIMEO and
 * SO_SNDTIMEO end a blocking call with EAGAIN (or a short send) after about
 * that long.
 */
void test_fast_nonblocking(void **state)
{
	uint8_t b[256 * 1024];
	uint64_t sent, t0;
	ssize_t r;
	char why[WHY];
	int c, s, err;

	(void)state;
	fast_pair(&c, &s);
	expect_fail((int)ri2n_recv(c, b, sizeof(b), MSG_DONTWAIT), EAGAIN);
	expect_fail((int)ri2n_recv(s, b, 1, MSG_DONTWAIT | MSG_WAITALL), EAGAIN);
	set_nonblock(s, 1);
	expect_fail((int)ri2n_recv(s, b, sizeof(b), 0), EAGAIN);
	expect_fail((int)ri2n_readv(s, &(struct iovec){ b, 10 }, 1), EAGAIN);
	/* what arrives later is there for a non-blocking call */
	assert_int_equal(ri2n_send(c, "now", 3, MSG_DONTWAIT | MSG_NOSIGNAL), 3);
	t0 = now_ms();
	while ((r = ri2n_recv(s, b, sizeof(b), 0)) < 0 && errno == EAGAIN && now_ms() - t0 < 5000)
		usleep(1000);
	assert_int_equal(r, 3);
	assert_memory_equal(b, "now", 3);
	set_nonblock(s, 0);

	/* the peer reads nothing: the send side fills up, MSG_DONTWAIT then O_NONBLOCK */
	sent = fill_until_full(c, 1701, 0, MSG_DONTWAIT);
	set_nonblock(c, 1);
	expect_fail((int)ri2n_send(c, b, sizeof(b), MSG_NOSIGNAL), EAGAIN);
	expect_fail((int)ri2n_writev(c, &(struct iovec){ b, sizeof(b) }, 1), EAGAIN);
	set_nonblock(c, 0);
	/* SO_SNDTIMEO: a blocking send that cannot finish ends after the timeout */
	set_timeo(c, SO_SNDTIMEO, 300);
	for (int tries = 0;; tries++) {
		pat_fill(b, sizeof(b), 1701, sent);
		t0 = now_ms();
		r = ri2n_send(c, b, sizeof(b), MSG_NOSIGNAL);
		err = errno;
		t0 = now_ms() - t0;
		if (r != (ssize_t)sizeof(b) || tries == 20)
			break;
		/*
		 * Room came after the fill stayed full 200 ms: the receive pool
		 * is the process's, and connections of the tests before gave
		 * theirs back late (once, at -j2).  Fill on; the timeout is
		 * what is checked.
		 */
		sent += (uint64_t)r;
	}
	print_message("%" PRIu64 " bytes in flight when full; a blocked send returned %zd after %"
		      PRIu64 " ms\n", sent, r, t0);
	if (!(r == -1 && err == EAGAIN) && !(r > 0 && r < (ssize_t)sizeof(b)))
		fail_msg("a send past SO_SNDTIMEO: %zd (%s), want -1 EAGAIN or a short count", r,
			 strerror(err));
	assert_true(t0 >= 295);
	assert_true(t0 < 5000);
	if (r > 0)
		sent += (uint64_t)r;
	set_timeo(c, SO_SNDTIMEO, FAST_TIMEO_S * 1000);
	/* every byte taken arrives */
	must(recv_pat(s, 1701, 0, sent, 200 * KIB, 0, why), "after the fill", why);
	expect_fail((int)ri2n_recv(s, b, 1, MSG_DONTWAIT), EAGAIN);

	/* SO_RCVTIMEO: a blocking receive with nothing coming ends after the timeout */
	set_timeo(s, SO_RCVTIMEO, 300);
	t0 = now_ms();
	r = ri2n_recv(s, b, sizeof(b), 0);
	err = errno;
	t0 = now_ms() - t0;
	if (r != -1 || err != EAGAIN)
		fail_msg("a receive past SO_RCVTIMEO: %zd (%s), want -1 EAGAIN", r, strerror(err));
	assert_true(t0 >= 295);
	assert_true(t0 < 5000);
	/* with MSG_WAITALL and part of the bytes: the part, after the timeout */
	assert_int_equal(ri2n_send(c, "abc", 3, MSG_NOSIGNAL), 3);
	t0 = now_ms();
	r = ri2n_recv(s, b, 10, MSG_WAITALL);
	t0 = now_ms() - t0;
	assert_int_equal(r, 3);
	assert_memory_equal(b, "abc", 3);
	assert_true(t0 < 5000);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- 6. a receiver blocked inline: timers, a dead peer, a clean close ---- */

struct ka {
	uint64_t keepalives;
	uint32_t down;
	int up, nrails;
};

static struct ka ka_of(int fd)
{
	struct ri2n_stats st;
	struct ka k = { 0 };

	assert_int_equal(ri2n_stats(fd, &st), 0);
	assert_string_equal(st.state, "established");
	k.nrails = st.nrails;
	for (int i = 0; i < st.nrails; i++) {
		k.keepalives += st.rail[i].keepalives;
		k.down += st.rail[i].down_events;
		k.up += st.rail[i].up;
	}
	return k;
}

static void *job_late_send(void *arg)
{
	struct job *j = arg;

	usleep((useconds_t)j->off * 1000);
	j->rc = send_pat(j->fd, j->seed, 0, j->bytes, j->chunk, 0, j->why);
	return NULL;
}

/*
 * Blocked in ri2n_recv for 2.5 s of silence: the timers keep running (both
 * ends send keepalives and take the other's; no rail goes down), then the
 * peer's bytes wake the receiver.
 */
static void blocked_through_timers(void)
{
	struct job late;
	struct ka c0, s0, c1, s1;
	uint64_t t0;
	char why[WHY];
	int c, s;

	fast_pair(&c, &s);
	must(send_pat(c, 1801, 0, 4 * KIB, 4 * KIB, 0, why), "warm-up", why);
	must(recv_pat(s, 1801, 0, 4 * KIB, 4 * KIB, MSG_WAITALL, why), "warm-up", why);
	usleep(200 * 1000); /* rails up, first keepalives counted */
	c0 = ka_of(c);
	s0 = ka_of(s);
	late = (struct job){ .fd = s, .seed = 1802, .bytes = 3000, .chunk = 3000, .off = 2500 };
	t0 = now_ms();
	job_start(&late, job_late_send);
	must(recv_pat(c, 1802, 0, 3000, 3000, 0, why), "blocked receive", why);
	t0 = now_ms() - t0;
	job_join(&late, "late sender");
	assert_true(t0 >= 2400);
	c1 = ka_of(c);
	s1 = ka_of(s);
	print_message("blocked %" PRIu64 " ms: keepalives %" PRIu64 " -> %" PRIu64 " (receiver), %"
		      PRIu64 " -> %" PRIu64 " (sender); rails down %u/%u\n", t0, c0.keepalives,
		      c1.keepalives, s0.keepalives, s1.keepalives, c1.down - c0.down,
		      s1.down - s0.down);
	/*
	 * Keepalives on 2 rails for 2.5 s: 17 and 18 each way in a release
	 * build, 6 and 4 once under TSan (its timers fire late, and a stall of
	 * the process sent heartbeats instead).  At least 2: the timers ran
	 * while the receiver was blocked; the rails' verdicts are checked below.
	 */
	assert_true(c1.keepalives >= c0.keepalives + 2);
	assert_true(s1.keepalives >= s0.keepalives + 2);
	assert_int_equal(c1.down, c0.down);
	assert_int_equal(s1.down, s0.down);
	assert_int_equal(c1.up, c1.nrails);
	assert_int_equal(s1.up, s1.nrails);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* In a child: listens, says its port on wfd, accepts, sends `bytes` fast, then waits to die. */
__attribute__((noreturn)) static void death_child(int wfd, uint64_t bytes)
{
	char why[WHY];
	int s = child_accept_one(wfd);

	if (send_pat(s, 1811, 0, bytes, 64 * KIB, 0, why))
		_exit(14);
	for (;;)
		pause(); /* until SIGKILL */
}

static void *job_kill_later(void *arg)
{
	struct job *j = arg;

	usleep(300 * 1000); /* the receiver is blocked by then */
	j->rc = kill((pid_t)j->seed, SIGKILL);
	if (j->rc)
		snprintf(j->why, WHY, "kill: %s", strerror(errno));
	return NULL;
}

/*
 * The peer process is killed while the receiver is blocked in ri2n_recv:
 * the bytes it sent arrive, then -1 with ECONNRESET once its host answers
 * with port unreachable on both rails, long before the dead-peer timeout
 * (10 s here); never 0, never a hang.
 */
#define KILLED_DEAD_PEER_MS 10000
static void blocked_through_death(void)
{
	struct sockaddr_in a;
	struct job killer;
	uint16_t port = 0;
	uint64_t t0;
	uint8_t b[4096];
	char why[WHY];
	ssize_t r;
	pid_t pid;
	int pp[2], fd, err, st;

	assert_int_equal(pipe(pp), 0);
	pid = fork_child();
	if (pid == 0) {
		close(pp[0]);
		death_child(pp[1], 200 * KIB);
	}
	close(pp[1]);
	assert_true(wait_fd(pp[0], POLLIN, 10000) & POLLIN);
	assert_int_equal(read(pp[0], &port, sizeof(port)), sizeof(port));
	close(pp[0]);
	fd = ri2n_socket();
	assert_true(fd >= 0);
	set_opt(fd, RI2N_DEAD_PEER_MS, KILLED_DEAD_PEER_MS);
	set_opt(fd, RI2N_CONNECT_TIMEOUT_MS, 10000);
	a = sin_of(RAIL1, port);
	if (ri2n_connect(fd, SA(&a), sizeof(a)) < 0)
		fail_msg("connect to the child at %s: %s", sin_str(&a), strerror(errno));
	bound(fd);
	must(recv_pat(fd, 1811, 0, 200 * KIB, 64 * KIB, 0, why), "before the kill", why);
	killer = (struct job){ .seed = (uint32_t)pid };
	job_start(&killer, job_kill_later);
	t0 = now_ms();
	r = ri2n_recv(fd, b, sizeof(b), 0);
	err = errno;
	t0 = now_ms() - t0;
	job_join(&killer, "killer");
	st = reap(pid, 5000);
	assert_true(WIFSIGNALED(st));
	print_message("peer killed while blocked: ri2n_recv %zd (%s) after %" PRIu64 " ms "
		      "(dead-peer timeout %d ms, kill at 300 ms)\n", r, r < 0 ? strerror(err) : "",
		      t0, KILLED_DEAD_PEER_MS);
	if (r == 0)
		fail_msg("a clean end of stream from a peer that was killed");
	if (r > 0)
		fail_msg("%zd bytes nobody sent", r);
	if (err == EAGAIN)
		fail_msg("still blocked %" PRIu64 " ms after the peer died: a hang", t0);
	if (err != ECONNRESET)
		fail_msg("ri2n_recv failed with %s, want ECONNRESET", strerror(err));
	/* the port unreachable told, not the dead-peer timeout */
	assert_true(t0 + 1000 < 300 + KILLED_DEAD_PEER_MS);
	r = ri2n_send(fd, "x", 1, MSG_NOSIGNAL);
	err = errno;
	if (r != -1 || (err != EPIPE && err != ECONNRESET))
		fail_msg("ri2n_send on a dead connection: %zd (%s), want EPIPE or ECONNRESET", r,
			 strerror(err));
	assert_int_equal(ri2n_close(fd), 0);
}

static void *job_send_close(void *arg)
{
	struct job *j = arg;

	usleep(200 * 1000);
	j->rc = send_pat(j->fd, j->seed, 0, j->bytes, j->chunk, 0, j->why);
	if (ri2n_close(j->fd) && !j->rc) {
		snprintf(j->why, WHY, "ri2n_close: %s", strerror(errno));
		j->rc = -1;
	}
	return NULL;
}

/* The peer sends and closes while the receiver waits: every byte, then 0, again 0. */
static void blocked_through_close(void)
{
	struct job closer;
	uint8_t b[64];
	char why[WHY];
	int c, s;

	fast_pair(&c, &s);
	closer = (struct job){ .fd = c, .seed = 1821, .bytes = 300 * KIB, .chunk = 100 * KIB };
	job_start(&closer, job_send_close);
	must(recv_pat(s, 1821, 0, 300 * KIB, 64 * KIB, 0, why), "before the close", why);
	job_join(&closer, "closing peer");
	assert_int_equal(ri2n_recv(s, b, sizeof(b), 0), 0);
	assert_int_equal(ri2n_recv(s, b, sizeof(b), MSG_WAITALL), 0);
	assert_int_equal(ri2n_readv(s, &(struct iovec){ b, sizeof(b) }, 1), 0);
	assert_int_equal(get_so_error(s), 0);
	assert_int_equal(ri2n_close(s), 0);
}

void test_fast_blocked_receiver(void **state)
{
	(void)state;
	blocked_through_timers();
	blocked_through_close();
	blocked_through_death();
}

/* ---- 7. the descriptor shut down or closed under a blocked receiver ---- */

struct blocked {
	struct job j;
	ssize_t r;
	int err;
	int done; /* atomic */
	uint64_t t_ms;
};

static void *job_blocked_recv(void *arg)
{
	struct blocked *b = arg;
	uint8_t buf[128];
	uint64_t t0 = now_ms();

	b->r = ri2n_recv(b->j.fd, buf, sizeof(buf), 0);
	b->err = errno;
	b->t_ms = now_ms() - t0;
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Waits up to ms for the blocked thread; whether it returned. */
static int blocked_wait(struct blocked *b, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (!__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) && now_ms() < end)
		usleep(5 * 1000);
	return __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
}

/*
 * One thread blocked in ri2n_recv, another calls shutdown(SHUT_RDWR) (how 0)
 * or ri2n_close (how 1) on the descriptor: the blocked call returns within
 * 5 s (0, or -1 with EBADF/ECONNRESET/...), as a TCP receive does after
 * shutdown.  Returns whether it did; if not, the peer's byte ends the wait.
 */
static int close_under_receiver(int how, struct blocked *b, uint64_t *busy_ms)
{
	struct rusage ru0, ru1;
	int c, s, ok;

	fast_pair(&c, &s);
	set_timeo(s, SO_RCVTIMEO, 10000);
	*b = (struct blocked){ .j = { .fd = s } };
	job_start(&b->j, job_blocked_recv);
	usleep(300 * 1000);
	assert_false(__atomic_load_n(&b->done, __ATOMIC_ACQUIRE)); /* it waits */
	getrusage(RUSAGE_SELF, &ru0);
	if (how == 0)
		assert_int_equal(shutdown(s, SHUT_RDWR), 0);
	else
		assert_int_equal(ri2n_close(s), 0);
	ok = blocked_wait(b, 5000);
	getrusage(RUSAGE_SELF, &ru1);
	*busy_ms = (uint64_t)((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000 +
			      (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1000 +
			      (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000 +
			      (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1000);
	if (!ok)
		ri2n_send(c, "!", 1, MSG_NOSIGNAL | MSG_DONTWAIT); /* wakes a waiter, if it waits */
	pthread_join(b->j.th, NULL);
	print_message("%s under a blocked ri2n_recv: %s, it returned %zd (%s) after %" PRIu64
		      " ms; %" PRIu64 " ms of CPU meanwhile\n", how ? "ri2n_close" : "shutdown",
		      ok ? "returned" : "NO RETURN within 5 s", b->r,
		      b->r < 0 ? strerror(b->err) : "", b->t_ms, *busy_ms);
	ri2n_close(c);
	if (how == 0)
		ri2n_close(s);
	return ok;
}

void test_fast_shutdown_under_receiver(void **state)
{
	struct blocked b;
	uint64_t cpu;
	int ok;

	(void)state;
	ok = close_under_receiver(0, &b, &cpu);
	regression(ok, "shutdown(SHUT_RDWR) does not end a ri2n_recv blocked on the descriptor "
		  "(returned %zd %s after %" PRIu64 " ms, %" PRIu64 " ms CPU in 5 s)", b.r,
		  b.r < 0 ? strerror(b.err) : "", b.t_ms, cpu);
	if (b.r > 0)
		fail_msg("%zd bytes after shutdown", b.r);
	if (b.r < 0 && b.err == EAGAIN)
		fail_msg("EAGAIN: the receive ran into its timeout");
}

void test_fast_close_under_receiver(void **state)
{
	struct blocked b;
	uint64_t cpu;
	int ok;

	(void)state;
	ok = close_under_receiver(1, &b, &cpu);
	regression(ok, "ri2n_close from another thread does not end a ri2n_recv blocked on the "
		  "descriptor (returned %zd %s after %" PRIu64 " ms)", b.r,
		  b.r < 0 ? strerror(b.err) : "", b.t_ms);
	if (b.r > 0)
		fail_msg("%zd bytes after close", b.r);
	if (b.r < 0 && b.err == EAGAIN)
		fail_msg("EAGAIN: the receive ran into its timeout");
}

/* ---- 8. fork ---- */

/*
 * In the child: the inherited connection c is the parent engine's (ri2n
 * calls on it say ENOTSOCK, docs/API.md "fork"; plain calls work); then a
 * connection of its own, used with the fast calls both ways.  exit(0), or
 * _exit(code) with the reason on stderr.
 */
__attribute__((noreturn)) static void fast_fork_child(int c, int s, int l, uint16_t port)
{
	struct sockaddr_in a = sin_of(RAIL1, port);
	uint8_t b[64];
	char why[WHY];
	int nc;

	errno = 0;
	if (ri2n_send(c, b, 1, MSG_NOSIGNAL) != -1 || errno != ENOTSOCK) {
		fprintf(stderr, "fork child: ri2n_send on the inherited connection: %s\n",
			strerror(errno));
		_exit(10);
	}
	errno = 0;
	if (ri2n_recv(c, b, 1, MSG_DONTWAIT) != -1 || errno != ENOTSOCK)
		_exit(11);
	pat_fill(b, 64, 1902, 0);
	if (write(c, b, 64) != 64) /* the parent's engine carries it */
		_exit(12);
	close(c);
	close(s);
	close(l);
	nc = ri2n_socket();
	if (nc < 0 || ri2n_connect(nc, SA(&a), sizeof(a)) < 0)
		_exit(13);
	if (send_pat(nc, 1903, 0, 2 * MIB, 256 * KIB, 0, why) ||
	    recv_pat(nc, 1904, 0, 1 * MIB, 100 * KIB, MSG_WAITALL, why) ||
	    recv_pat(nc, 1904, MIB, 1 * MIB, 100 * KIB, 0, why)) {
		fprintf(stderr, "fork child: %s\n", why);
		_exit(14);
	}
	if (ri2n_recv(nc, b, 1, 0) != 0) /* the parent closed after its bytes */
		_exit(15);
	ri2n_close(nc);
	exit(0);
}

/*
 * A connection made before fork: in the child the fast calls refuse it
 * (ENOTSOCK, as every ri2n call on an inherited descriptor) and plain writes
 * reach the parent, whose fast calls go on working on it; a connection the
 * child makes works with the fast calls (the child's own engine).
 */
void test_fast_fork(void **state)
{
	struct sockaddr_in peer;
	char why[WHY];
	uint16_t port;
	int l, c, s, n, st;
	pid_t pid;

	(void)state;
	l = make_listener(NULL, 2, &port);
	c = connect_to(port);
	s = accept_within(l, 10000, &peer);
	bound(c);
	bound(s);
	must(send_pat(c, 1901, 0, 64 * KIB, 64 * KIB, 0, why), "before fork", why);
	must(recv_pat(s, 1901, 0, 64 * KIB, 64 * KIB, 0, why), "before fork", why);
	pid = fork_child();
	if (pid == 0)
		fast_fork_child(c, s, l, port);
	must(recv_pat(s, 1902, 0, 64, 64, MSG_WAITALL, why), "the child's write on the inherited "
	     "connection", why);
	n = accept_within(l, 15000, &peer);
	bound(n);
	must(recv_pat(n, 1903, 0, 2 * MIB, 300 * KIB, 0, why), "from the child", why);
	must(send_pat(n, 1904, 0, 2 * MIB, 512 * KIB, 0, why), "to the child", why);
	assert_int_equal(ri2n_close(n), 0);
	st = reap(pid, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the forked child failed: status %#x (exit %d)", st,
			 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	/* the parent's connection outlives the child's copy */
	must(send_pat(s, 1905, 0, 256 * KIB, 64 * KIB, 0, why), "after the child", why);
	must(recv_pat(c, 1905, 0, 256 * KIB, 64 * KIB, MSG_WAITALL, why), "after the child", why);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	assert_int_equal(ri2n_close(l), 0);
}

/* ---- 9. errors and RI2N_BUSY_POLL_US ---- */

/*
 * Not a ri2n descriptor: ENOTSOCK (a pipe), EBADF (-1, a closed number).
 * A socket never connected (new or listening): what TCP says, EPIPE for a
 * send and ENOTCONN for a receive, at once, blocking or not.  After
 * shutdown(SHUT_WR): EPIPE, and the peer reads 0 after the bytes.
 */
void test_fast_errors(void **state)
{
	uint8_t b[64] = { 0 };
	struct iovec v = { b, sizeof(b) };
	uint64_t t0;
	char why[WHY];
	int p[2], fd, c, s;

	(void)state;
	assert_int_equal(pipe(p), 0);
	expect_fail((int)ri2n_send(p[1], b, 1, MSG_NOSIGNAL), ENOTSOCK);
	expect_fail((int)ri2n_recv(p[0], b, 1, MSG_DONTWAIT), ENOTSOCK);
	expect_fail((int)ri2n_writev(p[1], &v, 1), ENOTSOCK);
	expect_fail((int)ri2n_readv(p[0], &v, 1), ENOTSOCK);
	expect_fail((int)ri2n_send(-1, b, 1, 0), EBADF);
	expect_fail((int)ri2n_recv(-1, b, 1, 0), EBADF);
	expect_fail((int)ri2n_writev(-1, &v, 1), EBADF);
	expect_fail((int)ri2n_readv(-1, &v, 1), EBADF);
	close(p[0]);
	close(p[1]);
	expect_fail((int)ri2n_send(p[1], b, 1, MSG_NOSIGNAL), EBADF); /* closed */
	expect_fail((int)ri2n_recv(p[0], b, 1, 0), EBADF);

	fd = ri2n_socket();
	assert_true(fd >= 0);
	expect_fail((int)ri2n_writev(fd, &v, -1), EINVAL);
	expect_fail((int)ri2n_readv(fd, &v, -1), EINVAL);
	expect_fail((int)ri2n_send(fd, b, 1, MSG_DONTWAIT | MSG_NOSIGNAL), EPIPE);
	expect_fail((int)ri2n_recv(fd, b, 1, MSG_DONTWAIT), ENOTCONN);
	t0 = now_ms();
	expect_fail((int)ri2n_send(fd, b, 1, MSG_NOSIGNAL), EPIPE);
	expect_fail((int)ri2n_recv(fd, b, 1, 0), ENOTCONN);
	assert_true(now_ms() - t0 < 5000); /* at once, never a wait */
	assert_int_equal(ri2n_close(fd), 0);
	{
		uint16_t port;
		int l = make_listener(RAIL1, 4, &port);

		expect_fail((int)ri2n_send(l, b, 1, MSG_NOSIGNAL), EPIPE);
		expect_fail((int)ri2n_recv(l, b, 1, 0), ENOTCONN);
		assert_int_equal(ri2n_close(l), 0);
	}

	fast_pair(&c, &s);
	must(send_pat(c, 2001, 0, 10 * KIB, 10 * KIB, 0, why), "before shutdown", why);
	assert_int_equal(shutdown(c, SHUT_WR), 0);
	expect_fail((int)ri2n_send(c, b, 1, MSG_NOSIGNAL), EPIPE);
	expect_fail((int)ri2n_writev(c, &v, 1), EPIPE);
	expect_fail((int)ri2n_send(c, b, 1, MSG_NOSIGNAL | MSG_DONTWAIT), EPIPE);
	must(recv_pat(s, 2001, 0, 10 * KIB, 4 * KIB, 0, why), "after shutdown", why);
	assert_int_equal(ri2n_recv(s, b, sizeof(b), 0), 0);
	/* the other way still works */
	assert_int_equal(ri2n_send(s, "back", 4, MSG_NOSIGNAL), 4);
	assert_int_equal(ri2n_recv(c, b, 4, MSG_WAITALL), 4);
	assert_memory_equal(b, "back", 4);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/*
 * libri2n's own read/write (ri2n_plain.c) on a number that was a ri2n
 * socket, closed with libc's close() behind ri2n's back and reused for a
 * pipe: the bytes are the pipe's, both ways, and the connection's peer gets
 * none of them.
 */
void test_plain_number_reused(void **state)
{
	char b[16] = { 0 };
	int c, s, p[2];

	(void)state;
	fast_pair(&c, &s);
	assert_int_equal(write(c, "ri2n", 4), 4);
	assert_int_equal(read(s, b, 4), 4);
	assert_memory_equal(b, "ri2n", 4);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(close(c), 0); /* not ri2n_close: ri2n's table still names c */
	assert_int_equal(dup2(p[1], c), c);
	assert_int_equal(write(c, "pipe", 4), 4);
	assert_int_equal(read(p[0], b, sizeof(b)), 4);
	assert_memory_equal(b, "pipe", 4);
	assert_int_equal(dup2(p[0], c), c); /* now the read end */
	assert_int_equal(write(p[1], "back", 4), 4);
	assert_int_equal(read(c, b, sizeof(b)), 4);
	assert_memory_equal(b, "back", 4);
	/* the peer: an end (EOF or a reset), never "pipe" */
	set_timeo(s, SO_RCVTIMEO, 5000);
	memset(b, 0, sizeof(b));
	if (read(s, b, sizeof(b)) > 0)
		fail_msg("the closed connection's peer read \"%.16s\"", b);
	close(c);
	close(p[0]);
	close(p[1]);
	assert_int_equal(ri2n_close(s), 0);
}

/*
 * RI2N_BUSY_POLL_US: -1 (adaptive) by default, set and read back (also connected),
 * EINVAL below -1, above 1 s or with a short length; with busy polling on,
 * ping-pong and bulk still move every byte, also while it changes.
 */
void test_fast_busy_poll(void **state)
{
	struct job rx;
	int v, fd, c, s;
	socklen_t len = sizeof(v);
	char why[WHY];

	(void)state;
	fd = ri2n_socket();
	assert_true(fd >= 0);
	assert_int_equal(get_opt(fd, RI2N_BUSY_POLL_US), -1); /* default: adaptive */
	set_opt(fd, RI2N_BUSY_POLL_US, 0);
	assert_int_equal(get_opt(fd, RI2N_BUSY_POLL_US), 0);
	set_opt(fd, RI2N_BUSY_POLL_US, 50);
	assert_int_equal(get_opt(fd, RI2N_BUSY_POLL_US), 50);
	set_opt(fd, RI2N_BUSY_POLL_US, 1000000);
	assert_int_equal(get_opt(fd, RI2N_BUSY_POLL_US), 1000000);
	v = -2;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_BUSY_POLL_US, &v, sizeof(v)), EINVAL);
	v = 1000001;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_BUSY_POLL_US, &v, sizeof(v)), EINVAL);
	v = 10;
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_BUSY_POLL_US, &v, 1), EINVAL);
	expect_fail(ri2n_setsockopt(fd, RI2N_SOL, RI2N_BUSY_POLL_US, NULL, sizeof(v)), EINVAL);
	len = 1;
	expect_fail(ri2n_getsockopt(fd, RI2N_SOL, RI2N_BUSY_POLL_US, &v, &len), EINVAL);
	assert_int_equal(get_opt(fd, RI2N_BUSY_POLL_US), 1000000); /* unchanged by the failures */
	assert_int_equal(ri2n_close(fd), 0);

	fast_pair(&c, &s);
	set_opt(c, RI2N_BUSY_POLL_US, 200); /* connected: still allowed */
	set_opt(s, RI2N_BUSY_POLL_US, 200);
	assert_int_equal(get_opt(c, RI2N_BUSY_POLL_US), 200);
	ping_pong(c, s, 2101);
	ping_pong(s, c, 2111);
	/* changed while a thread receives */
	rx = (struct job){ .fd = s, .seed = 2121, .bytes = 4 * MIB, .chunk = 2 * KIB };
	job_start(&rx, job_recv); /* small calls: it waits often */
	for (uint64_t off = 0; off < 4 * MIB; off += 256 * KIB) {
		set_opt(s, RI2N_BUSY_POLL_US, (int)(off / (256 * KIB)) % 3 == 0 ? 0 : (int)(off / (256 * KIB)) % 3 == 1 ? 100 : -1);
		must(send_pat(c, 2121, off, 256 * KIB, 64 * KIB, 0, why), "busy-poll bulk", why);
	}
	job_join(&rx, "busy-poll receiver");
	set_opt(c, RI2N_BUSY_POLL_US, 0);
	assert_int_equal(get_opt(c, RI2N_BUSY_POLL_US), 0);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

/* ---- 10. threads come and go ---- */

/* The process's descriptors; *efds: how many of them are eventfds. */
static int count_fds(int *efds)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64];
	int n = 0;

	assert_non_null(d);
	*efds = 0;
	while ((e = readdir(d))) {
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = 0;
			*efds += strstr(link, "eventfd") != NULL;
		}
	}
	closedir(d);
	return n - 1; /* the directory's own */
}

static void *job_wait_once(void *arg)
{
	struct job *j = arg;
	uint8_t b[8];
	ssize_t r = ri2n_recv(j->fd, b, sizeof(b), 0); /* waits inline: SO_RCVTIMEO 20 ms */

	j->rc = r == -1 && errno == EAGAIN ? 0 : -1;
	if (j->rc)
		snprintf(j->why, WHY, "ri2n_recv: %zd (%s), want EAGAIN", r, strerror(errno));
	return NULL;
}

/*
 * Threads that waited in a fast call and ended leave nothing behind: 32
 * threads in turn, each blocked once in ri2n_recv until its SO_RCVTIMEO,
 * do not change the process's descriptor count.
 */
void test_fast_thread_exit(void **state)
{
	enum { N = 32 };
	struct job j;
	int c, s, before, after, ev0, ev1;

	(void)state;
	fast_pair(&c, &s);
	set_timeo(s, SO_RCVTIMEO, 20);
	j = (struct job){ .fd = s };
	job_start(&j, job_wait_once); /* the first: whatever is made once per process */
	job_join(&j, "first waiter");
	before = count_fds(&ev0);
	for (int i = 0; i < N; i++) {
		j = (struct job){ .fd = s };
		job_start(&j, job_wait_once);
		job_join(&j, "waiter");
	}
	after = count_fds(&ev1);
	print_message("descriptors: %d before (%d eventfds), %d after (%d eventfds) %d threads "
		      "waited inline and ended\n", before, ev0, after, ev1, N);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
	regression(after <= before + 2,
		   "each thread that waits inline leaks its eventfd: %d descriptors more "
		   "(%d eventfds) after %d threads", after - before, ev1 - ev0, N);
}
