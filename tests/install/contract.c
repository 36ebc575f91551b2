/*
 * contract.c - a program written only against the public contract: it
 * includes <ri2n.h>, builds with `pkg-config --cflags --libs ri2n`, and uses
 * ri2n_socket/bind/listen/accept/connect/close plus plain read/write.
 *
 *   contract serve PORT                 receive one stream, check it, answer
 *   contract send HOST PORT MIB         send MIB MiB of a counter pattern
 *   contract ping HOST PORT N           N round trips of 8 bytes (serve answers)
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ri2n.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int full(int fd, void *b, size_t n, int rd)
{
	for (size_t d = 0; d < n;) {
		ssize_t r = rd ? read(fd, (char *)b + d, n - d) : write(fd, (char *)b + d, n - d);

		if (r <= 0)
			return -1;
		d += (size_t)r;
	}
	return 0;
}

/* 64-bit words counting from 0: word i holds i */
static void fill(uint64_t *w, size_t n, uint64_t first)
{
	for (size_t i = 0; i < n; i++)
		w[i] = first + i;
}

static int serve(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = ri2n_socket(), fd;
	static uint8_t buf[1 << 18];
	uint64_t bytes = 0, bad = 0;
	char mode;

	if (l < 0 || ri2n_bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || ri2n_listen(l, 4) < 0)
		return perror("listen"), 3;
	fd = ri2n_accept(l, NULL, NULL);
	if (fd < 0 || full(fd, &mode, 1, 1) < 0)
		return perror("accept"), 3;
	if (mode == 'p') { /* ping-pong: echo 8-byte messages until EOF */
		uint64_t m;

		while (full(fd, &m, 8, 1) == 0)
			if (full(fd, &m, 8, 0) < 0)
				break;
	} else {
		for (;;) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r <= 0)
				break;
			/* reads end anywhere: check byte by byte against word o / 8 */
			for (size_t i = 0; i < (size_t)r; i++, bytes++) {
				uint64_t w = bytes / 8;

				bad += buf[i] != ((const uint8_t *)&w)[bytes % 8];
			}
		}
		printf("received %llu bytes, %llu bad bytes\n", (unsigned long long)bytes,
		       (unsigned long long)bad);
		full(fd, &bad, 8, 0);
	}
	ri2n_close(fd);
	ri2n_close(l);
	return bad ? 1 : 0;
}

static int client(const char *host, int port, char mode, long n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	static uint64_t buf[1 << 15];
	int fd = ri2n_socket();
	double t0, t;
	uint64_t bad = 1;

	inet_pton(AF_INET, host, &a.sin_addr);
	if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return perror("connect"), 3;
	if (full(fd, &mode, 1, 0) < 0)
		return 3;
	t0 = now();
	if (mode == 'p') {
		for (long i = 0; i < n; i++) {
			uint64_t m = (uint64_t)i, r;

			if (full(fd, &m, 8, 0) < 0 || full(fd, &r, 8, 1) < 0 || r != m)
				return fprintf(stderr, "ping-pong broke at %ld\n", i), 1;
		}
		t = now() - t0;
		printf("%ld round trips of 8 bytes: %.1f us one way (half the round trip)\n", n,
		       t / n / 2 * 1e6);
		ri2n_close(fd);
		return 0;
	}
	for (uint64_t w = 0; w < (uint64_t)n * 131072; w += sizeof(buf) / 8) {
		fill(buf, sizeof(buf) / 8, w);
		if (full(fd, buf, sizeof(buf), 0) < 0)
			return perror("write"), 3;
	}
	shutdown(fd, SHUT_WR);
	if (full(fd, &bad, 8, 1) < 0)
		return fprintf(stderr, "no verdict\n"), 3;
	t = now() - t0;
	printf("sent %ld MiB in %.2f s: %.0f Mbit/s, receiver found %llu bad bytes\n", n, t,
	       n * 8.388608 / t, (unsigned long long)bad);
	ri2n_close(fd);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "send"))
		return client(argv[2], atoi(argv[3]), 's', atol(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "ping"))
		return client(argv[2], atoi(argv[3]), 'p', atol(argv[4]));
	fprintf(stderr, "usage: contract serve PORT | send HOST PORT MIB | ping HOST PORT N\n");
	return 2;
}
