/*
 * rn_hsa.h - a socket address of either family: a rail socket's (AF_INET or
 * AF_INET6), and a connection's local and peer addresses as the API gives
 * them back.  A type only.
 */
#ifndef RN_HSA_H
#define RN_HSA_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

typedef union rn_hsa {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
} rn_hsa;

/* The length of a's socket address: sockaddr_in6's for AF_INET6, else sockaddr_in's. */
static inline socklen_t rn_hsa_len(const rn_hsa *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->v6) : sizeof(a->v4);
}

/* Sets a's port (host byte order), either family. */
static inline void rn_hsa_set_port(rn_hsa *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET6)
		a->v6.sin6_port = htons(port);
	else
		a->v4.sin_port = htons(port);
}

#endif
