/*
 * ri2n_flood - hostile traffic at a ri2n port, for the namespace tests.
 *
 *   ri2n_flood MODE PORT SECONDS PPS DST...
 *
 * Sends about PPS datagrams a second for SECONDS, round robin over the DST
 * addresses (one per rail of the victim), from ordinary UDP sockets of the
 * namespace it runs in.  MODE says what they look like:
 *
 *   garbage  random bytes, random lengths (1 .. 1400)
 *   forged   well-formed DATA, ACK and control packets with the right version
 *            but connection ids nobody holds, random sequence and ACK numbers
 *   init     a SYN-style flood: well-formed INIT packets (each batch of 32
 *            from a new source port)
 *            and COOKIE_ECHOs carrying made-up cookies
 *   mix      all three in turn
 *
 * SIGTERM or SIGINT ends it early.  On exit it prints "flood sent=N bytes=B".  The traffic goes only
 * where it is told; the tests point it at their own namespaces.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rn_wire.h"

#define BATCH 32
#define MAXDST 8

static uint64_t rng_state;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rnd(void)
{
	/* xorshift64*: fast and good enough to make noise */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t make_garbage(uint8_t *buf)
{
	size_t n = 1 + rnd() % 1400;

	fill(buf, n);
	return n;
}

static size_t make_forged(uint8_t *buf, size_t cap)
{
	static const uint8_t types[] = { RN_PT_DATA,      RN_PT_ACK,       RN_PT_LINK_STATE,
					 RN_PT_LINK_ACK,  RN_PT_HEARTBEAT, RN_PT_KEEPALIVE,
					 RN_PT_RESET };
	uint8_t payload[1200];
	uint64_t words[4];
	rn_hdr h = { .type = types[rnd() % sizeof(types)], .path = (uint8_t)(rnd() % 2),
		     .dst = rnd() | 1, .seq = (uint32_t)rnd(), .ts = (uint32_t)rnd() };
	rn_ackblk ab = { .ack = (uint32_t)rnd(), .wnd = (uint32_t)rnd(), .nwords = 4,
			 .words = words };
	size_t len = 0;
	ssize_t n;

	fill((uint8_t *)words, sizeof(words));
	switch (h.type) {
	case RN_PT_DATA: len = 1 + rnd() % sizeof(payload); break;
	case RN_PT_LINK_STATE: len = RN_LINK_STATE_LEN; break;
	case RN_PT_LINK_ACK: len = RN_LINK_ACK_LEN; break;
	case RN_PT_RESET: len = RN_RESET_LEN; break;
	}
	fill(payload, len);
	if (h.type == RN_PT_ACK || rnd() % 2)
		h.flags |= RN_F_ACK;
	n = rn_wire_encode(buf, cap, &h, (h.flags & RN_F_ACK) ? &ab : NULL, payload, len);
	return n > 0 ? (size_t)n : 0;
}

static size_t make_hello(uint8_t *buf, size_t cap, const struct sockaddr_in *dst)
{
	uint8_t cookie[RN_COOKIE_LEN], params[512];
	rn_hello he = { .id = rnd() | 1, .isn = (uint32_t)rnd(), .slots = 4096,
			.max_dgram = 1472, .nrails = 2 };
	int echo = rnd() % 4 == 0;
	rn_hdr h = { .type = echo ? RN_PT_COOKIE_ECHO : RN_PT_INIT, .dst = 0,
		     .seq = he.isn, .ts = (uint32_t)rnd() };
	ssize_t plen, n;

	for (int i = 0; i < he.nrails; i++)
		he.rails[i] = (rn_rail_addr){ .ip = ntohl(dst->sin_addr.s_addr) ^ (uint32_t)(rnd() & 0xff),
					      .port = (uint16_t)rnd(), .prefix = 24 };
	fill(cookie, sizeof(cookie));
	plen = rn_wire_write_hello(params, sizeof(params), &he, echo ? cookie : NULL);
	if (plen < 0)
		return 0;
	if (!echo && plen < RN_INIT_LEN - RN_HDR_LEN) {
		memset(params + plen, 0, (size_t)(RN_INIT_LEN - RN_HDR_LEN - plen));
		plen = RN_INIT_LEN - RN_HDR_LEN;
	}
	n = rn_wire_encode(buf, cap, &h, NULL, params, (size_t)plen);
	return n > 0 ? (size_t)n : 0;
}

