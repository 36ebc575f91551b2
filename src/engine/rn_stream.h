/*
 * rn_stream.h - a connection inside the engine: the core's rn_conn, the
 * engine's end of the user's socketpair, and its timer.  Also the engine's
 * side of every socket command (bind, listen, connect, stats).
 *
 * Moving data: bytes the user writes are read from the socketpair into the
 * core's send ring as far as it has room (no room: the socketpair fills and
 * the user's write blocks, which is the back-pressure); bytes the core has
 * in order are written into the socketpair as far as it takes them (full:
 * the window the core advertises closes, which is the peer's back-pressure).
 */
#ifndef RN_STREAM_H
#define RN_STREAM_H

#include <stdint.h>

#include "rn_core.h"
#include "rn_engine.h"
#include "rn_port.h"

struct rn_stream;

/* A datagram for this stream's connection arrived on port socket idx. */
void rn_stream_input(struct rn_stream *st, int idx, rn_addr from, const uint8_t *d,
		     size_t len, uint64_t now);
/* A datagram for no known connection on a listening port. */
void rn_stream_listen_input(rn_port *p, int idx, rn_addr from, const uint8_t *d, size_t len,
			    uint64_t now);
/* ICMP port unreachable from `to` on port socket idx. */
void rn_stream_refused(rn_port *p, int idx, rn_addr to);
/* A hard error sending this stream's datagram on port socket idx. */
void rn_stream_send_error(struct rn_stream *st, int idx, int err);
/* A socket of the port is writable again: streams it held back may send. */
void rn_stream_port_writable(rn_port *p);
/* Services every stream marked since the last call. */
void rn_stream_service_dirty(void);

/* Engine side of the socket commands; each returns 0 or -errno. */
int rn_stream_cmd_create(rn_sock *s);
int rn_stream_cmd_bind(rn_sock *s, const struct sockaddr_in *a);
int rn_stream_cmd_listen(rn_sock *s);
int rn_stream_cmd_connect(rn_sock *s, const struct sockaddr_in *a);
int rn_stream_cmd_stats(rn_sock *s, rn_conn_stats *st);
enum { RN_EXIT_OWED, RN_EXIT_OPEN, RN_EXIT_RESET };
int rn_stream_cmd_pending(int mode);

/* What ri2n-stat shows of a connection. */
typedef struct rn_stream_info {
	const char *name;
	int fd, server;
	uint64_t created_ns;
	struct sockaddr_in local, peer;
	rn_conn_stats cs;
} rn_stream_info;

void rn_stream_get_info(struct rn_stream *st, rn_stream_info *out);

/* After fork, in the child: forget the parent's streams, closing only fds. */
void rn_stream_forget_all(void);

#endif
