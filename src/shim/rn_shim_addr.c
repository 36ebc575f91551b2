/*
 * rn_shim_addr.c - socket addresses as ri2n sees them (IPv4) and as the
 * program sees them (IPv4, or v4-mapped IPv6 on an AF_INET6 socket).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rn_shim.h"

int rn_shim_addr_to4(const struct sockaddr *a, socklen_t len, struct sockaddr_in *out)
{
	if (!a)
		return -1;
	if (a->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(out, a, sizeof(*out));
		memset(out->sin_zero, 0, sizeof(out->sin_zero));
		return 0;
	}
	if (a->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 s6;

		memcpy(&s6, a, sizeof(s6));
		memset(out, 0, sizeof(*out));
		out->sin_family = AF_INET;
		out->sin_port = s6.sin6_port;
		if (IN6_IS_ADDR_UNSPECIFIED(&s6.sin6_addr))
			return 0;
		if (IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr)) {
			memcpy(&out->sin_addr, &s6.sin6_addr.s6_addr[12], 4);
			return 0;
		}
	}
	return -1;
}

void rn_shim_addr_put(int family, const struct sockaddr_in *in4, struct sockaddr *a, socklen_t *len)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} u;
	socklen_t n;

	memset(&u, 0, sizeof(u));
	if (family == AF_INET6) {
		u.in6.sin6_family = AF_INET6;
		u.in6.sin6_port = in4->sin_port;
		if (in4->sin_addr.s_addr != htonl(INADDR_ANY)) {
			u.in6.sin6_addr.s6_addr[10] = 0xff;
			u.in6.sin6_addr.s6_addr[11] = 0xff;
			memcpy(&u.in6.sin6_addr.s6_addr[12], &in4->sin_addr, 4);
		}
		n = sizeof(u.in6);
	} else {
		u.in = *in4;
		u.in.sin_family = AF_INET;
		n = sizeof(u.in);
	}
	if (a && len)
		memcpy(a, &u, *len < n ? *len : n);
	if (len)
		*len = n;
}

const char *rn_shim_addr_str(const struct sockaddr_in *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

int rn_shim_addr_is_loopback(const struct sockaddr_in *a)
{
	return (ntohl(a->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}
