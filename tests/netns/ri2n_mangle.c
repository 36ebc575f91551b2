/*
 * ri2n_mangle - an on-path attacker in a rail's switch, for the namespace tests.
 *
 *   ri2n_mangle IN_IF OUT_IF DST_IP DST_PORT SECONDS MAXPPS
 *
 * Runs in a switch namespace of the test bed.  It watches the frames a host
 * puts on the rail (a packet socket on IN_IF, the switch port facing the
 * sender) and, for every UDP datagram to DST_IP:DST_PORT, injects a mangled
 * copy straight out of OUT_IF (the port facing the receiver) with the
 * sender's own MAC and IP addresses and ports.  Each copy is one of:
 *
 *   flipped    1-8 random bits of the UDP payload inverted
 *   truncated  the payload cut short by a random amount (1 byte at least kept)
 *   extended   1-64 random bytes appended, as far as OUT_IF's MTU allows (a
 *              datagram already at the MTU gets one of the other three)
 *   replayed   the datagram as it was
 *
 * The IP total length and header checksum are fixed up and the UDP checksum
 * is left out (0, which IPv4 allows), so the receiver's kernel delivers every
 * copy to the socket.  Datagrams with IP options or fragments are passed over.
 *
 * A sender's UDP GSO run crosses the veth as one frame; the virtio-net header
 * the socket asks for gives the size of its datagrams, and each of them is
 * copied on its own.  At most MAXPPS copies a second (a token bucket holding
 * a tenth of a second's worth); datagrams beyond that are passed over.
 *
 * SECONDS, SIGTERM or SIGINT end it.  It then prints one line,
 *
 *   mangle seen=N sent=M flipped=A truncated=B extended=C replayed=D
 *
 * where N counts the datagrams to DST_IP:DST_PORT it saw, M the copies the
 * kernel took, and A..D those copies by kind (A+B+C+D = M).  Copies refused
 * are reported on stderr.  Exit status: 0 done, 1 system error, 2 bad usage.
 * The copies go only out of OUT_IF; the tests run it in their own namespaces.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* UDP GSO (older uapi headers lack it) */
#endif

#define FRAME_MAX 65600 /* a 64 KiB GSO run and its headers */
#define EXTEND_MAX 64
#define HDRS (ETH_HLEN + sizeof(struct iphdr) + sizeof(struct udphdr))

enum kind { FLIP, TRUNCATE, EXTEND, REPLAY, NKINDS };

typedef struct attacker {
	int in_fd, out_fd;
	struct sockaddr_ll out; /* OUT_IF; the destination MAC is set per copy */
	size_t mtu;		/* OUT_IF's: the largest IP packet it sends */
	struct in_addr dst;
	uint16_t port;
	double pps, tokens;
	uint64_t refilled;	/* when the tokens were last topped up */
	uint64_t seen, sent, refused, by_kind[NKINDS];
	int last_errno;
} attacker;

static volatile sig_atomic_t stop;
static uint64_t rng_state;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rnd(void)
{
	/* xorshift64*: fast and good enough to make noise */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/*
 * A packet socket bound to interface `name` for protocol `proto` (host order;
 * 0 receives nothing, for a socket that only sends).  Exits with a message on
 * failure.
 */
static int packet_socket(const char *name, int proto, int *ifindex)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons((uint16_t)proto) };
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons((uint16_t)proto));

	if (fd < 0) {
		perror("ri2n_mangle: packet socket (root needed)");
		exit(1);
	}
	sll.sll_ifindex = (int)if_nametoindex(name);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "ri2n_mangle: no interface %s in this namespace\n", name);
		exit(2);
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "ri2n_mangle: bind to %s: %s\n", name, strerror(errno));
		exit(1);
	}
	*ifindex = sll.sll_ifindex;
	return fd;
}

static size_t if_mtu(int fd, const char *name)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0 || ifr.ifr_mtu < 576) {
		fprintf(stderr, "ri2n_mangle: MTU of %s: %s\n", name,
			ifr.ifr_mtu ? "below 576" : strerror(errno));
		exit(1);
	}
	return (size_t)ifr.ifr_mtu;
}

/*
 * The watching socket: every frame IN_IF receives.  A bridge port hands its
 * frames to the bridge before sockets for one protocol see them, so it takes
 * ETH_P_ALL; frames the bridge sends out of IN_IF are not wanted.  With a
 * virtio-net header in front of each frame, a GSO run says its segment size.
 */
