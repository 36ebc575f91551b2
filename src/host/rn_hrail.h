/*
 * rn_hrail.h - one of this host's rails as every driver opens its socket
 * on it (rn_rails.h finds them, rn_hpoll.h opens them).  A type only.
 */
#ifndef RN_HRAIL_H
#define RN_HRAIL_H

#include <net/if.h>
#include <stdint.h>

typedef struct rn_rail_info {
	char name[IF_NAMESIZE];
	uint32_t ip;     /* IPv4, host order; 0 for IPv6 (v6) or no address yet */
	uint8_t prefix;  /* 1..32 (IPv4), 1..128 (IPv6); 0: no address yet */
	int mtu;
	int ifindex;
	uint8_t backup;  /* "name:backup" in the list: data only while no other rail works */
	uint8_t pin;     /* shares its subnet with another rail: sockets pinned to `name` */
	uint8_t v6;      /* an IPv6 rail: its address is ip6 (link-local: scope ifindex) */
	uint8_t ip6[16]; /* IPv6, network byte order */
} rn_rail_info;

#endif
