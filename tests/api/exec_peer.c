/*
 * exec_peer.c - the program a server execs with a connection as an
 * inherited descriptor (an SSH daemon re-executing itself per client): it
 * checks that the descriptor still describes the TCP-like connection it is,
 * then echoes a verified pattern.
 *
 *   exec_peer FD PEER LOCAL BYTES SEED
 *
 * PEER and LOCAL are "a.b.c.d:port": what getpeername and getsockname must
 * answer; "-" for both: the program runs under ri2n-run and a seccomp filter
 * it inherited (no getsockopt), where the shim steps aside: the two calls
 * must merely not kill it, no option is asked, and the echo must work.  Built twice: exec_peer asks the plain calls (under ri2n-run the
 * shim answers them), exec_peer_ri2n (linked with libri2n) asks
 * ri2n_getpeername, ri2n_getsockname and ri2n_getsockopt.  Reads BYTES of
 * pattern SEED (tools/kit), checking every byte, and writes each piece back
 * as it came.  Exit 0, or 2 with a line on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ri2n_kit.h"
#ifdef EXEC_PEER_RI2N
#include <ri2n.h>
#define GETPEERNAME ri2n_getpeername
#define GETSOCKNAME ri2n_getsockname
#define GETSOCKOPT ri2n_getsockopt
#else
#define GETPEERNAME getpeername
#define GETSOCKNAME getsockname
#define GETSOCKOPT getsockopt
#endif

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "exec_peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

static const char *str(const struct sockaddr_in *a, char *buf)
{
	char ip[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, 40, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

/* getpeername (peer) or getsockname must answer AF_INET `want`. */
static void check_name(int fd, int peer, const char *want)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char got[40];
	int rc = peer ? GETPEERNAME(fd, (struct sockaddr *)&ss, &len) :
			GETSOCKNAME(fd, (struct sockaddr *)&ss, &len);

	if (rc < 0)
		die("%s: %s", peer ? "getpeername" : "getsockname", strerror(errno));
	if (ss.ss_family != AF_INET || len != sizeof(struct sockaddr_in))
		die("%s: family %d, length %u: not the connection's IPv4 address %s",
		    peer ? "getpeername" : "getsockname", ss.ss_family, (unsigned)len, want);
	if (strcmp(str((struct sockaddr_in *)&ss, got), want) != 0)
		die("%s: %s, want %s", peer ? "getpeername" : "getsockname", got, want);
}

static void check_opt(int fd, int level, int name, int want, const char *what)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (GETSOCKOPT(fd, level, name, &v, &len) < 0)
		die("getsockopt %s: %s", what, strerror(errno));
	if (v != want)
		die("getsockopt %s: %d, want %d", what, v, want);
}

/* Echoes `total` bytes of pattern `seed`, every byte checked. */
static void echo(int fd, uint64_t total, uint64_t seed)
{
	static uint8_t buf[64 * 1024];
	uint64_t off = 0;

	while (off < total) {
		size_t want = total - off < sizeof(buf) ? (size_t)(total - off) : sizeof(buf);
		ssize_t n = read(fd, buf, want), w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("read at byte %llu: %s", (unsigned long long)off,
			    n == 0 ? "end of stream" : strerror(errno));
		if (kit_pattern_check(buf, seed, off, (size_t)n) != 0)
			die("byte %llu onwards is not the pattern", (unsigned long long)off);
		for (ssize_t done = 0; done < n; done += w) {
			w = write(fd, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w <= 0)
				die("write: %s", strerror(errno));
		}
		off += (uint64_t)n;
	}
}

int main(int argc, char **argv)
{
	int fd, one = 1, tos = 0x10; /* IPTOS_LOWDELAY, as OpenSSH sets for a session */

	if (argc != 6)
		die("usage: exec_peer FD PEER LOCAL BYTES SEED");
	fd = atoi(argv[1]);
	if (strcmp(argv[2], "-") == 0 && strcmp(argv[3], "-") == 0) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);

		/* whatever they answer (AF_UNIX's: the shim has stepped aside) */
		(void)GETPEERNAME(fd, (struct sockaddr *)&ss, &len);
		len = sizeof(ss);
		(void)GETSOCKNAME(fd, (struct sockaddr *)&ss, &len);
		echo(fd, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10));
		return 0;
	}
	check_name(fd, 1, argv[2]);
	check_name(fd, 0, argv[3]);
	check_opt(fd, SOL_SOCKET, SO_TYPE, SOCK_STREAM, "SO_TYPE");
#ifndef EXEC_PEER_RI2N
	/* what a TCP server asks of its client socket (OpenSSH: TCP_NODELAY, IP_TOS) */
	check_opt(fd, SOL_SOCKET, SO_DOMAIN, AF_INET, "SO_DOMAIN");
	check_opt(fd, SOL_SOCKET, SO_PROTOCOL, IPPROTO_TCP, "SO_PROTOCOL");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("setsockopt TCP_NODELAY: %s", strerror(errno));
	check_opt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0)
		die("setsockopt IP_TOS: %s", strerror(errno));
	check_opt(fd, IPPROTO_IP, IP_TOS, tos, "IP_TOS");
#else
	(void)one;
	(void)tos;
#endif
	check_opt(fd, SOL_SOCKET, SO_ERROR, 0, "SO_ERROR");
	echo(fd, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10));
	return 0;
}
