/*
 * stress_read.c - posix_stress's readers: one thread per stream takes bytes
 * by a path drawn at random for each call and checks every byte against the
 * record the writers' order defines.  The first wrong byte stops the run
 * with the offset, the bytes expected and got, where the bytes got really
 * belong (a record header seen early, or the pattern of another offset or
 * stream) and the writes around that offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ri2n.h>

#include "ri2n_kit.h"
#include "stress.h"

enum { RBUF = 256 * 1024, DIAG = 6144 };

struct reader {
	struct stream *st;
	int ep;             /* an epoll set holding rx */
	uint64_t rng;
	uint64_t off;       /* stream offset of the next byte */
	uint32_t seq;       /* the record expected next */
	uint8_t h[sizeof(struct rec)];
	size_t hn;          /* header bytes so far */
	struct rec cur;     /* the record whose payload comes */
	uint32_t left;      /* its payload bytes still to come */
	uint8_t *buf;
};

/* ---- diagnostics ---- */

static size_t hex(char *o, size_t ol, const uint8_t *b, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n && w + 4 < ol; i++)
		w += (size_t)snprintf(o + w, ol - w, "%02x%s", b[i], i % 8 == 7 ? " " : "");
	return w;
}

/* The offset in [lo, hi) of stream seed whose pattern is g[0..m), or UINT64_MAX. */
static uint64_t pattern_find(uint64_t seed, const uint8_t *g, size_t m, uint64_t lo, uint64_t hi)
{
	uint64_t key = kit_mix(seed);

	for (uint64_t x = lo; x < hi; x++) {
		size_t t = 0;

		while (t < m && g[t] == (uint8_t)(kit_pattern_word(key, (x + t) >> 3) >>
						   (8 * ((x + t) & 7))))
			t++;
		if (t == m)
			return x;
	}
	return UINT64_MAX;
}

/* Where the bytes got (g, m of them) came from, if they are some stream's pattern. */
static size_t explain_pattern(char *o, size_t ol, struct reader *rd, const uint8_t *g, size_t m,
			      uint64_t at)
{
	size_t w = 0;

	if (m < 8)
		return 0;
	m = m > 16 ? 16 : m;
	for (int i = 0; i < S.nstreams; i++) {
		struct stream *s = &S.st[i];
		uint64_t hi = atomic_load(&s->written) + MAX_PAYLOAD, lo, x;

		lo = s == rd->st ? (at > 8 * 1048576 ? at - 8 * 1048576 : 0)
				 : (hi > 8 * 1048576 ? hi - 8 * 1048576 : 0);
		if (s == rd->st && hi > at + 8 * 1048576)
			hi = at + 8 * 1048576;
		x = pattern_find(s->seed, g, m, lo, hi);
		if (x != UINT64_MAX)
			w += (size_t)snprintf(o + w, ol - w, "\n  the bytes got are stream %d's "
					      "offset %" PRIu64 " (%+" PRId64 " from the one expected)",
					      i, x, (int64_t)(x - at));
	}
	return w;
}

/* Record headers among the bytes got (b, n of them), decoded. */
static size_t explain_headers(char *o, size_t ol, const uint8_t *b, size_t n, uint64_t at)
{
	size_t w = 0;
	int shown = 0;

	for (size_t i = 0; i + sizeof(struct rec) <= n && shown < 4; i++) {
		struct rec h;

		memcpy(&h, b + i, sizeof(h));
		if (h.magic != REC_MAGIC)
			continue;
		w += (size_t)snprintf(o + w, ol - w, "\n  a record header arrived at offset %" PRIu64
				      ": stream %u record %u (%u bytes of payload) written at offset "
				      "%" PRIu64 " by %s", at + i, h.stream, h.seq, h.len, h.off,
				      h.path < W_N ? wpath_name[h.path] : "?");
		shown++;
	}
	return w;
}

static size_t rlog_print(char *o, size_t ol, struct stream *st)
{
	size_t w = (size_t)snprintf(o, ol, "\n  the last reads (offset, path, bytes, ms):");

	for (uint32_t i = st->rlog_n > RLOG_N ? st->rlog_n - RLOG_N : 0; i < st->rlog_n; i++) {
		struct rlog *l = &st->rlog[i % RLOG_N];

		w += (size_t)snprintf(o + w, ol - w, "%s %" PRIu64 " %s %" PRId64 " @%" PRIu64,
				      i % 4 ? "," : "\n   ", l->off, rpath_name[l->path], l->got,
				      l->ms);
	}
	return w;
}