static int watch_socket(const char *name)
{
	int fd, idx, on = 1;

	fd = packet_socket(name, ETH_P_ALL, &idx);
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof(on)) < 0) {
		perror("ri2n_mangle: PACKET_VNET_HDR");
		exit(1);
	}
	/* best effort: the packet type is checked on every frame anyway */
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof(on));
	return fd;
}

/*
 * The UDP payload of frame f (n bytes) if it carries a whole IPv4 datagram
 * without options to dst:port, else NULL.  *plen is the payload's length.
 */
static const uint8_t *udp_payload(const uint8_t *f, size_t n, const attacker *a, size_t *plen)
{
	const struct iphdr *ip = (const struct iphdr *)(f + ETH_HLEN);
	const struct udphdr *udp = (const struct udphdr *)(ip + 1);
	size_t tot;

	if (n < HDRS || ((const struct ethhdr *)f)->h_proto != htons(ETH_P_IP))
		return NULL;
	tot = ntohs(ip->tot_len);
	if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    ip->daddr != a->dst.s_addr || (ntohs(ip->frag_off) & (IP_MF | IP_OFFMASK)) ||
	    tot < sizeof(*ip) + sizeof(*udp) || tot > n - ETH_HLEN)
		return NULL;
	if (udp->dest != htons(a->port) || ntohs(udp->len) != tot - sizeof(*ip))
		return NULL;
	*plen = tot - sizeof(*ip) - sizeof(*udp);
	return (const uint8_t *)(udp + 1);
}

/* One token of the rate limit, if there is one. */
static int take_token(attacker *a)
{
	uint64_t t = now_ns();
	double cap = a->pps / 10 > 1 ? a->pps / 10 : 1;

	a->tokens += (double)(t - a->refilled) * a->pps / 1e9;
	a->refilled = t;
	if (a->tokens > cap)
		a->tokens = cap;
	if (a->tokens < 1)
		return 0;
	a->tokens -= 1;
	return 1;
}

/*
 * Mangles the payload pl (plen bytes, room for `room` more after it); returns
 * the kind of copy and sets *len to its new payload length.
 */
static enum kind mangle(uint8_t *pl, size_t plen, size_t room, size_t *len)
{
	enum kind k = (enum kind)(rnd() % NKINDS);

	if (k == EXTEND && !room)
		k = (enum kind)(rnd() % 3 == 0 ? FLIP : rnd() % 2 ? TRUNCATE : REPLAY);
	if (k == TRUNCATE && plen < 2)
		k = FLIP;
	*len = plen;
	switch (k) {
	case FLIP:
		for (uint64_t i = 0, n = 1 + rnd() % 8; plen && i < n; i++) {
			uint64_t bit = rnd() % (plen * 8);

			pl[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		break;
	case TRUNCATE:
		*len = 1 + rnd() % (plen - 1);
		break;
	case EXTEND:
		*len = plen + 1 + rnd() % (room < EXTEND_MAX ? room : EXTEND_MAX);
		for (size_t i = plen; i < *len; i++)
			pl[i] = (uint8_t)rnd();
		break;
	default:
		break;
	}
	return k;
}

/*
 * Builds a mangled copy of one datagram, payload seg (n bytes), under the
 * headers of frame f, and sends it out of OUT_IF.
 */
static void inject(attacker *a, const uint8_t *f, const uint8_t *seg, size_t n)
{
	/* 2 bytes in, so the IP header after the 14-byte Ethernet one is aligned */
	static _Alignas(8) uint8_t space[2 + FRAME_MAX + EXTEND_MAX];
	uint8_t *copy = space + 2;
	struct iphdr *ip = (struct iphdr *)(copy + ETH_HLEN);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	size_t room = 0, len;
	enum kind k;

	if (sizeof(*ip) + sizeof(*udp) + n > a->mtu)
		return; /* not a datagram OUT_IF could carry: a jumbo rail */
	room = a->mtu - sizeof(*ip) - sizeof(*udp) - n;
	memcpy(copy, f, HDRS);
	memcpy(copy + HDRS, seg, n);
	k = mangle(copy + HDRS, n, room, &len);
	udp->len = htons((uint16_t)(sizeof(*udp) + len));
	udp->check = 0;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + sizeof(*udp) + len));
	ip->check = 0;
	ip->check = ip_checksum(ip, sizeof(*ip));
	memcpy(a->out.sll_addr, ((struct ethhdr *)copy)->h_dest, ETH_ALEN);
	if (sendto(a->out_fd, copy, HDRS + len, 0, (struct sockaddr *)&a->out, sizeof(a->out)) ==
	    (ssize_t)(HDRS + len)) {
		a->sent++;
		a->by_kind[k]++;
	} else {
		a->refused++;
		a->last_errno = errno;
	}
}

