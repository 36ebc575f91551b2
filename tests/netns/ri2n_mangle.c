/*
 * ri2n_mangle - an on-path attacker in a rail's switch, for the namespace tests.
 *
 *   ri2n_mangle IN_IF OUT_IF DST_IP DST_PORT SECONDS MAXPPS
 *
 * Runs in a switch namespace of the test bed.  It watches the frames a host
 * puts on the rail (a packet socket on IN_IF, the switch port facing the
 * sender) and, for every UDP datagram to DST_IP:DST_PORT, injects a mangled
 * copy straight out of OUT_IF (the port facing the receiver), with the
 * sender's real addresses and ports: 1-8 bits of the payload flipped, the
 * payload cut short, 1-64 random bytes added, or the datagram replayed as it
 * was.  IP length and checksum are fixed up and the UDP checksum is left out
 * (0, allowed over IPv4), so the receiver's kernel delivers every copy.
 * A sender's UDP GSO run crosses the veth whole: the copy is made of one of
 * its datagrams, picked at random (the virtio-net header says their size).  At
 * most MAXPPS copies a second; SECONDS or SIGTERM/SIGINT end it, and it
 * prints "mangle seen=N sent=M flipped=A truncated=B extended=C replayed=D".
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX 65600

static volatile sig_atomic_t stop;
static uint64_t rng_state;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t rnd(void)
{
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
 * A packet socket on interface `name` for protocol `proto`; exits with a
 * message on failure.  A bridge port hands its frames to the bridge before
 * protocol-specific sockets see them: watching one takes ETH_P_ALL.
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
		fprintf(stderr, "ri2n_mangle: no interface %s here\n", name);
		exit(2);
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "ri2n_mangle: bind to %s: %s\n", name, strerror(errno));
		exit(1);
	}
	*ifindex = sll.sll_ifindex;
	return fd;
}

typedef struct counts {
	uint64_t seen, sent, flipped, truncated, extended, replayed;
} counts;

/*
 * The UDP payload of a frame to dst:port, or NULL.  Sets *l3 to the IP header's
 * offset and *hl to the IP header length.
 */
static uint8_t *udp_payload(uint8_t *f, size_t n, struct in_addr dst, uint16_t port,
			    size_t *l3, size_t *hl, size_t *plen)
{
	struct iphdr *ip;
	struct udphdr *udp;
	size_t ihl, tot;

	if (n < ETH_HLEN + sizeof(*ip) || ((struct ethhdr *)f)->h_proto != htons(ETH_P_IP))
		return NULL;
	ip = (struct iphdr *)(f + ETH_HLEN);
	ihl = (size_t)ip->ihl * 4;
	tot = ntohs(ip->tot_len);
	if (ip->version != 4 || ihl < sizeof(*ip) || ip->protocol != IPPROTO_UDP ||
	    ip->daddr != dst.s_addr || (ntohs(ip->frag_off) & 0x3fff) || tot > n - ETH_HLEN ||
	    tot < ihl + sizeof(*udp))
		return NULL;
	udp = (struct udphdr *)((uint8_t *)ip + ihl);
	if (udp->dest != htons(port) || ntohs(udp->len) != tot - ihl)
		return NULL;
	*l3 = ETH_HLEN;
	*hl = ihl;
	*plen = tot - ihl - sizeof(*udp);
	return (uint8_t *)udp + sizeof(*udp);
}

