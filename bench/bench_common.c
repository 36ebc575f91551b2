/* bench_common.c - see bench_common.h. */
#define _GNU_SOURCE
#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ri2n.h"

const char *bench_transport_name(int t)
{
	return t == BT_RI2N ? "ri2n" : t == BT_TCP ? "tcp" : "udp";
}

double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t bench_parse_size(const char *s)
{
	char *end;
	double v;
	int64_t mul = 1;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || v < 0 || errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = INT64_C(1) << 10; end++; break;
	case 'm': case 'M': mul = INT64_C(1) << 20; end++; break;
	case 'g': case 'G': mul = INT64_C(1) << 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')  /* "4MiB", "4MB" read the same */
		end += *end == 'i' ? 1 : 0;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	return (int64_t)(v * (double)mul);
}

int bench_resolve(const char *host, int port, struct sockaddr_in *a)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (!host || !*host)
		return 0; /* INADDR_ANY */
	if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	a->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

static int bind_inet(int fd, const struct sockaddr_in *a)
{
	return bind(fd, (const struct sockaddr *)a, sizeof(*a));
}

static void tcp_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int bench_listen(int transport, const char *local, int port)
{
	struct sockaddr_in a;
	int fd, one = 1;

	if (bench_resolve(local, port, &a) < 0) {
		fprintf(stderr, "cannot resolve %s\n", local);
		return -1;
	}
	if (transport == BT_RI2N) {
		fd = ri2n_socket();
		if (fd < 0 || ri2n_bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    ri2n_listen(fd, 16) < 0) {
			fprintf(stderr, "ri2n: cannot listen on port %d: %s\n", port, strerror(errno));
			return -1;
		}
		return fd;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind_inet(fd, &a) < 0 || listen(fd, 16) < 0) {
		fprintf(stderr, "tcp: cannot listen on port %d: %s\n", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int bench_accept(int transport, int lfd)
{
	int fd;

	if (transport == BT_RI2N)
		return ri2n_accept(lfd, NULL, NULL);
	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd >= 0)
		tcp_tune(fd);
	return fd;
}

int bench_connect(int transport, const char *host, int port)
{
	struct sockaddr_in a;
	int fd;

	if (bench_resolve(host, port, &a) < 0) {
		fprintf(stderr, "cannot resolve %s\n", host);
		return -1;
	}
	if (transport == BT_RI2N) {
		fd = ri2n_socket();
		if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			fprintf(stderr, "ri2n: cannot connect to %s:%d: %s\n", host, port,
				strerror(errno));
			if (fd >= 0)
				ri2n_close(fd);
			return -1;
		}
		return fd;
	}
	/* IPPROTO_TCP spelled out as 0: mptcpize's wrapper turns either into MPTCP */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -1;
	tcp_tune(fd);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "tcp: cannot connect to %s:%d: %s\n", host, port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int bench_udp_bind(const char *local, int port)
{
	struct sockaddr_in a;
	int fd;

	if (bench_resolve(local, port, &a) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind_inet(fd, &a) < 0) {
		fprintf(stderr, "udp: cannot bind port %d: %s\n", port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int bench_udp_connect(const char *host, int port)
{
	struct sockaddr_in a;
	int fd;

	if (bench_resolve(host, port, &a) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "udp: cannot reach %s:%d: %s\n", host, port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void bench_close(int transport, int fd)
{
	if (fd < 0)
		return;
	if (transport == BT_RI2N)
		ri2n_close(fd);
	else
		close(fd);
}

int bench_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int bench_fast_io;

int bench_read_full(int fd, void *buf, size_t n, int busy)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = bench_fast_io ? ri2n_recv(fd, (uint8_t *)buf + got, n - got, 0) :
					    read(fd, (uint8_t *)buf + got, n - got);

		if (r > 0) {
			got += (size_t)r;
		} else if (r == 0) {
			errno = ECONNRESET;
			return -1;
		} else if (errno == EINTR || (busy && (errno == EAGAIN || errno == EWOULDBLOCK))) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

int bench_write_all(int fd, const void *buf, size_t n, int busy)
{
	const uint8_t *p = buf;

	while (n > 0) {
		ssize_t w = bench_fast_io ? ri2n_send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && (errno == EINTR ||
				     (busy && (errno == EAGAIN || errno == EWOULDBLOCK)))) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

/* ---- pattern: 64-bit word w of the stream is (w * K) ^ seed, little-endian ---- */

#define PAT_K UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t pat_word(uint64_t seed, uint64_t w)
{
	return (w * PAT_K) ^ seed;
}

void bench_pattern_fill(uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	size_t i = 0;

	while (i < n && ((off + i) & 7)) { /* head, up to the next word */
		uint64_t pos = off + i;

		buf[i++] = (uint8_t)(pat_word(seed, pos >> 3) >> (8 * (pos & 7)));
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t w = pat_word(seed, (off + i) >> 3);

		memcpy(buf + i, &w, 8); /* little-endian host: byte b is bits 8b.. */
	}
	for (; i < n; i++) {
		uint64_t pos = off + i;

		buf[i] = (uint8_t)(pat_word(seed, pos >> 3) >> (8 * (pos & 7)));
	}
}

uint64_t bench_pattern_check(const uint8_t *buf, uint64_t seed, uint64_t off, size_t n)
{
	uint64_t bad = 0;
	size_t i = 0;

	while (i < n && ((off + i) & 7)) {
		uint64_t pos = off + i;

		bad += buf[i++] != (uint8_t)(pat_word(seed, pos >> 3) >> (8 * (pos & 7)));
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t w = pat_word(seed, (off + i) >> 3), v;

		memcpy(&v, buf + i, 8);
		if (v != w)
			for (int b = 0; b < 8; b++)
				bad += (uint8_t)(v >> (8 * b)) != (uint8_t)(w >> (8 * b));
	}
	for (; i < n; i++) {
		uint64_t pos = off + i;

		bad += buf[i] != (uint8_t)(pat_word(seed, pos >> 3) >> (8 * (pos & 7)));
	}
	return bad;
}

void bench_put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

uint64_t bench_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}