/*
 * The first wrong byte: b[i] of a chunk b[0..n), at stream offset `at`.  hdr:
 * a record header was expected there (path and length: any, shown as 0).
 */
static void bad_bytes(struct reader *rd, const uint8_t *b, size_t n, size_t i, uint64_t at,
		      int hdr, const char *what)
{
	static __thread char o[DIAG]; /* two readers may fail at once */
	uint8_t want[32];
	size_t m = n - i < 32 ? n - i : 32, w;

	kit_pattern_fill(want, rd->st->seed, at, sizeof(want));
	if (hdr) {
		struct rec e = { REC_MAGIC, (uint16_t)rd->st->id, 0, rd->seq, 0, at };

		memcpy(want, &e, sizeof(e));
	}
	w = (size_t)snprintf(o, sizeof(o), "stream %d: %s at offset %" PRIu64 " (record %u",
			     rd->st->id, what, at, rd->seq);
	if (rd->cur.magic) /* a record's header passed its check */
		w += (size_t)snprintf(o + w, sizeof(o) - w, "; the last good header: record %u "
				      "by %s, %u bytes of payload, at offset %" PRIu64, rd->cur.seq,
				      wpath_name[rd->cur.path], rd->cur.len, rd->cur.off);
	w += (size_t)snprintf(o + w, sizeof(o) - w, ")\n  expected ");
	w += hex(o + w, sizeof(o) - w, want, m);
	w += (size_t)snprintf(o + w, sizeof(o) - w, "\n  got      ");
	w += hex(o + w, sizeof(o) - w, b + i, m);
	w += explain_headers(o + w, sizeof(o) - w, b + i, n - i, at);
	w += explain_pattern(o + w, sizeof(o) - w, rd, b + i, n - i, at);
	rlog_print(o + w, sizeof(o) - w, rd->st);
	fail_stream(rd->st, at, "%s", o);
}

/* ---- checking ---- */

/* A whole header is in rd->h, its last byte b[i - 1]: checks it against the record expected. */
static void header_check(struct reader *rd, const uint8_t *b, size_t n, size_t i)
{
	struct rec h;
	uint64_t start = rd->off - sizeof(h);

	memcpy(&h, rd->h, sizeof(h));
	if (h.magic != REC_MAGIC || h.stream != rd->st->id || h.seq != rd->seq ||
	    h.off != start || h.path >= W_N || h.len > MAX_PAYLOAD || (h.path == W_END && h.len)) {
		char what[200];

		snprintf(what, sizeof(what), "a wrong record header (magic %#x stream %u record %u "
			 "path %u len %u offset %" PRIu64 ", expected record %u at offset %" PRIu64
			 ")", h.magic, h.stream, h.seq, h.path, h.len, h.off, rd->seq, start);
		/* shown from its first byte, within the chunk when it is all there */
		if (i >= sizeof(h))
			bad_bytes(rd, b, n, i - sizeof(h), start, 1, what);
		bad_bytes(rd, rd->h, sizeof(h), 0, start, 1, what);
	}
	rd->cur = h;
	rd->left = h.len;
	rd->hn = 0;
	rd->seq++;
}

/* Checks n bytes just read. */
static void feed(struct reader *rd, const uint8_t *b, size_t n)
{
	struct stream *st = rd->st;
	uint64_t base = rd->off; /* b[i] is at offset base + i */

	for (size_t i = 0; i < n;) {
		if (st->end_seen)
			bad_bytes(rd, b, n, i, base + i, 0, "bytes after the end record");
		if (rd->left == 0) {
			size_t k = sizeof(struct rec) - rd->hn;

			k = k < n - i ? k : n - i;
			memcpy(rd->h + rd->hn, b + i, k);
			rd->hn += k;
			rd->off += k;
			i += k;
			if (rd->hn == sizeof(struct rec)) {
				header_check(rd, b, n, i);
				st->end_seen = rd->cur.path == W_END;
			}
		} else {
			size_t k = rd->left < n - i ? rd->left : n - i;

			if (kit_pattern_check(b + i, st->seed, rd->off, k)) {
				size_t j = i;

				while (b[j] == kit_pattern_byte(st->seed, base + j))
					j++;
				bad_bytes(rd, b, n, j, base + j, 0, "a wrong payload byte");
			}
			rd->off += k;
			rd->left -= (uint32_t)k;
			i += k;
		}
	}
	atomic_store(&st->verified, rd->off);
	atomic_store(&st->stamp_ms, ms_now());
}

