/*
 * rn_hlink.c - the kernel's link and address events (rtnetlink): the socket
 * and a parser that trusts nothing it reads (lengths are checked before
 * every field, fields are copied out, never cast in place).
 */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <string.h>

#include "rn_hlink.h"
#include "rn_sys.h"

/* <net/if.h> lacks it; the kernel's <linux/if.h> would clash with it */
#define RN_IFF_LOWER_UP 0x10000

int rn_hlink_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = rn_sys_socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (rn_sys_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		rn_sys_close(fd);
		return -e;
	}
	return fd;
}

ssize_t rn_hlink_read(int fd, void *buf, size_t cap)
{
	ssize_t n = rn_sys_recv(fd, buf, cap, MSG_DONTWAIT);

	if (n >= 0)
		return n;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
}

/* The attributes after a message's fixed part: calls fn for each well-formed one. */
static void each_attr(const uint8_t *p, size_t len, rn_hlink_ev *ev,
		      void (*fn)(rn_hlink_ev *ev, int type, const uint8_t *d, size_t n))
{
	while (len >= sizeof(struct rtattr)) {
		struct rtattr a;
		size_t step;

		memcpy(&a, p, sizeof(a));
		if (a.rta_len < sizeof(a) || a.rta_len > len)
			return;
		fn(ev, a.rta_type, p + RTA_LENGTH(0), a.rta_len - RTA_LENGTH(0));
		step = RTA_ALIGN(a.rta_len);
		if (step >= len)
			return;
		p += step;
		len -= step;
	}
}

static int have_addr(const rn_hlink_ev *ev)
{
	uint8_t any = 0;

	for (int i = 0; i < 16; i++)
		any |= ev->ip6[i];
	return ev->ip != 0 || any != 0;
}

/*
 * IFA_LOCAL is the address itself; IFA_ADDRESS is the peer's on a
 * point-to-point link (IPv6 sends IFA_ADDRESS alone, IFA_LOCAL beside it
 * only with a peer).
 */
static void addr_attr(rn_hlink_ev *ev, int type, const uint8_t *d, size_t n)
{
	uint32_t ip;

	if (n != (ev->v6 ? 16u : 4u) || (type != IFA_LOCAL && type != IFA_ADDRESS))
		return;
	if (type == IFA_ADDRESS && have_addr(ev))
		return; /* IFA_LOCAL came first */
	if (ev->v6) {
		memcpy(ev->ip6, d, 16);
		return;
	}
	memcpy(&ip, d, 4);
	ev->ip = ntohl(ip);
}

static void link_attr(rn_hlink_ev *ev, int type, const uint8_t *d, size_t n)
{
	if (type != IFLA_IFNAME || n == 0)
		return;
	if (n > sizeof(ev->name) - 1)
		n = sizeof(ev->name) - 1;
	memcpy(ev->name, d, n);
	ev->name[n] = 0;
}

/* One message's body (len bytes after its header); 1 if it made an event. */
static int parse_one(uint16_t type, const uint8_t *p, size_t len, rn_hlink_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (type == RTM_NEWADDR || type == RTM_DELADDR) {
		struct ifaddrmsg m;

		if (len < sizeof(m))
			return 0;
		memcpy(&m, p, sizeof(m));
		if (m.ifa_family != AF_INET && m.ifa_family != AF_INET6)
			return 0;
		ev->v6 = m.ifa_family == AF_INET6;
		/*
		 * An IPv6 address under duplicate detection cannot be bound
		 * yet: the kernel tells again once it can.
		 */
		if (ev->v6 && type == RTM_NEWADDR &&
		    (m.ifa_flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED)))
			return 0;
		ev->type = type == RTM_NEWADDR ? RN_HLINK_ADDR_ADD : RN_HLINK_ADDR_DEL;
		ev->ifindex = (int)m.ifa_index;
		ev->prefix = m.ifa_prefixlen;
		each_attr(p + NLMSG_ALIGN(sizeof(m)), len - NLMSG_ALIGN(sizeof(m)), ev, addr_attr);
		/* an address event that names no address tells nothing */
		return have_addr(ev);
	}
	if (type == RTM_NEWLINK || type == RTM_DELLINK) {
		struct ifinfomsg m;

		if (len < sizeof(m))
			return 0;
		memcpy(&m, p, sizeof(m));
		ev->type = type == RTM_NEWLINK ? RN_HLINK_LINK : RN_HLINK_LINK_DEL;
		ev->ifindex = m.ifi_index;
		ev->up = type == RTM_NEWLINK && (m.ifi_flags & IFF_UP) &&
			 (m.ifi_flags & RN_IFF_LOWER_UP);
		each_attr(p + NLMSG_ALIGN(sizeof(m)), len - NLMSG_ALIGN(sizeof(m)), ev, link_attr);
		return 1;
	}
	return 0;
}

int rn_hlink_parse(const void *buf, size_t len, rn_hlink_ev *out, int max)
{
	const uint8_t *p = buf;
	int n = 0;

	while (n < max && len >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr h;
		size_t step;

		memcpy(&h, p, sizeof(h));
		if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
			break;
		if (h.nlmsg_type == NLMSG_DONE)
			break;
		n += parse_one(h.nlmsg_type, p + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN, &out[n]);
		step = NLMSG_ALIGN(h.nlmsg_len);
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return n;
}

rn_addr rn_hlink_addr(const rn_hlink_ev *e)
{
	rn_addr a = { .ip = e->ip, .v6 = e->v6 };

	if (e->v6) {
		memcpy(a.ip6, e->ip6, sizeof(a.ip6));
		if (rn_addr_link_local(a))
			a.scope = (uint32_t)e->ifindex;
	}
	return a;
}

void rn_hlink_give(const rn_hlink_ev *e, rn_rail_info *r)
{
	r->ip = e->ip;
	r->v6 = e->v6;
	memcpy(r->ip6, e->ip6, sizeof(r->ip6));
	r->prefix = e->prefix ? e->prefix : (e->v6 ? 128 : 32);
}