/*
 * One frame from IN_IF, behind its virtio-net header: every datagram in it
 * to dst:port counts as seen and gets a copy while the rate allows.
 */
static void on_frame(attacker *a, const uint8_t *buf, size_t n)
{
	const struct virtio_net_hdr *vh = (const struct virtio_net_hdr *)buf;
	const uint8_t *f = buf + sizeof(*vh), *pl;
	size_t plen, seg;
	uint8_t gso = vh->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;

	if (n <= sizeof(*vh))
		return;
	pl = udp_payload(f, n - sizeof(*vh), a, &plen);
	if (!pl || (gso != VIRTIO_NET_HDR_GSO_NONE && gso != VIRTIO_NET_HDR_GSO_UDP_L4))
		return;
	seg = gso == VIRTIO_NET_HDR_GSO_UDP_L4 && vh->gso_size ? vh->gso_size : plen;
	if (!plen)
		seg = 1; /* an empty datagram is one datagram */
	for (size_t off = 0; off < plen || off == 0; off += seg) {
		size_t take = plen - off < seg ? plen - off : seg;

		a->seen++;
		if (take_token(a))
			inject(a, f, pl + off, take);
	}
}

static void usage_error(const char *why)
{
	if (why)
		fprintf(stderr, "ri2n_mangle: %s\n", why);
	fprintf(stderr, "usage: ri2n_mangle IN_IF OUT_IF DST_IP DST_PORT SECONDS MAXPPS\n"
			"  (SECONDS 0..3600, MAXPPS 1..1000000; IN_IF and OUT_IF differ)\n");
	exit(2);
}

static void parse_args(attacker *a, int argc, char **argv, double *seconds)
{
	char *end;
	long port;

	if (argc != 7)
		usage_error(NULL);
	if (inet_pton(AF_INET, argv[3], &a->dst) != 1)
		usage_error("DST_IP is not an IPv4 address");
	port = strtol(argv[4], &end, 10);
	if (*end || port < 1 || port > 65535)
		usage_error("DST_PORT is not a port number");
	a->port = (uint16_t)port;
	*seconds = strtod(argv[5], &end);
	if (*end || !(*seconds > 0 && *seconds <= 3600))
		usage_error("SECONDS is not a number in 0..3600");
	a->pps = strtod(argv[6], &end);
	if (*end || !(a->pps >= 1 && a->pps <= 1e6))
		usage_error("MAXPPS is not a number in 1..1000000");
	if (!strcmp(argv[1], argv[2]))
		usage_error("IN_IF and OUT_IF must differ");
}

int main(int argc, char **argv)
{
	static _Alignas(8) uint8_t buf[sizeof(struct virtio_net_hdr) + FRAME_MAX];
	attacker a = { .out = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				.sll_halen = ETH_ALEN } };
	double seconds;
	uint64_t end;

	parse_args(&a, argc, argv, &seconds);
	a.in_fd = watch_socket(argv[1]);
	a.out_fd = packet_socket(argv[2], 0, &a.out.sll_ifindex);
	a.mtu = if_mtu(a.out_fd, argv[2]);
	rng_state = (now_ns() ^ ((uint64_t)getpid() << 32)) | 1;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	a.refilled = now_ns();
	a.tokens = 1;
	end = a.refilled + (uint64_t)(seconds * 1e9);
	while (!stop && now_ns() < end) {
		struct pollfd p = { .fd = a.in_fd, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recvfrom(a.in_fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &fl);
		if (n <= 0 || (size_t)n > sizeof(buf) || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		on_frame(&a, buf, (size_t)n);
	}
	printf("mangle seen=%llu sent=%llu flipped=%llu truncated=%llu extended=%llu replayed=%llu\n",
	       (unsigned long long)a.seen, (unsigned long long)a.sent,
	       (unsigned long long)a.by_kind[FLIP], (unsigned long long)a.by_kind[TRUNCATE],
	       (unsigned long long)a.by_kind[EXTEND], (unsigned long long)a.by_kind[REPLAY]);
	if (a.refused)
		fprintf(stderr, "ri2n_mangle: %llu copies refused (last: %s)\n",
			(unsigned long long)a.refused, strerror(a.last_errno));
	return 0;
}
