/*
 * rn_railref.h - what a wait on rail sockets outside their driver names
 * (ri2n-run's poll and epoll through rn_api.h, the inline driver): a rail
 * socket, and a readiness reported for a ri2n socket.  Types only.
 */
#ifndef RN_RAILREF_H
#define RN_RAILREF_H

#include <stdint.h>

/* A rail socket: its number, and what tells it from a reused number. */
typedef struct rn_railref {
	int fd;
	uint64_t ino;  /* tells the socket from a reused number */
} rn_railref;

/* One readiness an epoll wait reports for a ri2n socket whose bytes wait in the core. */
typedef struct rn_ready {
	uint32_t events;
	uint64_t data;
} rn_ready;

#endif
