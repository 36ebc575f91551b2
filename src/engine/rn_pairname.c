/*
 * rn_pairname.c - a connection's addresses as the name of its socketpair.
 *
 * A ri2n socket is the user's end A of an AF_UNIX socketpair whose other
 * end B the engine of the process that made it keeps.  A process that gets
 * A some other way (fork and exec: a server re-executing itself per
 * connection; SCM_RIGHTS) has no ri2n state for it, yet its program asks
 * getpeername for the client's address.  So once a connection is
 * established the engine binds B to an abstract name that carries the
 * addresses; the kernel answers getpeername on A with B's name in every
 * process, with no file, no message and no help from the owner:
 *
 *     "\0ri2n <pid>.<n> <local ip>:<port> <peer ip>:<port>"
 *
 * (an IPv6 address as "[<32 hex digits>]" or "[<32 hex digits>%<scope>]")
 *
 * <pid>.<n> makes the name unique in the network namespace (abstract names
 * are per namespace; a name lives as long as B).  Only the engine can name
 * B, so a process cannot give one of its own sockets a ri2n connection's
 * addresses by accident; it can by design (any AF_UNIX socket may take any
 * free name), which tells it nothing it did not know.  B is never
 * listening: a connect() to the name is refused.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sodium.h>

#include "rn_pairname.h"
#include "rn_sys.h"

#define PREFIX "ri2n "

static unsigned g_seq; /* (atomic) names made by this process */

/*
 * "a.b.c.d:port" for IPv4; for IPv6 "[<32 hex digits>%<scope>]:port" (the
 * scope only if not 0): two IPv6 addresses as text ("[...]:port", up to 47
 * characters each) need not fit the 107 bytes of a name, as digits they do
 * (scopes of small interface numbers too).
 */
static int put_sa(char *out, size_t cap, const rn_hsa *a)
{
	char ip[INET_ADDRSTRLEN];

	if (a->sa.sa_family == AF_INET6) {
		char hex[2 * sizeof(a->v6.sin6_addr) + 1], scope[16] = "";
		int n;

		sodium_bin2hex(hex, sizeof(hex), a->v6.sin6_addr.s6_addr, sizeof(a->v6.sin6_addr));
		if (a->v6.sin6_scope_id)
			snprintf(scope, sizeof(scope), "%%%u", a->v6.sin6_scope_id);
		n = snprintf(out, cap, "[%s%s]:%u", hex, scope, ntohs(a->v6.sin6_port));
		return n > 0 && (size_t)n < cap ? n : -1;
	}
	if (a->sa.sa_family != AF_INET || !inet_ntop(AF_INET, &a->v4.sin_addr, ip, sizeof(ip)))
		return -1;
	return snprintf(out, cap, "%s:%u", ip, ntohs(a->v4.sin_port));
}

void rn_pairname_set(int eng_fd, const rn_hsa *local, const rn_hsa *peer)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char l[64], p[64];
	int saved = errno;

	if (eng_fd < 0 || put_sa(l, sizeof(l), local) < 0 || put_sa(p, sizeof(p), peer) < 0)
		return;
	/* a name another socket holds (a stale one after pid reuse): the next number */
	for (int tries = 0; tries < 4; tries++) {
		unsigned n = __atomic_add_fetch(&g_seq, 1, __ATOMIC_RELAXED);
		int len = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, PREFIX "%d.%u %s %s",
				   (int)rn_pid(), n, l, p);

		if (len <= 0 || (size_t)len >= sizeof(un.sun_path) - 1)
			break; /* too long (IPv6 with large scopes): unnamed */
		if (rn_sys_bind(eng_fd, (struct sockaddr *)&un,
				(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) == 0 ||
		    errno != EADDRINUSE)
			break;
	}
	errno = saved;
}

/* put_sa's IPv6 address "<32 hex digits>[%scope]" in buf into *a; 0 or -1. */
static int get_v6(const char *buf, struct sockaddr_in6 *a)
{
	const char *end;
	char *stop;
	size_t n;

	if (sodium_hex2bin(a->sin6_addr.s6_addr, sizeof(a->sin6_addr), buf, strlen(buf), NULL, &n,
			   &end) != 0 || n != sizeof(a->sin6_addr))
		return -1;
	if (*end == '%') {
		unsigned long scope = strtoul(end + 1, &stop, 10);

		if (stop == end + 1 || *stop || scope > UINT32_MAX)
			return -1;
		a->sin6_scope_id = (uint32_t)scope;
		return 0;
	}
	return *end ? -1 : 0;
}

/* An address as put_sa wrote it at *s (up to a space or the end) into *a; the text after it, or NULL. */
static const char *get_sa(const char *s, const char *end, rn_hsa *a)
{
	char buf[64], *colon, *stop;
	size_t n = 0;
	unsigned long port;

	while (s + n < end && s[n] != ' ' && n < sizeof(buf) - 1)
		n++;
	memcpy(buf, s, n);
	buf[n] = 0;
	colon = strrchr(buf, ':');
	if (!colon)
		return NULL;
	*colon = 0;
	port = strtoul(colon + 1, &stop, 10);
	if (stop == colon + 1 || *stop || port > 65535)
		return NULL;
	memset(a, 0, sizeof(*a));
	if (buf[0] == '[') {
		if (colon == buf || colon[-1] != ']')
			return NULL;
		colon[-1] = 0;
		a->v6.sin6_family = AF_INET6;
		a->v6.sin6_port = htons((in_port_t)port);
		return get_v6(buf + 1, &a->v6) == 0 ? s + n : NULL;
	}
	a->v4.sin_family = AF_INET;
	a->v4.sin_port = htons((in_port_t)port);
	return inet_pton(AF_INET, buf, &a->v4.sin_addr) == 1 ? s + n : NULL;
}

int rn_pairname_get(int fd, rn_hsa *local, rn_hsa *peer)
{
	struct sockaddr_un un;
	socklen_t len = sizeof(un);
	rn_hsa l, p;
	const char *s, *end;
	int saved = errno, ok = 0;

	if (rn_sys_getpeername(fd, (struct sockaddr *)&un, &len) == 0 && un.sun_family == AF_UNIX &&
	    len > offsetof(struct sockaddr_un, sun_path) + 1 + strlen(PREFIX) && !un.sun_path[0] &&
	    !memcmp(un.sun_path + 1, PREFIX, strlen(PREFIX))) {
		s = un.sun_path + 1 + strlen(PREFIX);
		end = (const char *)&un + len;
		s = memchr(s, ' ', (size_t)(end - s)); /* past <pid>.<n> */
		if (s && (s = get_sa(s + 1, end, &l)) && s < end && *s == ' ' &&
		    (s = get_sa(s + 1, end, &p)) && s == end)
			ok = 1;
	}
	errno = saved;
	if (!ok)
		return -1;
	if (local)
		*local = l;
	if (peer)
		*peer = p;
	return 0;
}
