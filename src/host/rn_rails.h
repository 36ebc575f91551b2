/*
 * rn_rails.h - this host's rails: which interfaces carry ri2n traffic.
 *
 * RI2N_RAILS lists them (interface names or addresses, comma separated, in
 * rail order); unset, every up, non-loopback interface with an IPv4 address
 * is a rail, one per subnet, in the order the system lists them (IPv4 only:
 * an IPv6 rail is always named).  Rails the list puts in one subnet are
 * pinned to their interfaces (`pin`); link-local IPv6 rails are told apart by
 * their interface (their scope) and need no pin.
 */
#ifndef RN_RAILS_H
#define RN_RAILS_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "rn_core.h"
#include "rn_hrail.h" /* rn_rail_info */

/*
 * Finds the rails from `spec` (RI2N_RAILS, may be NULL): interface names or
 * addresses, each optionally followed by ":backup".  Rails of one subnet are
 * marked `pin` (rn_rails_pin).  Returns how many, or -1 with a sentence in
 * err naming what is wrong.
 */
int rn_rails_discover(rn_rail_info *out, int max, const char *spec, char *err, size_t errlen);

/*
 * The same, for a driver that follows its rails (the engine, the BTL, the
 * provider: rn_netlink.c, rn_hgrow), which takes IPv6 rails too: an
 * interface named with no IPv4 address but a global or unique-local IPv6
 * one is an IPv6 rail; an IPv6 address may be given itself
 * ("2001:2:0:1::1"), a link-local one with its interface ("fe80::1%eth1"):
 * a link-local rail is only ever named by its address.  An interface the
 * list names that has no address yet is a rail waiting for one (ip 0,
 * prefix 0; its name, index and MTU set), which the driver opens once an
 * address comes.  At least one listed rail must have an address.
 */
int rn_rails_discover_any(rn_rail_info *out, int max, const char *spec, char *err,
			  size_t errlen);

/*
 * The MTU the datagram size (RI2N_MTU) follows: the smallest rail's.  It
 * counts IPv4's 28 header bytes; an IPv6 rail's are 48, so such a rail
 * counts as 20 smaller, and so does one waiting for its address, which may
 * come as IPv6 (a late IPv6 rail could not carry the others' datagrams:
 * EMSGSIZE).  IPv4 rails may search their way up again (rn_pmtu.h).
 */
int rn_rails_mtu(const rn_rail_info *r, int n);

/* Whether rail r has its address (either family); 0: it waits for one. */
static inline int rn_rails_has_addr(const rn_rail_info *r)
{
	return r->ip != 0 || r->v6;
}
/* Rail r's address with `port`, as sockets and the core take it (link-local: scope set). */
rn_rail_addr rn_rails_addr(const rn_rail_info *r, uint16_t port);
/* Whether the address a (its port aside) is rail r's own. */
int rn_rails_is(const rn_rail_info *r, rn_addr a);
/* Rail r's address for a person ("198.18.1.1", "2001:2:0:1::1", "fe80::1%3"): buf. */
const char *rn_rails_str(const rn_rail_info *r, char *buf, size_t len);

/*
 * Another address of rail i's interface in its family (not link-local, not
 * another of the n rails', one a socket can be bound to now), for a rail
 * whose own address went away: one in its subnet first.  1 with *out rail
 * i at that address, 0 if the interface has none.
 */
int rn_rails_other_addr(const rn_rail_info *rails, int n, int i, rn_rail_info *out);
/* The one of the n rails whose address a is (its port aside), -1 if none. */
int rn_rails_owner(const rn_rail_info *rails, int n, rn_addr a);

/* Keeps the n rails that have an address (in order) at the front of r: returns how many. */
int rn_rails_with_addr(rn_rail_info *r, int n);

/*
 * Marks every rail that shares its subnet with another `pin`, and checks
 * that the kernel lets this process pin a socket to each such interface
 * (SO_BINDTODEVICE).  Returns 0, or -1 with a sentence in err naming the
 * rails and what is missing.
 */
int rn_rails_pin(rn_rail_info *r, int n, char *err, size_t errlen);

/* "198.18.1.1" for an address in host order. */
const char *rn_ip_str(uint32_t ip, char *buf, size_t len);

/* Room for any rn_addr_str or rn_addrport_str: an IPv6 address, scope and port. */
#define RN_ADDR_STRLEN 80
/*
 * An address of either family for a person: "198.18.1.1", "2001:2:0:1::1",
 * "fe80::1%3" (link-local: its interface index).  Returns buf.
 */
const char *rn_addr_str(rn_addr a, char *buf, size_t len);
/* The same with the port: "198.18.1.1:7000", "[2001:2:0:1::1]:7000".  Returns buf. */
const char *rn_addrport_str(rn_addr a, char *buf, size_t len);

#endif
