/*
 * rfi_name.c - an endpoint's name: every rail's address and port.
 *
 * Fixed size (RFI_NAME_LEN bytes) so that an application may pack names
 * end to end for one fi_av_insert, as Open MPI's mtl/ofi does, and at most
 * FI_NAME_MAX (64) bytes, the buffer mtl/ofi offers fi_getname.  Two forms,
 * network byte order, the bytes after the last rail zero:
 *   version 1, every rail IPv4: 'R', 1, u8 rails, 0,
 *     then per rail u32 ip, u16 port, u8 prefix (up to RN_MAX_RAILS);
 *   version 2, some rail IPv6: 'R', 2, u8 rails, 0,
 *     then per rail u8 family (4 or 6), u8 prefix, u16 port and the
 *     address (4 or 16 bytes): two IPv6 rails and two IPv4 ones at most.
 * A link-local IPv6 rail's scope is the reader's to supply (rfi_name_scope).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rfi.h"

#define NAME_MAGIC 'R'
#define RAIL_LEN 7 /* version 1 */
#define HEAD_LEN 4

static size_t rail_len2(const rn_rail_addr *a)
{
	return 4 + (a->v6 ? 16u : 4u);
}

static int any_v6(const rfi_name *nm)
{
	for (int i = 0; i < nm->n; i++)
		if (nm->rail[i].v6)
			return 1;
	return 0;
}

int rfi_name_fits(const rfi_name *nm)
{
	size_t len = HEAD_LEN;

	if (!any_v6(nm))
		return nm->n <= RN_MAX_RAILS;
	for (int i = 0; i < nm->n; i++)
		len += rail_len2(&nm->rail[i]);
	return len <= RFI_NAME_LEN;
}

void rfi_name_write(const rfi_name *nm, uint8_t out[RFI_NAME_LEN])
{
	size_t off = HEAD_LEN;
	int v2 = any_v6(nm);

	memset(out, 0, RFI_NAME_LEN);
	out[0] = NAME_MAGIC;
	out[1] = v2 ? 2 : 1;
	out[2] = (uint8_t)nm->n;
	for (int i = 0; i < nm->n; i++) {
		const rn_rail_addr *a = &nm->rail[i];
		uint32_t ip = htonl(a->ip);
		uint16_t port = htons(a->port);

		if (!v2) {
			memcpy(out + off, &ip, 4);
			memcpy(out + off + 4, &port, 2);
			out[off + 6] = a->prefix;
			off += RAIL_LEN;
			continue;
		}
		if (off + rail_len2(a) > RFI_NAME_LEN)
			break; /* rfi_name_fits said no: the endpoint was refused */
		out[off] = a->v6 ? 6 : 4;
		out[off + 1] = a->prefix;
		memcpy(out + off + 2, &port, 2);
		memcpy(out + off + 4, a->v6 ? (const void *)a->ip6 : (const void *)&ip, a->v6 ? 16 : 4);
		off += rail_len2(a);
	}
}

/* Rail i of a version 2 name at in + *off: 0, or -1 if it is cut short or not a family's. */
static int read_rail2(const uint8_t *in, size_t *off, rn_rail_addr *a)
{
	uint16_t port;
	uint32_t ip;

	if (*off + 4 > RFI_NAME_LEN || (in[*off] != 4 && in[*off] != 6))
		return -1;
	a->v6 = in[*off] == 6;
	if (*off + rail_len2(a) > RFI_NAME_LEN)
		return -1;
	a->prefix = in[*off + 1];
	memcpy(&port, in + *off + 2, 2);
	a->port = ntohs(port);
	if (a->v6) {
		memcpy(a->ip6, in + *off + 4, 16);
	} else {
		memcpy(&ip, in + *off + 4, 4);
		a->ip = ntohl(ip);
	}
	*off += rail_len2(a);
	return 0;
}

static int name_read(rfi_name *nm, const uint8_t *in, size_t len, int any_port)
{
	size_t off = HEAD_LEN;

	if (len < RFI_NAME_LEN || in[0] != NAME_MAGIC || (in[1] != 1 && in[1] != 2) ||
	    in[3] != 0 || in[2] == 0 || in[2] > RN_MAX_RAILS)
		return -FI_EINVAL;
	memset(nm, 0, sizeof(*nm));
	nm->n = in[2];
	for (int i = 0; i < nm->n; i++) {
		rn_rail_addr *a = &nm->rail[i];

		if (in[1] == 2) {
			if (read_rail2(in, &off, a) != 0)
				return -FI_EINVAL;
		} else {
			const uint8_t *r = in + off + RAIL_LEN * i;
			uint32_t ip;
			uint16_t port;

			memcpy(&ip, r, 4);
			memcpy(&port, r + 4, 2);
			*a = (rn_rail_addr){ .ip = ntohl(ip), .port = ntohs(port), .prefix = r[6] };
		}
		/* a source's port 0 means any: the rest is judged as with a port */
		rn_rail_addr judged = *a;

		judged.port = a->port || !any_port ? a->port : 1;
		if (!rn_addr_rail_valid(&judged))
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
		char ip[RN_ADDR_STRLEN];

		off += (size_t)snprintf(buf + off, len - off, "%s%s/%u", i ? "," : "",
					rn_addrport_str(rn_addr_of_rail(&nm->rail[i]), ip,
							sizeof(ip)),
					nm->rail[i].prefix);
	}
}

int rfi_name_eq(const rfi_name *a, const rfi_name *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (!rn_addr_eq(rn_addr_of_rail(&a->rail[i]), rn_addr_of_rail(&b->rail[i])))
			return 0;
	return 1;
}
