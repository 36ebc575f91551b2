/*
 * rfi_addr.c - fi_getinfo's node and service made into ri2n names, so that
 * a program may find its peer by host and port (fabtests' default address
 * exchange) instead of passing names out of band.
 *
 * A source (FI_SOURCE, or no node) is this host: every rail, each bound to
 * the service's port (0: any).  A destination is the one rail the node names
 * with the service's port (a node alone must be reachable but names no
 * endpoint): the connection starts there, and the AV matches
 * the peer's full name, when its hello brings it, to this partial one
 * (rfi_av_find).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rfi.h"
#include "rn_log.h"

/* A port from the service string: 0 for none, -1 if it is not a port number. */
static long service_port(const char *service)
{
	char *end;
	long v;

	if (!service)
		return 0;
	v = strtol(service, &end, 10);
	if (!*service || *end || v < 1 || v > 65535)
		return -1;
	return v;
}

/* The rail whose subnet holds a, or -1. */
static int rail_for(const rn_rail_info *rails, int n, rn_addr a)
{
	for (int i = 0; i < n; i++) {
		rn_rail_addr r = rn_rails_addr(&rails[i], 0);

		if (rn_addr_in_rail(&r, a))
			return i;
	}
	return -1;
}

/*
 * The node's address (port 0): numeric (either family), or a host name
 * resolved.  Of a name's addresses, the first in one of our rails' subnets
 * (a dual-stack host's IPv4 one where our rails are IPv4), else the first.
 */
static int node_addr(const char *node, const rn_rail_info *rails, int n, rn_addr *out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM }, *res = NULL;

	if (getaddrinfo(node, NULL, &hints, &res) != 0 || !res)
		return -FI_ENODATA;
	*out = (rn_addr){ 0 };
	for (const struct addrinfo *r = res; r; r = r->ai_next) {
		rn_hsa sa;
		rn_addr a;

		memset(&sa, 0, sizeof(sa));
		memcpy(&sa, r->ai_addr, r->ai_addrlen < sizeof(sa) ? r->ai_addrlen : sizeof(sa));
		a = rn_hsock_sa_addr(&sa);
		if (!a.ip && !a.v6)
			continue;
		if (!out->ip && !out->v6)
			*out = a;
		if (rail_for(rails, n, a) >= 0) {
			*out = a;
			break;
		}
	}
	freeaddrinfo(res);
	return out->ip || out->v6 ? 0 : -FI_ENODATA;
}

/* Replaces *addr with the wire form of nm. */
static int put_name(void **addr, size_t *len, const rfi_name *nm)
{
	uint8_t *w = malloc(RFI_NAME_LEN);

	if (!w)
		return -FI_ENOMEM;
	rfi_name_write(nm, w);
	free(*addr);
	*addr = w;
	*len = RFI_NAME_LEN;
	return 0;
}

static int put_local(struct fi_info *fi, const rn_rail_info *rails, int n, uint16_t port)
{
	rfi_name nm = { .n = n };

	for (int i = 0; i < n; i++) {
		nm.rail[i] = rn_rails_addr(&rails[i], port);
		nm.rail[i].backup = 0; /* ours to know, not in the name */
	}
	if (!rfi_name_fits(&nm)) {
		rn_info("ri2n provider: fi_getinfo: the rails' addresses do not fit in an "
			"endpoint name (%d bytes: 2 IPv6 rails and 2 IPv4 ones at most)",
			RFI_NAME_LEN);
		return -FI_ENODATA;
	}
	return put_name(&fi->src_addr, &fi->src_addrlen, &nm);
}

int rfi_addr_fill(struct fi_info *fi, const rn_rail_info *rails, int nrails, const char *node,
		  const char *service, uint64_t flags)
{
	long port = service_port(service);
	rn_addr ip = { 0 };
	int r;

	if (port < 0) {
		rn_info("ri2n provider: fi_getinfo: service '%s' is not a port number", service);
		return -FI_ENODATA;
	}
	if (node && node_addr(node, rails, nrails, &ip) != 0) {
		rn_info("ri2n provider: fi_getinfo: cannot resolve node '%s'", node);
		return -FI_ENODATA;
	}
	if (!node || (flags & FI_SOURCE)) {
		/* this host: a node must be one of our rails */
		for (r = 0; node && r < nrails && !rn_rails_is(&rails[r], ip); r++)
			;
		if (node && r == nrails) {
			rn_info("ri2n provider: fi_getinfo: source node '%s' is no rail's address",
				node);
			return -FI_ENODATA;
		}
		if (node || service || !fi->src_addr)
			return put_local(fi, rails, nrails, (uint16_t)port);
		return 0;
	}
	r = rail_for(rails, nrails, ip);
	if (r < 0) {
		rn_info("ri2n provider: fi_getinfo: node '%s' is on none of our rails' subnets", node);
		return -FI_ENODATA;
	}
	if (port) { /* without a port the node names no endpoint: no destination */
		rfi_name dst = { .n = 1 };

		dst.rail[0] = (rn_rail_addr){ .ip = ip.ip, .port = (uint16_t)port,
					      .prefix = rails[r].prefix, .v6 = ip.v6 };
		memcpy(dst.rail[0].ip6, ip.ip6, sizeof(ip.ip6));
		if (put_name(&fi->dest_addr, &fi->dest_addrlen, &dst) != 0)
			return -FI_ENOMEM;
	}
	return fi->src_addr ? 0 : put_local(fi, rails, nrails, 0);
}
