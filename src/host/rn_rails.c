/*
 * rn_rails.c - this host's rails.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_rails.h"
#include "rn_sys.h"

const char *rn_ip_str(uint32_t ip, char *buf, size_t len)
{
	struct in_addr a = { htonl(ip) };

	return inet_ntop(AF_INET, &a, buf, (socklen_t)len) ? buf : "?";
}

const char *rn_addr_str(rn_addr a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (!a.v6)
		return rn_ip_str(a.ip, buf, len);
	if (!inet_ntop(AF_INET6, a.ip6, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	if (a.scope)
		snprintf(buf, len, "%s%%%u", ip, a.scope);
	else
		snprintf(buf, len, "%s", ip);
	return buf;
}

const char *rn_addrport_str(rn_addr a, char *buf, size_t len)
{
	char ip[RN_ADDR_STRLEN];

	/* brackets keep an IPv6 address's colons apart from the port's */
	snprintf(buf, len, a.v6 ? "[%s]:%u" : "%s:%u", rn_addr_str(a, ip, sizeof(ip)), a.port);
	return buf;
}

static int prefix_len(uint32_t mask)
{
	int n = 0;

	while (mask & 0x80000000u) {
		n++;
		mask <<= 1;
	}
	return n;
}

static int if_mtu(const char *name)
{
	struct ifreq ifr;
	int fd = rn_sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = 1500;

	if (fd < 0)
		return mtu;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (rn_sys_ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	rn_sys_close(fd);
	return mtu;
}

/* Every usable IPv4 interface address, in system order. */
static int all_candidates(rn_rail_info *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa) < 0)
		return -1;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		struct sockaddr_in *a = (struct sockaddr_in *)i->ifa_addr;
		struct sockaddr_in *m = (struct sockaddr_in *)i->ifa_netmask;

		if (!a || a->sin_family != AF_INET || !m || !(i->ifa_flags & IFF_UP) ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", i->ifa_name);
		out[n].ip = ntohl(a->sin_addr.s_addr);
		out[n].prefix = (uint8_t)prefix_len(ntohl(m->sin_addr.s_addr));
		out[n].ifindex = (int)if_nametoindex(i->ifa_name);
		out[n].mtu = if_mtu(i->ifa_name);
		if (out[n].prefix == 0)
			out[n].prefix = 32;
		n++;
	}
	freeifaddrs(ifa);
	return n;
}

static int same_subnet(const rn_rail_info *a, const rn_rail_info *b)
{
	uint8_t p = a->prefix < b->prefix ? a->prefix : b->prefix;
	uint32_t mask = p >= 32 ? UINT32_MAX : ~(UINT32_MAX >> p);

	return (a->ip & mask) == (b->ip & mask);
}

/*
 * Whether this process may pin a socket to interface `name`: the rail
 * sockets do it once each (rn_hsock_open), so a fresh socket tells.  0 or
 * -errno.
 */
static int pin_allowed(const char *name)
{
	int fd = rn_sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	if (rn_sys_setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, name, (socklen_t)strlen(name)) < 0)
		rc = -errno;
	rn_sys_close(fd);
	return rc;
}

int rn_rails_pin(rn_rail_info *r, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		int other = -1, rc;
		char net[32];

		if (r[i].ip == 0)
			continue; /* waiting for its address: in no subnet yet */
		for (int j = 0; j < n && other < 0; j++)
			if (j != i && r[j].ip != 0 && same_subnet(&r[i], &r[j]))
				other = j;
		r[i].pin = other >= 0;
		if (other < 0 || (rc = pin_allowed(r[i].name)) == 0)
			continue;
		rn_ip_str(r[i].ip & (r[i].prefix >= 32 ? UINT32_MAX : ~(UINT32_MAX >> r[i].prefix)),
			  net, sizeof(net));
		/* the kernel's rule: CAP_NET_RAW, or from Linux 5.7 on a socket not yet pinned */
		snprintf(err, errlen, "'%s' and '%s' share %s/%u: rails in one subnet need "
				      "SO_BINDTODEVICE on their interfaces, and the kernel refused it "
				      "for '%s' (%s%s)", r[i].name, r[other].name, net, r[i].prefix,
			 r[i].name, strerror(-rc),
			 rc == -EPERM ? ": CAP_NET_RAW is needed before Linux 5.7" : "");
		return -1;
	}
	return 0;
}

