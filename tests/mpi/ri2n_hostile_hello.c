/*
 * ri2n_hostile_hello - a process of no job that connects to a rank's BTL
 * listener over ri2n and says, in a hello, that it is another rank.
 *
 *   ri2n_hostile_hello ADDR PORT JOBID VPID [SECONDS]
 *
 * Connects (ri2n, RI2N_RAILS as for any ri2n program) to ADDR:PORT, writes one
 * hello frame naming JOBID,VPID (the BTL's framing: btl_ri2n_wire.h), then
 * reads until the peer ends the stream or SECONDS (default 3) pass, and says
 * which, with the bytes read: "hostile hello: sent", then "hostile hello: read
 * N bytes; stream ended by the peer" (or "still open").  A BTL that believed the hello would hand it the named rank's
 * traffic.  Exit status 0 if the hello was written, 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ri2n.h"

static void put32(uint8_t *b, uint32_t v)
{
	v = htonl(v);
	memcpy(b, &v, 4);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	uint8_t hello[8 + 12] = { 0 };
	double end;
	long long got = 0;
	int fd, ended = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: ri2n_hostile_hello ADDR PORT JOBID VPID [SECONDS]\n");
		return 2;
	}
	if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "ri2n_hostile_hello: bad address %s\n", argv[1]);
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	end = now_s() + (argc > 5 ? atof(argv[5]) : 3.0);
	put32(hello, 12);  /* payload length */
	hello[5] = 2;      /* type: hello */
	put32(hello + 8, 0x52324e42u);
	put32(hello + 12, (uint32_t)strtoul(argv[3], NULL, 0));
	put32(hello + 16, (uint32_t)strtoul(argv[4], NULL, 0));
	setvbuf(stdout, NULL, _IOLBF, 0); /* each line out at once, in case we are killed */
	fd = ri2n_socket();
	if (fd < 0 || ri2n_connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		printf("hostile hello: cannot connect: %s\n", strerror(errno));
		return 1;
	}
	if (write(fd, hello, sizeof(hello)) != (ssize_t)sizeof(hello)) {
		printf("hostile hello: write failed: %s\n", strerror(errno));
		return 1;
	}
	printf("hostile hello: sent\n");
	while (!ended && now_s() < end) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint8_t buf[65536];

		if (poll(&pf, 1, 100) == 1) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r > 0)
				got += r; /* what the BTL sent to whom it took us for */
			else
				ended = 1;
		}
	}
	printf("hostile hello: read %lld bytes; stream %s\n", got,
	       ended ? "ended by the peer" : "still open");
	ri2n_close(fd);
	return 0;
}
