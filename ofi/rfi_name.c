/*
 * rfi_name.c - an endpoint's name: every rail's address and port.
 *
 * Fixed size (RFI_NAME_LEN bytes) so that an application may pack names
 * end to end for one fi_av_insert, as Open MPI's mtl/ofi does, and at most
 * FI_NAME_MAX (64) bytes, the buffer mtl/ofi offers fi_getname:
 *   'R', u8 version (1), u8 rails, u8 0,
 *   then RN_MAX_RAILS times: u32 ip, u16 port, u8 prefix
 * (network byte order; rails past the count are zero).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rfi.h"

#define NAME_MAGIC 'R'
#define RAIL_LEN 7
#define NAME_VERSION 1

void rfi_name_write(const rfi_name *nm, uint8_t out[RFI_NAME_LEN])
{
	memset(out, 0, RFI_NAME_LEN);
	out[0] = NAME_MAGIC;
	out[1] = NAME_VERSION;
	out[2] = (uint8_t)nm->n;
	for (int i = 0; i < nm->n; i++) {
		uint8_t *r = out + 4 + RAIL_LEN * i;
		uint32_t ip = htonl(nm->rail[i].ip);
		uint16_t port = htons(nm->rail[i].port);

		memcpy(r, &ip, 4);
		memcpy(r + 4, &port, 2);
		r[6] = nm->rail[i].prefix;
	}
}

static int name_read(rfi_name *nm, const uint8_t *in, size_t len, int any_port)
{
	if (len < RFI_NAME_LEN || in[0] != NAME_MAGIC || in[1] != NAME_VERSION || in[3] != 0 ||
	    in[2] == 0 || in[2] > RN_MAX_RAILS)
		return -FI_EINVAL;
	memset(nm, 0, sizeof(*nm));
	nm->n = in[2];
	for (int i = 0; i < nm->n; i++) {
		const uint8_t *r = in + 4 + RAIL_LEN * i;
		uint32_t ip;
		uint16_t port;

		memcpy(&ip, r, 4);
		memcpy(&port, r + 4, 2);
		nm->rail[i] = (rn_rail_addr){ .ip = ntohl(ip), .port = ntohs(port), .prefix = r[6] };
		if (nm->rail[i].prefix == 0 || nm->rail[i].prefix > 32 ||
		    (nm->rail[i].port == 0 && !any_port))
			return -FI_EINVAL;
	}
	return 0;
}

int rfi_name_read(rfi_name *nm, const uint8_t *in, size_t len)
{
	return name_read(nm, in, len, 0);
}

int rfi_name_read_src(rfi_name *nm, const uint8_t *in, size_t len)
{
	return name_read(nm, in, len, 1);
}

void rfi_name_str(const rfi_name *nm, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = 0;
	off += (size_t)snprintf(buf, len, "ri2n://");
	for (int i = 0; i < nm->n && off < len; i++) {
		char ip[INET_ADDRSTRLEN];

		off += (size_t)snprintf(buf + off, len - off, "%s%s:%u/%u", i ? "," : "",
					rn_ip_str(nm->rail[i].ip, ip, sizeof(ip)),
					nm->rail[i].port, nm->rail[i].prefix);
	}
}

int rfi_name_eq(const rfi_name *a, const rfi_name *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->rail[i].ip != b->rail[i].ip || a->rail[i].port != b->rail[i].port)
			return 0;
	return 1;
}
