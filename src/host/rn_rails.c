/*
 * rn_rails.c - this host's rails.
 */
#define _GNU_SOURCE /* rn_hsock.h: struct mmsghdr */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_hsock.h"
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

static int prefix6_len(const uint8_t *m)
{
	int n = 0;

	for (int i = 0; i < 16 && m[i] == 0xff; i++)
		n += 8;
	if (n < 128)
		n += prefix_len((uint32_t)m[n / 8] << 24);
	return n;
}

static int link_local6(const uint8_t *b)
{
	return b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
}

/* One getifaddrs entry as a rail in *r: 1, or 0 if it is none (down, loopback, other family). */
static int candidate(const struct ifaddrs *i, rn_rail_info *r)
{
	if (!i->ifa_addr || !i->ifa_netmask || !(i->ifa_flags & IFF_UP) ||
	    (i->ifa_flags & IFF_LOOPBACK))
		return 0;
	memset(r, 0, sizeof(*r));
	if (i->ifa_addr->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
		const struct sockaddr_in *m = (const struct sockaddr_in *)i->ifa_netmask;

		r->ip = ntohl(a->sin_addr.s_addr);
		r->prefix = (uint8_t)prefix_len(ntohl(m->sin_addr.s_addr));
		if (r->prefix == 0)
			r->prefix = 32;
	} else if (i->ifa_addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)i->ifa_addr;
		const struct sockaddr_in6 *m = (const struct sockaddr_in6 *)i->ifa_netmask;

		r->v6 = 1;
		memcpy(r->ip6, &a->sin6_addr, 16);
		r->prefix = (uint8_t)prefix6_len((const uint8_t *)&m->sin6_addr);
		if (r->prefix == 0)
			r->prefix = 128;
	} else {
		return 0;
	}
	snprintf(r->name, sizeof(r->name), "%s", i->ifa_name);
	r->ifindex = (int)if_nametoindex(i->ifa_name);
	r->mtu = if_mtu(i->ifa_name);
	return 1;
}

/* Every usable interface address (IPv4, then IPv6 if v6), in system order. */
static int all_candidates(rn_rail_info *out, int max, int v6)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa) < 0)
		return -1;
	for (int fam = 0; fam <= v6; fam++)
		for (i = ifa; i && n < max; i = i->ifa_next)
			if (candidate(i, &out[n]) && out[n].v6 == fam)
				n++;
	freeifaddrs(ifa);
	return n;
}

static int same_subnet(const rn_rail_info *a, const rn_rail_info *b);

