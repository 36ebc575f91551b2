/*
 * bench_common.h - what ri2n-pingpong, ri2n-conns and ri2n-xfer (ri2n-stream)
 * share beside the test kit (tools/kit/ri2n_kit.h): one way to open a stream
 * connection over ri2n or plain TCP (or a UDP socket), so that both
 * transports run the very same code afterwards.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ri2n_kit.h" /* the pattern, the clock, sizes, integers on the wire */

enum bench_transport { BT_RI2N, BT_TCP, BT_UDP };

/* The transport's name as printed and written to CSV: "ri2n", "tcp", "udp". */
const char *bench_transport_name(int t);

/* Fills *a with HOST (dotted quad or a name) and PORT; -1 if it does not resolve. */
int bench_resolve(const char *host, int port, struct sockaddr_in *a);

/*
 * A listening stream socket on PORT (LOCAL: an address, or NULL for all): ri2n
 * or TCP (TCP_NODELAY is set on what it accepts).  -1 with a message on stderr.
 */
int bench_listen(int transport, const char *local, int port);

/* Accepts one connection on LFD (a bench_listen() descriptor); -1 with errno. */
int bench_accept(int transport, int lfd);

/* A connected stream to HOST:PORT over ri2n or TCP (TCP_NODELAY); -1 + message. */
int bench_connect(int transport, const char *host, int port);

/* A UDP socket bound to LOCAL:PORT (server), or connected to HOST:PORT (client). */
int bench_udp_bind(const char *local, int port);
int bench_udp_connect(const char *host, int port);

/* Closes a descriptor from the functions above. */
void bench_close(int transport, int fd);

/*
 * Reads exactly n bytes (0: all read, -1: error or early end of stream with
 * errno set, ECONNRESET for the end).  busy: the descriptor is O_NONBLOCK
 * and EAGAIN is retried at once in a loop (no sleep in the kernel).
 */
/* Nonzero: bench_read_full / bench_write_all use ri2n_recv / ri2n_send (the fast API). */
extern int bench_fast_io;
int bench_read_full(int fd, void *buf, size_t n, int busy);

/* Writes exactly n bytes; busy as above.  0 or -1 with errno. */
int bench_write_all(int fd, const void *buf, size_t n, int busy);

/* Sets or clears O_NONBLOCK; -1 with errno. */
int bench_set_nonblock(int fd, int on);

#endif