/* ---- the read paths ---- */

static int iov_split(uint8_t *b, size_t n, struct iovec *v, uint64_t *rng)
{
	int k = 1 + (int)(rnd(rng) % 4);
	size_t at = 0;

	for (int i = 0; i < k; i++) {
		size_t take = i == k - 1 ? n - at : (n - at) * (rnd(rng) % 101) / 100;

		v[i] = (struct iovec){ b + at, take };
		at += take;
	}
	return k;
}

/* Waits for POLLIN by poll() or epoll_wait(), which fail with EINTR whatever SA_RESTART says. */
static void wait_readable(struct reader *rd, int use_epoll)
{
	struct pollfd p = { .fd = rd->st->rx, .events = POLLIN };
	struct epoll_event ev;
	int r;

	do
		r = use_epoll ? epoll_wait(rd->ep, &ev, 1, 1000) : poll(&p, 1, 1000);
	while (r == 0 || (r < 0 && errno == EINTR));
	if (r < 0)
		fail_stream(rd->st, rd->off, "stream %d: %s: %s", rd->st->id,
			    use_epoll ? "epoll_wait" : "poll", strerror(errno));
}

/* FIONREAD after POLLIN: what TCP says is there (0 only at the end). */
static size_t fionread(struct reader *rd, size_t n)
{
	int avail = -1;

	wait_readable(rd, 0);
	if (ioctl(rd->st->rx, FIONREAD, &avail) < 0)
		fail_stream(rd->st, rd->off, "stream %d: ioctl(FIONREAD): %s", rd->st->id,
			    strerror(errno));
	if (avail == 0 && !rd->st->end_seen && !(S.skip_f & F_FIONREAD))
		fail_stream(rd->st, rd->off, "stream %d: FIONREAD says 0 bytes after poll said "
			    "POLLIN, at offset %" PRIu64 " before the end record", rd->st->id,
			    rd->off);
	return avail > 0 && (size_t)avail < n ? (size_t)avail : n;
}

static ssize_t rx_once(struct reader *rd, enum rpath p, uint8_t *b, size_t n)
{
	int fd = rd->st->rx;
	struct iovec v[4];
	struct msghdr m = { .msg_iov = v };

	switch (p) {
	case R_READV:
		return readv(fd, v, iov_split(b, n, v, &rd->rng));
	case R_RECV:
		return recv(fd, b, n, 0);
	case R_RECVMSG:
		m.msg_iovlen = (size_t)iov_split(b, n, v, &rd->rng);
		return recvmsg(fd, &m, 0);
	case R_RI2N_RECV:
		return (S.tcp ? recv : ri2n_recv)(fd, b, n, 0);
	case R_RI2N_READV:
		return (S.tcp ? readv : ri2n_readv)(fd, v, iov_split(b, n, v, &rd->rng));
	case R_WAITALL:
		return recv(fd, b, n, MSG_WAITALL);
	case R_RI2N_WAITALL:
		return (S.tcp ? recv : ri2n_recv)(fd, b, n, MSG_WAITALL);
	case R_POLL:
		return recv(fd, b, n, MSG_DONTWAIT);
	default: /* read; epoll and FIONREAD read after their wait */
		return read(fd, b, n);
	}
}

