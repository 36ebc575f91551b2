/*
 * posix_order_dlopen.c - a program that loads libri2n with dlopen, so that
 * its write() is libc's, never libri2n's: it alternates write() with
 * ri2n_send() (the fast path) on one connection for thousands of rounds,
 * every byte checked at the receiver.  Not linked with libri2n.
 *
 *   posix_order_dlopen PATH_TO_LIBRI2N     exit 0: every byte in order
 *
 * Built with ORDER_AHEAD (posix_order_ahead), the same program is linked
 * with libri2n and run with LD_PRELOAD=posix_order_preload.so, an
 * interposer ahead of libri2n whose write() is a raw system call: the
 * program's write() is again not libri2n's.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ri2n_kit.h"

#define ROUNDS 3000
#define WAIT_MS 5000
#define SEED 21

static struct {
	int (*socket)(void);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	ssize_t (*send)(int, const void *, size_t, int);
	int (*close)(int);
} ri2n;

static int die(const char *what)
{
	fprintf(stderr, "posix_order_dlopen: %s: %s\n", what, strerror(errno));
	return 1;
}

#ifdef ORDER_AHEAD
#include <ri2n.h>

static int load(const char *path)
{
	(void)path;
	ri2n.socket = ri2n_socket;
	ri2n.bind = ri2n_bind;
	ri2n.listen = ri2n_listen;
	ri2n.getsockname = ri2n_getsockname;
	ri2n.connect = ri2n_connect;
	ri2n.accept = ri2n_accept;
	ri2n.send = ri2n_send;
	ri2n.close = ri2n_close;
	return 0;
}
#else
static int load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "posix_order_dlopen: dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	*(void **)&ri2n.socket = dlsym(h, "ri2n_socket");
	*(void **)&ri2n.bind = dlsym(h, "ri2n_bind");
	*(void **)&ri2n.listen = dlsym(h, "ri2n_listen");
	*(void **)&ri2n.getsockname = dlsym(h, "ri2n_getsockname");
	*(void **)&ri2n.connect = dlsym(h, "ri2n_connect");
	*(void **)&ri2n.accept = dlsym(h, "ri2n_accept");
	*(void **)&ri2n.send = dlsym(h, "ri2n_send");
	*(void **)&ri2n.close = dlsym(h, "ri2n_close");
	if (!ri2n.socket || !ri2n.bind || !ri2n.listen || !ri2n.getsockname || !ri2n.connect ||
	    !ri2n.accept || !ri2n.send || !ri2n.close) {
		fprintf(stderr, "posix_order_dlopen: %s lacks a ri2n_ call\n", path);
		return -1;
	}
	return 0;
}
#endif

/* A connection over rail r1 (198.18.1.1) to ourselves: *c connects, *s is accepted. */
static int pair(int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	struct pollfd p;
	int l = ri2n.socket();

	if (l < 0 || ri2n.bind(l, (struct sockaddr *)&a, sizeof(a)) || ri2n.listen(l, 4) ||
	    ri2n.getsockname(l, (struct sockaddr *)&a, &len))
		return die("listener");
	inet_pton(AF_INET, "198.18.1.1", &a.sin_addr);
	*c = ri2n.socket();
	if (*c < 0 || ri2n.connect(*c, (struct sockaddr *)&a, sizeof(a)))
		return die("connect");
	p = (struct pollfd){ l, POLLIN, 0 };
	if (poll(&p, 1, WAIT_MS) != 1 || (*s = ri2n.accept(l, NULL, NULL)) < 0)
		return die("accept");
	ri2n.close(l);
	return 0;
}

/* Reads up to `sent` from s, every byte checked. */
static int expect(int s, uint64_t *got, uint64_t sent, int r)
{
	uint8_t buf[256];

	while (*got < sent) {
		struct pollfd p = { s, POLLIN, 0 };
		size_t want = sent - *got < sizeof(buf) ? (size_t)(sent - *got) : sizeof(buf);
		ssize_t n;

		if (poll(&p, 1, WAIT_MS) != 1) {
			fprintf(stderr, "posix_order_dlopen: round %d: byte %llu never came\n", r,
				(unsigned long long)*got);
			return 1;
		}
		n = read(s, buf, want);
		if (n <= 0)
			return die("read");
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != kit_pattern_byte(SEED, *got + (uint64_t)i)) {
				fprintf(stderr, "posix_order_dlopen: round %d: byte %llu out of order\n",
					r, (unsigned long long)(*got + (uint64_t)i));
				return 1;
			}
		*got += (uint64_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t sent = 0, got = 0;
	uint32_t rng = SEED;
	uint8_t buf[64];
	int c = -1, s = -1;

	if (argc < 2 || load(argv[1]) || pair(&c, &s))
		return 1;
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < 2; k++) {
			size_t n;

			rng = rng * 1103515245u + 12345u;
			n = 1 + (rng >> 16) % sizeof(buf);
			kit_pattern_fill(buf, SEED, sent, n);
			/* libc's write (the descriptor), then ri2n_send (the fast path) */
			if ((k == 0 ? write(c, buf, n) : ri2n.send(c, buf, n, 0)) != (ssize_t)n)
				return die(k == 0 ? "write" : "ri2n_send");
			sent += n;
		}
		if (expect(s, &got, sent, r))
			return 1;
	}
	ri2n.close(c);
	ri2n.close(s);
	printf("posix_order_dlopen: %d rounds, %llu bytes in order\n", ROUNDS, (unsigned long long)got);
	return 0;
}
