/*
 * rn_shim_addr.c - socket addresses as ri2n sees them (rn_hsa: IPv4, or
 * IPv6 proper) and as the program sees them (IPv4, v4-mapped IPv6 on an
 * AF_INET6 socket, or IPv6).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rn_shim.h"

int rn_shim_addr_get(const struct sockaddr *a, socklen_t len, rn_hsa *out)
{
	struct sockaddr_in6 s6;

	memset(out, 0, sizeof(*out));
	if (!a)
		return -1;
	if (a->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(&out->v4, a, sizeof(out->v4));
		memset(out->v4.sin_zero, 0, sizeof(out->v4.sin_zero));
		return 0;
	}
	if (a->sa_family != AF_INET6 || len < (socklen_t)sizeof(struct sockaddr_in6))
		return -1;
	memcpy(&s6, a, sizeof(s6));
	if (IN6_IS_ADDR_UNSPECIFIED(&s6.sin6_addr) || IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr)) {
		/* "::" binds every rail of either family, as 0.0.0.0 does for ri2n */
		out->v4.sin_family = AF_INET;
		out->v4.sin_port = s6.sin6_port;
		if (IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr))
			memcpy(&out->v4.sin_addr, &s6.sin6_addr.s6_addr[12], 4);
		return 0;
	}
	out->v6.sin6_family = AF_INET6;
	out->v6.sin6_port = s6.sin6_port;
	out->v6.sin6_addr = s6.sin6_addr;
	/* a scope means something for a link-local address only */
	if (IN6_IS_ADDR_LINKLOCAL(&s6.sin6_addr))
		out->v6.sin6_scope_id = s6.sin6_scope_id;
	return 0;
}

void rn_shim_addr_put(int family, const rn_hsa *in, struct sockaddr *a, socklen_t *len)
{
	rn_hsa u;
	socklen_t n;

	memset(&u, 0, sizeof(u));
	if (in->sa.sa_family == AF_INET6 && family == AF_INET && len && *len < sizeof(u.v6)) {
		/*
		 * An IPv6 peer of an AF_INET listener (ri2n's listens on both
		 * families) and room for a sockaddr_in only: its port and no
		 * address, rather than a sockaddr_in6 cut short.
		 */
		u.v4.sin_family = AF_INET;
		u.v4.sin_port = in->v6.sin6_port;
		n = sizeof(u.v4);
	} else if (in->sa.sa_family == AF_INET6) {
		u.v6 = in->v6; /* the room allows it: shown as it is */
		n = sizeof(u.v6);
	} else if (family == AF_INET6) {
		u.v6.sin6_family = AF_INET6;
		u.v6.sin6_port = in->v4.sin_port;
		if (in->v4.sin_addr.s_addr != htonl(INADDR_ANY)) {
			u.v6.sin6_addr.s6_addr[10] = 0xff;
			u.v6.sin6_addr.s6_addr[11] = 0xff;
			memcpy(&u.v6.sin6_addr.s6_addr[12], &in->v4.sin_addr, 4);
		}
		n = sizeof(u.v6);
	} else {
		u.v4 = in->v4;
		u.v4.sin_family = AF_INET;
		n = sizeof(u.v4);
	}
	if (a && len)
		memcpy(a, &u, *len < n ? *len : n);
	if (len)
		*len = n;
}

const char *rn_shim_addr_str(const rn_hsa *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->v6.sin6_addr, ip, sizeof(ip));
		if (a->v6.sin6_scope_id)
			snprintf(buf, len, "[%s%%%u]:%u", ip, (unsigned)a->v6.sin6_scope_id,
				 ntohs(a->v6.sin6_port));
		else
			snprintf(buf, len, "[%s]:%u", ip, ntohs(a->v6.sin6_port));
		return buf;
	}
	inet_ntop(AF_INET, &a->v4.sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->v4.sin_port));
	return buf;
}

int rn_shim_addr_is_loopback(const rn_hsa *a)
{
	if (a->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&a->v6.sin6_addr);
	return (ntohl(a->v4.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}

int rn_shim_addr_is_any(const rn_hsa *a)
{
	if (a->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&a->v6.sin6_addr);
	return a->v4.sin_addr.s_addr == htonl(INADDR_ANY);
}

in_port_t rn_shim_addr_port(const rn_hsa *a)
{
	return a->sa.sa_family == AF_INET6 ? a->v6.sin6_port : a->v4.sin_port;
}