/* One call by path p (retried on a legitimate EINTR, waited on EAGAIN): its result. */
static ssize_t rx_call(struct reader *rd, enum rpath p, uint8_t *b, size_t n)
{
	for (;;) {
		sig_atomic_t h = usr2_hits;
		ssize_t r;

		if (p == R_EPOLL)
			wait_readable(rd, 1);
		if (p == R_FIONREAD)
			n = fionread(rd, n);
		r = rx_once(rd, p, b, n);
		if (r >= 0)
			return r;
		if (errno == EAGAIN && p == R_POLL) {
			wait_readable(rd, 0);
			continue;
		}
		if (errno == EINTR && eintr_legit(h)) {
			atomic_fetch_add(&S.eintr_usr2, 1);
			continue;
		}
		fail_stream(rd->st, rd->off, "stream %d: %s of %zu bytes at offset %" PRIu64
			    " (record %u): %s%s", rd->st->id, rpath_name[p], n, rd->off, rd->seq,
			    strerror(errno), errno == EINTR ?
			    " though only handlers installed with SA_RESTART ran" : "");
	}
}

/* How much to ask for: MSG_WAITALL only what is sure to come (the rest of a
 * header or payload); the others a size drawn at random. */
static size_t pick_size(struct reader *rd, enum rpath p)
{
	uint32_t c = rnd(&rd->rng) % 100;

	if (p == R_WAITALL || p == R_RI2N_WAITALL) {
		if (rd->st->end_seen)
			return 1;
		return rd->left ? (rd->left < RBUF ? rd->left : RBUF) : sizeof(struct rec) - rd->hn;
	}
	if (c < 45)
		return 1 + rnd(&rd->rng) % 64;
	if (c < 75)
		return 1 + rnd(&rd->rng) % 4096;
	return 1 + rnd(&rd->rng) % RBUF;
}

static enum rpath pick_rpath(struct reader *rd)
{
	for (;;) {
		enum rpath p = rnd(&rd->rng) % R_N;

		if (!(S.skip_r >> p & 1))
			return p;
	}
}

/* A stream's reading, kept across reader threads: a cancelled one's successor goes on. */
static struct reader rstate[MAX_STREAMS];

static void reader_init(struct reader *rd, struct stream *st)
{
	struct epoll_event ev = { .events = EPOLLIN };

	rd->st = st;
	rd->rng = S.seed * 7919 + (uint64_t)st->id + 1;
	rd->buf = malloc(RBUF);
	rd->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!rd->buf || rd->ep < 0 || epoll_ctl(rd->ep, EPOLL_CTL_ADD, st->rx, &ev) < 0)
		fail_stream(st, 0, "stream %d: reader set-up: %s", st->id, strerror(errno));
}

/*
 * Cancellation is enabled only around the read call of a quiet stream: with
 * no bytes coming there is nothing a cancelled call could have taken (before
 * glibc 2.41 a read cancelled as it returns loses its bytes, TCP's too), so
 * the reading state is whole whenever the thread may go.
 */
void *reader_main(void *arg)
{
	struct stream *st = arg;
	struct reader *rd = &rstate[st->id];
	sigset_t all;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	my_rx_stream = st->id;
	if (!rd->buf)
		reader_init(rd, st);
	sigemptyset(&all);
	sigaddset(&all, SIGUSR1);
	sigaddset(&all, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &all, NULL);
	while (!st->eof) {
		enum rpath p = pick_rpath(rd);
		size_t n = pick_size(rd, p);
		ssize_t r;
		struct rlog *l = &st->rlog[st->rlog_n++ % RLOG_N];

		*l = (struct rlog){ .off = rd->off, .ms = ms_run(), .path = p, .got = -1 };
		atomic_store(&st->r_path, p);
		atomic_store(&st->r_since, ms_run());
		if (st->quiet) /* a busy stream's read may lose bytes to a cancel, even TCP's */
			pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		r = rx_call(rd, p, rd->buf, n);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		atomic_store(&st->r_path, -1);
		l->got = r;
		atomic_fetch_add(&S.r_calls[p], 1);
		atomic_fetch_add(&S.r_bytes[p], (uint64_t)r);
		if (r > 0) {
			feed(rd, rd->buf, (size_t)r);
		} else if (!st->end_seen) {
			static __thread char o[DIAG];

			rlog_print(o, sizeof(o), st);
			fail_stream(st, rd->off, "stream %d: end of stream at offset %" PRIu64
				    " (record %u, %u payload bytes to come) before the end record "
				    "(%s returned 0)%s", st->id, rd->off, rd->seq, rd->left,
				    rpath_name[p], o);
		} else {
			st->eof = 1;
		}
	}
	close(rd->ep);
	free(rd->buf);
	rd->buf = NULL;
	return NULL;
}