/* Interface `name`, which has no IPv4 address yet, as a rail waiting for one; -1 if none. */
static int waiting_rail(rn_rail_info *r, const char *name)
{
	int ifindex = (int)if_nametoindex(name);

	if (ifindex <= 0)
		return -1;
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ifindex = ifindex;
	r->mtu = if_mtu(name);
	return 0;
}

static int discover(rn_rail_info *out, int max, const char *spec, int waiting, char *err,
		    size_t errlen)
{
	rn_rail_info cand[64];
	int nc = all_candidates(cand, 64), n = 0;
	char buf[256], *tok, *save = NULL;

	if (nc < 0) {
		snprintf(err, errlen, "cannot list network interfaces");
		return -1;
	}
	if (!spec || !*spec) {
		for (int i = 0; i < nc && n < max; i++) {
			int dup = 0;

			for (int j = 0; j < n; j++)
				dup |= same_subnet(&out[j], &cand[i]);
			if (!dup)
				out[n++] = cand[i];
		}
		if (n == 0)
			snprintf(err, errlen, "no up, non-loopback IPv4 interface to use as a rail");
		return n ? n : -1;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		char *mark = strchr(tok, ':');
		struct in_addr a;
		int found = -1, backup = 0;

		if (mark) {
			if (strcmp(mark, ":backup") != 0) {
				snprintf(err, errlen, "RI2N_RAILS: '%s': the only mark a rail takes is "
						      "':backup'", tok);
				return -1;
			}
			*mark = 0;
			backup = 1;
		}
		if (n == max) {
			snprintf(err, errlen, "RI2N_RAILS lists more than %d rails", max);
			return -1;
		}
		if (inet_pton(AF_INET, tok, &a) == 1) {
			for (int i = 0; i < nc && found < 0; i++)
				if (cand[i].ip == ntohl(a.s_addr))
					found = i;
		} else {
			for (int i = 0; i < nc && found < 0; i++)
				if (strcmp(cand[i].name, tok) == 0)
					found = i;
		}
		if (found < 0 && waiting && inet_pton(AF_INET, tok, &a) != 1 &&
		    waiting_rail(&out[n], tok) == 0) {
			out[n++].backup = (uint8_t)backup;
			continue;
		}
		if (found < 0) {
			snprintf(err, errlen, "RI2N_RAILS: '%s' is not an up interface with an IPv4 "
					      "address (nor such an address)", tok);
			return -1;
		}
		for (int j = 0; j < n; j++) {
			if (out[j].ip == cand[found].ip) {
				snprintf(err, errlen, "RI2N_RAILS: '%s' names rail '%s' again; each "
						      "rail is listed once", tok, out[j].name);
				return -1;
			}
		}
		out[n] = cand[found];
		out[n++].backup = (uint8_t)backup;
	}
	if (n == 0)
		snprintf(err, errlen, "RI2N_RAILS is empty");
	for (int i = 0; n > 0 && i < n && out[i].ip == 0; i++)
		if (i == n - 1) {
			snprintf(err, errlen, "RI2N_RAILS: no listed interface has an IPv4 address yet");
			return -1;
		}
	for (int i = 0; n > 0 && i < n && out[i].backup; i++)
		if (i == n - 1) {
			snprintf(err, errlen, "RI2N_RAILS: every rail is a backup; at least one must not be");
			return -1;
		}
	if (n > 0 && rn_rails_pin(out, n, err, errlen) < 0)
		return -1;
	return n ? n : -1;
}

int rn_rails_discover(rn_rail_info *out, int max, const char *spec, char *err, size_t errlen)
{
	return discover(out, max, spec, 0, err, errlen);
}

int rn_rails_discover_waiting(rn_rail_info *out, int max, const char *spec, char *err,
			      size_t errlen)
{
	return discover(out, max, spec, 1, err, errlen);
}

int rn_rails_with_addr(rn_rail_info *r, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (r[i].ip != 0)
			r[k++] = r[i];
	return k;
}
