/*
 * rn_hlink.h - the kernel's link and address events (rtnetlink), for every
 * driver that follows its rails while it runs.
 *
 * A driver opens one socket (rn_hlink_open), waits for it to be readable
 * in its own loop, reads what came (rn_hlink_read) and parses it with
 * rn_hlink_parse, a pure function: the unit test feeds it literal netlink
 * messages.  Only addresses (IPv4 and IPv6) and link state are reported;
 * everything else in the stream is skipped.
 */
#ifndef RN_HLINK_H
#define RN_HLINK_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rn_addr.h"
#include "rn_hrail.h"

typedef enum rn_hlink_type {
	RN_HLINK_ADDR_ADD, /* an address appeared on an interface (or was changed) */
	RN_HLINK_ADDR_DEL, /* an address was removed from an interface */
	RN_HLINK_LINK,     /* an interface's state (flags) is as `up` says */
	RN_HLINK_LINK_DEL, /* an interface was removed */
} rn_hlink_type;

typedef struct rn_hlink_ev {
	rn_hlink_type type;
	int ifindex;
	uint32_t ip;     /* address events: the local IPv4 address, host order; 0 for IPv6 */
	uint8_t prefix;  /* address events: its prefix length */
	uint8_t up;      /* link events: administratively up and carrier (IFF_LOWER_UP) */
	char name[IF_NAMESIZE]; /* link events: the interface's name ("" if absent) */
	uint8_t v6;      /* address events: an IPv6 address, in ip6 */
	uint8_t ip6[16]; /* address events: the IPv6 address, network order */
} rn_hlink_ev;

/*
 * Opens a non-blocking rtnetlink socket subscribed to link, IPv4 and IPv6
 * address changes.  Returns the descriptor, or -errno.
 */
int rn_hlink_open(void);

/*
 * Reads one datagram of events into buf (at most cap bytes).  Returns its
 * length, 0 when nothing is waiting, or -errno (-ENOBUFS: the kernel
 * dropped events, the driver must look at its rails afresh).
 */
ssize_t rn_hlink_read(int fd, void *buf, size_t cap);

/*
 * Parses len bytes of netlink messages into out[0..max).  Messages of other
 * types, other families and malformed ones are skipped; parsing stops at
 * the first message whose header is cut short.  Returns how many events
 * were written.
 */
int rn_hlink_parse(const void *buf, size_t len, rn_hlink_ev *out, int max);

/* An address event's address (port 0; link-local: the event's interface as scope). */
rn_addr rn_hlink_addr(const rn_hlink_ev *e);

/* Rail r takes an address event's address and prefix (either family; none given: a host's). */
void rn_hlink_give(const rn_hlink_ev *e, rn_rail_info *r);

#endif
