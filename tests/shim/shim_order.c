/*
 * shim_order.c - order_kit's paths (tests/api/order_kit.h) on a TCP
 * connection to itself, for ri2n-run: dup, stdio on fdopen(dup), dup2 onto
 * stdout + stdio, F_DUPFD, dprintf as _FORTIFY_SOURCE compiles it,
 * pwritev2, a posix_spawn'ed and a vfork'ed child, a process
 * the socket was passed to by SCM_RIGHTS, each alternating with write() on
 * the socket's own number, every byte checked.
 *
 *   shim_order ADDR PORT      one line per path, "ok ..." or "FAIL ..."; exit 1 on a failure
 *   shim_order --order-writer FD CTL ACK SEED    (a child writer)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "order_kit.h"

#define ROUNDS 2000

static struct sockaddr_in g_addr;
static char g_self[4096];

/* A TCP connection to ourselves at g_addr (a port of the next try each time). */
static int make_pair(struct order *o, void *arg)
{
	static int next;
	struct sockaddr_in a = g_addr;
	struct pollfd p;
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	(void)arg;
	a.sin_port = htons((uint16_t)(ntohs(g_addr.sin_port) + next++));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4)) {
		snprintf(o->why, sizeof(o->why), "listen %d: %s", ntohs(a.sin_port), strerror(errno));
		return -1;
	}
	o->tx = socket(AF_INET, SOCK_STREAM, 0);
	if (o->tx < 0 || connect(o->tx, (struct sockaddr *)&a, sizeof(a))) {
		snprintf(o->why, sizeof(o->why), "connect: %s", strerror(errno));
		return -1;
	}
	p = (struct pollfd){ l, POLLIN, 0 };
	if (poll(&p, 1, ORDER_WAIT_MS) != 1 || (o->rx = accept(l, NULL, NULL)) < 0) {
		snprintf(o->why, sizeof(o->why), "accept: %s", strerror(errno));
		return -1;
	}
	close(l);
	return 0;
}

static int run(const char *name, int (*path)(struct order *o, int rounds))
{
	struct order o;
	int rc;

	order_init(&o, -1, -1, (uint32_t)(name[0] + name[1]), g_self);
	rc = make_pair(&o, NULL);
	if (rc == 0)
		rc = path(&o, ROUNDS);
	/* stderr: stdout may be the socket for a while (order_stdout) */
	if (rc)
		fprintf(stderr, "FAIL %s: %s (after %llu bytes)\n", name, o.why, (unsigned long long)o.got);
	else
		fprintf(stderr, "ok %s: %d rounds, %llu bytes in order\n", name, ROUNDS,
			(unsigned long long)o.got);
	close(o.tx);
	close(o.rx);
	return rc;
}

static int rights(struct order *o, int rounds)
{
	int rc;

	/* order_rights makes its own connection, after its child is forked */
	close(o->tx);
	close(o->rx);
	o->tx = o->rx = -1;
	rc = order_rights(o, rounds, make_pair, NULL);
	return rc;
}

int main(int argc, char **argv)
{
	ssize_t n;
	int bad = 0;

	if (argc > 1 && strcmp(argv[1], ORDER_WRITER) == 0)
		return order_writer_main(argc, argv);
	if (argc != 3 || inet_pton(AF_INET, argv[1], &g_addr.sin_addr) != 1) {
		fprintf(stderr, "usage: shim_order ADDR PORT\n");
		return 2;
	}
	g_addr.sin_family = AF_INET;
	g_addr.sin_port = htons((uint16_t)atoi(argv[2]));
	n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
	if (n <= 0)
		return 2;
	g_self[n] = '\0';
	bad |= run("dup", order_dup);
	bad |= run("fdopen", order_fdopen);
	bad |= run("stdout", order_stdout);
	bad |= run("dupfd", order_dupfd);
	bad |= run("dprintf", order_dprintf);
	bad |= run("pwritev2", order_pwritev2);
	bad |= run("spawn", order_spawn);
	bad |= run("vfork", order_vfork);
	bad |= run("rights", rights);
	return bad ? 1 : 0;
}