/* Mangles the datagram in frame f in place (room for 64 more bytes); returns the frame length. */
static size_t mangle(uint8_t *f, size_t l3, size_t hl, size_t plen, counts *c)
{
	struct iphdr *ip = (struct iphdr *)(f + l3);
	struct udphdr *udp = (struct udphdr *)((uint8_t *)ip + hl);
	uint8_t *pl = (uint8_t *)udp + sizeof(*udp);
	size_t m = plen;

	switch (rnd() % 4) {
	case 0:
		for (uint64_t i = 0, k = 1 + rnd() % 8; plen && i < k; i++) {
			uint64_t bit = rnd() % (plen * 8);

			pl[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		c->flipped++;
		break;
	case 1:
		m = plen > 1 ? 1 + rnd() % (plen - 1) : plen;
		c->truncated++;
		break;
	case 2:
		m = plen + 1 + rnd() % 64;
		for (size_t i = plen; i < m; i++)
			pl[i] = (uint8_t)rnd();
		c->extended++;
		break;
	default:
		c->replayed++;
		break;
	}
	udp->len = htons((uint16_t)(sizeof(*udp) + m));
	udp->check = 0;
	ip->tot_len = htons((uint16_t)(hl + sizeof(*udp) + m));
	ip->check = 0;
	ip->check = ip_checksum(ip, hl);
	return l3 + hl + sizeof(*udp) + m;
}

int main(int argc, char **argv)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr) + FRAME_MAX + 64];
	const struct virtio_net_hdr *vh = (const struct virtio_net_hdr *)buf;
	uint8_t *frame = buf + sizeof(*vh);
	struct sockaddr_ll out = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				   .sll_halen = ETH_ALEN };
	struct in_addr dst;
	int in_fd, out_fd, in_idx, port;
	double seconds, pps;
	uint64_t start, end, budget_t;
	double budget;
	counts c = { 0 };

	if (argc != 7) {
		fprintf(stderr, "usage: ri2n_mangle IN_IF OUT_IF DST_IP DST_PORT SECONDS MAXPPS\n");
		return 2;
	}
	port = atoi(argv[4]);
	seconds = atof(argv[5]);
	pps = atof(argv[6]);
	if (inet_pton(AF_INET, argv[3], &dst) != 1 || port <= 0 || port > 65535 || seconds <= 0 ||
	    seconds > 3600 || pps <= 0 || pps > 1e6) {
		fprintf(stderr, "ri2n_mangle: want an IPv4 address, port 1..65535, seconds 0..3600, "
				"pps 0..1e6\n");
		return 2;
	}
	in_fd = packet_socket(argv[1], ETH_P_ALL, &in_idx);
	out_fd = packet_socket(argv[2], ETH_P_IP, &out.sll_ifindex);
	{
		int on = 1;

		if (setsockopt(in_fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof(on)) < 0) {
			perror("ri2n_mangle: PACKET_VNET_HDR");
			return 1;
		}
	}
	if (in_idx == out.sll_ifindex) {
		fprintf(stderr, "ri2n_mangle: IN_IF and OUT_IF must differ\n");
		return 2;
	}
	rng_state = (now_ns() ^ ((uint64_t)getpid() << 32)) | 1;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	start = budget_t = now_ns();
	end = start + (uint64_t)(seconds * 1e9);
	budget = 1;
	while (!stop && now_ns() < end) {
		struct pollfd p = { .fd = in_fd, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		size_t l3, hl, plen, len;
		uint8_t *pl;
		uint64_t t;
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recvfrom(in_fd, buf, sizeof(*vh) + FRAME_MAX, MSG_DONTWAIT,
			     (struct sockaddr *)&from, &fl);
		if (n <= (ssize_t)sizeof(*vh) || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		n -= (ssize_t)sizeof(*vh);
		pl = udp_payload(frame, (size_t)n, dst, (uint16_t)port, &l3, &hl, &plen);
		if (!pl)
			continue;
		if (vh->gso_type != VIRTIO_NET_HDR_GSO_NONE && vh->gso_size && plen > vh->gso_size) {
			/* a GSO run: take one of its datagrams */
			size_t seg = vh->gso_size, nseg = (plen + seg - 1) / seg, k = rnd() % nseg;
			size_t take = k == nseg - 1 ? plen - k * seg : seg;

			memmove(pl, pl + k * seg, take);
			plen = take;
		}
		c.seen++;
		/* a token bucket of one second's worth of copies */
		t = now_ns();
		budget += (double)(t - budget_t) * pps / 1e9;
		budget_t = t;
		if (budget > pps)
			budget = pps;
		if (budget < 1)
			continue;
		budget -= 1;
		len = mangle(frame, l3, hl, plen, &c);
		memcpy(out.sll_addr, ((struct ethhdr *)frame)->h_dest, ETH_ALEN);
		if (sendto(out_fd, frame, len, 0, (struct sockaddr *)&out, sizeof(out)) == (ssize_t)len)
			c.sent++;
	}
	printf("mangle seen=%llu sent=%llu flipped=%llu truncated=%llu extended=%llu "
	       "replayed=%llu\n", (unsigned long long)c.seen, (unsigned long long)c.sent,
	       (unsigned long long)c.flipped, (unsigned long long)c.truncated,
	       (unsigned long long)c.extended, (unsigned long long)c.replayed);
	return 0;
}