/* Whether a socket can be bound to a now (an IPv6 address still in duplicate detection cannot). */
static int bindable(const rn_rail_addr *a)
{
	rn_hsa sa;
	socklen_t len = rn_hsock_sa_of(&sa, rn_addr_of_rail(a));
	int fd = rn_sys_socket(a->v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 1; /* the bind itself will say */
	ok = rn_sys_bind(fd, &sa.sa, len) == 0;
	rn_sys_close(fd);
	return ok;
}

int rn_rails_owner(const rn_rail_info *rails, int n, rn_addr a)
{
	for (int k = 0; k < n; k++)
		if (rn_rails_has_addr(&rails[k]) && rn_rails_is(&rails[k], a))
			return k;
	return -1;
}

int rn_rails_other_addr(const rn_rail_info *rails, int nrails, int ri, rn_rail_info *out)
{
	const rn_rail_info *r = &rails[ri];
	rn_rail_info c[RN_MAX_RAILS * 4];
	int n = all_candidates(c, (int)(sizeof(c) / sizeof(c[0])), 1), best = -1;

	for (int i = 0; i < n; i++) {
		rn_rail_addr a = rn_rails_addr(&c[i], 0);

		if (c[i].ifindex != r->ifindex || c[i].v6 != r->v6 ||
		    (c[i].v6 && link_local6(c[i].ip6)) || rn_rails_owner(rails, nrails, rn_addr_of_rail(&a)) >= 0 ||
		    !bindable(&a))
			continue;
		if (best < 0 || (same_subnet(r, &c[i]) && !same_subnet(r, &c[best])))
			best = i;
	}
	if (best < 0)
		return 0;
	*out = *r;
	out->ip = c[best].ip;
	memcpy(out->ip6, c[best].ip6, sizeof(out->ip6));
	out->prefix = c[best].prefix;
	return 1;
}

rn_rail_addr rn_rails_addr(const rn_rail_info *r, uint16_t port)
{
	rn_rail_addr a = { .ip = r->ip, .port = port, .prefix = r->prefix, .backup = r->backup,
			   .v6 = r->v6 };

	if (r->v6) {
		memcpy(a.ip6, r->ip6, sizeof(a.ip6));
		if (link_local6(r->ip6))
			a.scope = (uint32_t)r->ifindex;
	}
	return a;
}

int rn_rails_is(const rn_rail_info *r, rn_addr a)
{
	if (a.v6 != r->v6 || a.ip != r->ip)
		return 0;
	if (!a.v6)
		return 1;
	if (memcmp(a.ip6, r->ip6, sizeof(a.ip6)) != 0)
		return 0;
	/* a link-local address is the rail's on the rail's interface only (unscoped: any) */
	return !a.scope || !link_local6(a.ip6) || a.scope == (uint32_t)r->ifindex;
}

const char *rn_rails_str(const rn_rail_info *r, char *buf, size_t len)
{
	rn_rail_addr a = rn_rails_addr(r, 0);

	return rn_addr_str(rn_addr_of_rail(&a), buf, len);
}

/* Whether two rails with addresses are in one subnet; link-local ones never (their scope tells). */
static int same_subnet(const rn_rail_info *a, const rn_rail_info *b)
{
	rn_rail_addr x = rn_rails_addr(a, 0), y = rn_rails_addr(b, 0);

	if (a->v6 && b->v6 && link_local6(a->ip6) && link_local6(b->ip6))
		return a->ifindex == b->ifindex;
	return rn_addr_rails_share(&x, &y);
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

/* Rail r's subnet for a person: "198.18.0.0", "2001:2:0:1::". */
static void net_str(const rn_rail_info *r, char *buf, size_t len)
{
	rn_rail_addr a = rn_rails_addr(r, 0);

	a.scope = 0;
	if (!a.v6) {
		a.ip &= r->prefix >= 32 ? UINT32_MAX : ~(UINT32_MAX >> r->prefix);
	} else {
		for (int k = 0; k < 16; k++)
			if (k * 8 >= r->prefix)
				a.ip6[k] = 0;
			else if (k * 8 + 8 > r->prefix)
				a.ip6[k] &= (uint8_t)(0xff << (8 - (r->prefix - k * 8)));
	}
	rn_addr_str(rn_addr_of_rail(&a), buf, len);
}

int rn_rails_pin(rn_rail_info *r, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++) {
		int other = -1, rc;
		char net[RN_ADDR_STRLEN];

		if (!rn_rails_has_addr(&r[i]))
			continue; /* waiting for its address: in no subnet yet */
		for (int j = 0; j < n && other < 0; j++)
			if (j != i && rn_rails_has_addr(&r[j]) && same_subnet(&r[i], &r[j]))
				other = j;
		r[i].pin = other >= 0;
		if (other < 0 || (rc = pin_allowed(r[i].name)) == 0)
			continue;
		net_str(&r[i], net, sizeof(net));
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

/* Interface `name`, which has no address yet, as a rail waiting for one; -1 if none. */
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

/*
 * An IPv6 address in tok, "2001:2::1" or "fe80::1%eth1" / "fe80::1%3":
 * 1 with its bytes and interface index (0: none given), 0 if tok is not one.
 */
static int parse6(const char *tok, uint8_t ip6[16], int *ifindex)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *pct = strchr(tok, '%');
	size_t len = pct ? (size_t)(pct - tok) : strlen(tok);

	*ifindex = 0;
	if (len >= sizeof(addr))
		return 0;
	memcpy(addr, tok, len);
	addr[len] = 0;
	if (inet_pton(AF_INET6, addr, ip6) != 1)
		return 0;
	if (pct && pct[1]) {
		char *end;
		long k = strtol(pct + 1, &end, 10);

		*ifindex = *end == 0 && k > 0 && k < INT32_MAX ? (int)k
							      : (int)if_nametoindex(pct + 1);
		if (*ifindex <= 0)
			*ifindex = -1; /* an interface that is not there */
	}
	return 1;
}

/*
 * The candidate tok names: an IPv4 address, an IPv6 one (v6; link-local
 * with its interface), or an interface: its IPv4 address, else (v6) its
 * first global or unique-local IPv6 one.  Returns its index, -1 if none,
 * -2 (err set) for a link-local address without its interface.  *addr says
 * whether tok is an address.
 */
static int lookup(const rn_rail_info *cand, int nc, const char *tok, int v6, int *addr,
		  char *err, size_t errlen)
{
	struct in_addr a;
	uint8_t ip6[16];
	int ifindex;

	*addr = 1;
	if (inet_pton(AF_INET, tok, &a) == 1) {
		for (int i = 0; i < nc; i++)
			if (!cand[i].v6 && cand[i].ip == ntohl(a.s_addr))
				return i;
		return -1;
	}
	if (v6 && parse6(tok, ip6, &ifindex)) {
		if (link_local6(ip6) && ifindex == 0) {
			snprintf(err, errlen, "RI2N_RAILS: '%s' is link-local: name its interface "
					      "too, as in 'fe80::1%%eth1'", tok);
			return -2;
		}
		for (int i = 0; i < nc; i++)
			if (cand[i].v6 && memcmp(cand[i].ip6, ip6, 16) == 0 &&
			    (!link_local6(ip6) || cand[i].ifindex == ifindex))
				return i;
		return -1;
	}
	*addr = 0;
	for (int i = 0; i < nc; i++)
		if (!cand[i].v6 && strcmp(cand[i].name, tok) == 0)
			return i;
	for (int i = 0; v6 && i < nc; i++)
		if (cand[i].v6 && !link_local6(cand[i].ip6) && strcmp(cand[i].name, tok) == 0)
			return i;
	return -1;
}

/* Whether two rails with addresses have the same one (a link-local one: on one interface). */
static int same_addr(const rn_rail_info *a, const rn_rail_info *b)
{
	rn_rail_addr x = rn_rails_addr(a, 0), y = rn_rails_addr(b, 0);

	return rn_addr_eq(rn_addr_of_rail(&x), rn_addr_of_rail(&y));
}

/* A token's ":backup" mark, taken off: 1 if it had one, 0 if none, -1 (err set) for another. */
static int take_mark(char *tok, int v6, char *err, size_t errlen)
{
	size_t len = strlen(tok), mlen = strlen(":backup");
	uint8_t ip6[16];
	int ifindex;

	if (len > mlen && strcmp(tok + len - mlen, ":backup") == 0) {
		tok[len - mlen] = 0;
		return 1;
	}
	if (!strchr(tok, ':') || (v6 && parse6(tok, ip6, &ifindex)))
		return 0; /* no mark, or an IPv6 address's colons */
	snprintf(err, errlen, "RI2N_RAILS: '%s': the only mark a rail takes is ':backup'", tok);
	return -1;
}

static int discover(rn_rail_info *out, int max, const char *spec, int waiting, int v6, char *err,
		    size_t errlen)
{
	rn_rail_info cand[64];
	int nc = all_candidates(cand, 64, v6 && spec && *spec), n = 0;
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
		int found, backup = take_mark(tok, v6, err, errlen), addr;

		if (backup < 0)
			return -1;
		if (n == max) {
			snprintf(err, errlen, "RI2N_RAILS lists more than %d rails", max);
			return -1;
		}
		found = lookup(cand, nc, tok, v6, &addr, err, errlen);
		if (found == -2)
			return -1;
		if (found < 0 && waiting && !addr && waiting_rail(&out[n], tok) == 0) {
			out[n++].backup = (uint8_t)backup;
			continue;
		}
		if (found < 0) {
			snprintf(err, errlen, v6 ? "RI2N_RAILS: '%s' is not an up interface with an "
						   "IPv4 or IPv6 address (nor such an address)"
						 : "RI2N_RAILS: '%s' is not an up interface with an "
						   "IPv4 address (nor such an address)", tok);
			return -1;
		}
		for (int j = 0; j < n; j++) {
			if (rn_rails_has_addr(&out[j]) && same_addr(&out[j], &cand[found])) {
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
	for (int i = 0; n > 0 && i < n && !rn_rails_has_addr(&out[i]); i++)
		if (i == n - 1) {
			snprintf(err, errlen, v6 ? "RI2N_RAILS: no listed interface has an address yet"
						 : "RI2N_RAILS: no listed interface has an IPv4 address yet");
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
	return discover(out, max, spec, 0, 0, err, errlen);
}

int rn_rails_discover_any(rn_rail_info *out, int max, const char *spec, char *err,
			  size_t errlen)
{
	return discover(out, max, spec, 1, 1, err, errlen);
}

int rn_rails_mtu(const rn_rail_info *r, int n)
{
	int mtu = 65535;

	for (int i = 0; i < n; i++) {
		int six = r[i].v6 || !rn_rails_has_addr(&r[i]);

		if (r[i].mtu - (six ? 20 : 0) < mtu)
			mtu = r[i].mtu - (six ? 20 : 0);
	}
	return mtu;
}

int rn_rails_with_addr(rn_rail_info *r, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (rn_rails_has_addr(&r[i]))
			r[k++] = r[i];
	return k;
}
