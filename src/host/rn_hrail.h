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
	uint32_t ip;     /* host order */
	uint8_t prefix;
	int mtu;
	int ifindex;
	uint8_t backup;  /* "name:backup" in the list: data only while no other rail works */
	uint8_t pin;     /* shares its subnet with another rail: sockets pinned to `name` */
} rn_rail_info;

#endif
