/*
 * rn_addr.h - a rail's address, IPv4 or IPv6, and the subnet rules on it.
 *
 * An IPv4 address stays what it always was, a 32-bit word in host byte
 * order (`ip`), so every IPv4 path compares and hashes one word as before;
 * an IPv6 address sets `v6` and keeps its 16 bytes in network order in
 * `ip6` (ip is then 0).  A flag beside the word, rather than every address
 * held v4-mapped in 16 bytes, keeps the hundreds of IPv4 uses (sockets,
 * logs, tables keyed by the word) untouched, and a zeroed address is IPv4.
 *
 * Link-local IPv6 addresses (fe80::/10) mean something only on one link:
 * `scope` is the local interface index there (sin6_scope_id).  It is local
 * knowledge, never on the wire: rails pair on what both ends see (family,
 * address, prefix), and a path's link-local peer address takes its local
 * rail's interface (rn_conn_init_path).
 */
#ifndef RN_ADDR_H
#define RN_ADDR_H

#include <stdint.h>
#include <string.h>

/* An IPv4 or IPv6 address and UDP port (port in host byte order). */
typedef struct rn_addr {
	uint32_t ip; /* IPv4, host byte order; 0 for IPv6 */
	uint16_t port;
	uint8_t v6;      /* 1: the address is ip6 */
	uint32_t scope;  /* IPv6 link-local: the local interface index; else 0 */
	uint8_t ip6[16]; /* IPv6, network byte order */
} rn_addr;

/* One local rail as the driver sees it: its address and subnet. */
typedef struct rn_rail_addr {
	uint32_t ip; /* IPv4, host byte order; 0 for IPv6 */
	uint16_t port;
	uint8_t prefix; /* subnet prefix length, 1..32 (IPv4), 1..128 (IPv6) */
	/*
	 * Local rails only, never on the wire: the largest datagram (UDP
	 * payload) the rail's interface carries, the ceiling of its size
	 * search (rn_pmtu.h).  0: the connection's datagram size, no search.
	 */
	uint32_t max_dgram;
	/*
	 * Local rails only, never on the wire: a backup rail carries DATA only
	 * while no other rail of the connection works; until then it gets
	 * keepalives, so it stays judged and takes the data at once.
	 */
	uint8_t backup;
	uint8_t v6;      /* 1: the address is ip6 */
	uint32_t scope;  /* local rails only: a link-local rail's interface index */
	uint8_t ip6[16]; /* IPv6, network byte order */
} rn_rail_addr;

/* The same family, address and (IPv6) scope, whatever the ports. */
static inline int rn_addr_same_host(const rn_addr *a, const rn_addr *b)
{
	if (a->ip != b->ip || a->v6 != b->v6)
		return 0;
	return !a->v6 || (a->scope == b->scope && memcmp(a->ip6, b->ip6, sizeof(a->ip6)) == 0);
}

/* The same family, address, port and (IPv6) scope: one word and a port for IPv4. */
static inline int rn_addr_eq(rn_addr a, rn_addr b)
{
	return a.port == b.port && rn_addr_same_host(&a, &b);
}
/* Whether a is one of set's n addresses (rn_addr_eq). */
static inline int rn_addr_among(const rn_addr *set, int n, rn_addr a)
{
	for (int i = 0; i < n; i++)
		if (rn_addr_eq(set[i], a))
			return 1;
	return 0;
}
/* Whether a holds no address (0.0.0.0, ::) or no port: nothing to send to. */
int rn_addr_unset(rn_addr a);
/* Whether an IPv6 address is link-local (fe80::/10); 0 for IPv4. */
int rn_addr_link_local(rn_addr a);
/*
 * A 32-bit word standing for a's host, for hash tables and rate limits:
 * IPv4, the address itself; IPv6, the first `bits` bits (64: the /64 a
 * site hands to one host, 128: the whole address) folded into 32.
 */
uint32_t rn_addr_fold(rn_addr a, unsigned bits);
/* The address and port of a rail (scope included). */
rn_addr rn_addr_of_rail(const rn_rail_addr *r);
/*
 * Whether a and b are in one subnet of the same family, under the shorter
 * of their prefixes: what pairs two ends' rails (rn_rail_match).  Scopes
 * are not compared: they are each end's own.
 */
int rn_addr_rails_share(const rn_rail_addr *a, const rn_rail_addr *b);
/*
 * Whether address a is in rail r's subnet (r's prefix); a link-local a
 * with a scope must name r's interface.
 */
int rn_addr_in_rail(const rn_rail_addr *r, rn_addr a);
/*
 * Whether the rail entry is one a peer may announce: a port, a prefix
 * within the family's width, and an address that is neither unset nor
 * (IPv6) multicast.
 */
int rn_addr_rail_valid(const rn_rail_addr *r);

#endif
