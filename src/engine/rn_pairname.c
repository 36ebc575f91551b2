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

#include "rn_pairname.h"
#include "rn_sys.h"

#define PREFIX "ri2n "

static unsigned g_seq; /* (atomic) names made by this process */
static int g_pid;      /* (atomic) this process's id, 0: not read yet (a getpid a name was
			* a system call a connection); a forked child reads its own */
static pthread_once_t g_pid_once = PTHREAD_ONCE_INIT;

static void pid_forked(void)
{
	__atomic_store_n(&g_pid, 0, __ATOMIC_RELAXED);
}

static void pid_register(void)
{
	pthread_atfork(NULL, NULL, pid_forked);
}

static int my_pid(void)
{
	int pid = __atomic_load_n(&g_pid, __ATOMIC_RELAXED);

	if (!pid) {
		pthread_once(&g_pid_once, pid_register);
		pid = (int)rn_sys_getpid();
		__atomic_store_n(&g_pid, pid, __ATOMIC_RELAXED);
	}
	return pid;
}

static int put_sin(char *out, size_t cap, const struct sockaddr_in *a)
{
	char ip[INET_ADDRSTRLEN];

	if (!inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip)))
		return -1;
	return snprintf(out, cap, "%s:%u", ip, ntohs(a->sin_port));
}

void rn_pairname_set(int eng_fd, const rn_hsa *local, const rn_hsa *peer)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char l[32], p[32];
	int saved = errno;

	/* IPv4 only: two IPv6 addresses and ports may not fit the 107 bytes of a name */
	if (eng_fd < 0 || local->sa.sa_family != AF_INET || peer->sa.sa_family != AF_INET ||
	    put_sin(l, sizeof(l), &local->v4) < 0 || put_sin(p, sizeof(p), &peer->v4) < 0)
		return;
	/* a name another socket holds (a stale one after pid reuse): the next number */
	for (int tries = 0; tries < 4; tries++) {
		unsigned n = __atomic_add_fetch(&g_seq, 1, __ATOMIC_RELAXED);
		int len = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, PREFIX "%d.%u %s %s",
				   my_pid(), n, l, p);

		if (len <= 0 || (size_t)len >= sizeof(un.sun_path) - 1)
			break;
		if (rn_sys_bind(eng_fd, (struct sockaddr *)&un,
				(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) == 0 ||
		    errno != EADDRINUSE)
			break;
	}
	errno = saved;
}

/* "a.b.c.d:port" at *s (up to a space or the end) into *a; the text after it, or NULL. */
static const char *get_sin(const char *s, const char *end, struct sockaddr_in *a)
{
	char buf[32], *colon, *stop;
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
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	if (inet_pton(AF_INET, buf, &a->sin_addr) != 1)
		return NULL;
	port = strtoul(colon + 1, &stop, 10);
	if (stop == colon + 1 || *stop || port > 65535)
		return NULL;
	a->sin_port = htons((in_port_t)port);
	return s + n;
}

int rn_pairname_get(int fd, struct sockaddr_in *local, struct sockaddr_in *peer)
{
	struct sockaddr_un un;
	socklen_t len = sizeof(un);
	struct sockaddr_in l, p;
	const char *s, *end;
	int saved = errno, ok = 0;

	if (rn_sys_getpeername(fd, (struct sockaddr *)&un, &len) == 0 && un.sun_family == AF_UNIX &&
	    len > offsetof(struct sockaddr_un, sun_path) + 1 + strlen(PREFIX) && !un.sun_path[0] &&
	    !memcmp(un.sun_path + 1, PREFIX, strlen(PREFIX))) {
		s = un.sun_path + 1 + strlen(PREFIX);
		end = (const char *)&un + len;
		s = memchr(s, ' ', (size_t)(end - s)); /* past <pid>.<n> */
		if (s && (s = get_sin(s + 1, end, &l)) && s < end && *s == ' ' &&
		    (s = get_sin(s + 1, end, &p)) && s == end)
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