static int new_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		perror("ri2n_flood: socket");
		exit(1);
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst[MAXDST];
	static uint8_t bufs[BATCH][1500];
	struct iovec iov[BATCH];
	struct mmsghdr msgs[BATCH];
	int ndst = 0, fd, mode, port;
	double seconds, pps;
	uint64_t sent = 0, bytes = 0, start, end, batches = 0;

	if (argc < 6) {
		fprintf(stderr, "usage: ri2n_flood garbage|forged|init|mix PORT SECONDS PPS DST...\n");
		return 2;
	}
	if (!strcmp(argv[1], "garbage"))
		mode = 0;
	else if (!strcmp(argv[1], "forged"))
		mode = 1;
	else if (!strcmp(argv[1], "init"))
		mode = 2;
	else if (!strcmp(argv[1], "mix"))
		mode = 3;
	else {
		fprintf(stderr, "ri2n_flood: unknown mode %s\n", argv[1]);
		return 2;
	}
	port = atoi(argv[2]);
	seconds = atof(argv[3]);
	pps = atof(argv[4]);
	if (port <= 0 || port > 65535 || seconds <= 0 || seconds > 600 || pps <= 0 || pps > 1e6) {
		fprintf(stderr, "ri2n_flood: port 1..65535, seconds 0..600, pps 0..1e6\n");
		return 2;
	}
	for (int i = 5; i < argc && ndst < MAXDST; i++, ndst++) {
		dst[ndst] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		if (inet_pton(AF_INET, argv[i], &dst[ndst].sin_addr) != 1) {
			fprintf(stderr, "ri2n_flood: bad address %s\n", argv[i]);
			return 2;
		}
	}
	rng_state = (now_ns() ^ ((uint64_t)getpid() << 32)) | 1;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	fd = new_socket();
	start = now_ns();
	end = start + (uint64_t)(seconds * 1e9);
	for (;;) {
		uint64_t t = now_ns(), due = start + (uint64_t)((double)batches * BATCH * 1e9 / pps);
		int n = 0, k;

		if (t >= end || stop)
			break;
		if (due > t) {
			struct timespec ts = { 0, (long)(due - t) };

			nanosleep(&ts, NULL);
			continue;
		}
		for (int i = 0; i < BATCH; i++) {
			const struct sockaddr_in *d = &dst[(sent + (uint64_t)i) % (uint64_t)ndst];
			int m = mode == 3 ? (int)((sent + (uint64_t)i) / BATCH % 3) : mode;
			size_t len = m == 0 ? make_garbage(bufs[n])
				   : m == 1 ? make_forged(bufs[n], sizeof(bufs[n]))
					    : make_hello(bufs[n], sizeof(bufs[n]), d);

			if (!len)
				continue;
			iov[n] = (struct iovec){ bufs[n], len };
			msgs[n] = (struct mmsghdr){ .msg_hdr = { .msg_name = (void *)d,
								 .msg_namelen = sizeof(*d),
								 .msg_iov = &iov[n], .msg_iovlen = 1 } };
			n++;
		}
		k = sendmmsg(fd, msgs, (unsigned)n, 0);
		if (k < 0 && errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED) {
			perror("ri2n_flood: sendmmsg");
			return 1;
		}
		for (int i = 0; i < k; i++) {
			sent++;
			bytes += msgs[i].msg_len;
		}
		batches++;
		if (mode >= 2) {
			/* a handshake flood comes from ever new source ports */
			close(fd);
			fd = new_socket();
		}
	}
	printf("flood sent=%llu bytes=%llu\n", (unsigned long long)sent, (unsigned long long)bytes);
	return 0;
}
