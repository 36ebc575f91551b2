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

/*
 * host and port as either family's address: an IPv6 literal ("2001:2::1",
 * "fe80::1%eth1") as a sockaddr_in6, anything else as bench_resolve does.
 * Returns the address's length, or 0 if it cannot be resolved.
 */
static socklen_t resolve_any(const char *host, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_INET6, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST }, *res;
	socklen_t len;

	memset(ss, 0, sizeof(*ss));
	if (!host || !strchr(host, ':'))
		return bench_resolve(host, port, (struct sockaddr_in *)ss) < 0
			       ? 0 : (socklen_t)sizeof(struct sockaddr_in);
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	len = res->ai_addrlen;
	memcpy(ss, res->ai_addr, len);
	freeaddrinfo(res);
	((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	return len;
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
	struct sockaddr_storage a;
	socklen_t alen = resolve_any(local, port, &a);
	int fd, one = 1;

	if (!alen) {
		fprintf(stderr, "cannot resolve %s\n", local);
		return -1;
	}
	if (transport == BT_RI2N) {
		fd = ri2n_socket();
		if (fd < 0 || ri2n_bind(fd, (struct sockaddr *)&a, alen) < 0 ||
		    ri2n_listen(fd, 64) < 0) {
			fprintf(stderr, "ri2n: cannot listen on port %d: %s\n", port, strerror(errno));
			return -1;
		}
		return fd;
	}
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, alen) < 0 || listen(fd, 64) < 0) {
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
	struct sockaddr_storage a;
	socklen_t alen = resolve_any(host, port, &a);
	int fd;

	if (!alen) {
		fprintf(stderr, "cannot resolve %s\n", host);
		return -1;
	}
	if (transport == BT_RI2N) {
		fd = ri2n_socket();
		if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, alen) < 0) {
			fprintf(stderr, "ri2n: cannot connect to %s:%d: %s\n", host, port,
				strerror(errno));
			if (fd >= 0)
				ri2n_close(fd);
			return -1;
		}
		return fd;
	}
	/* IPPROTO_TCP spelled out as 0: mptcpize's wrapper turns either into MPTCP */
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -1;
	tcp_tune(fd);
	if (connect(fd, (struct sockaddr *)&a, alen) < 0) {
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
