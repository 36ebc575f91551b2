/*
 * btl_ri2n_io.c - UDP sockets per rail: batched receive and send.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "btl_ri2n_io.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define SOCK_BUF (8 << 20)     /* kernel buffer per socket: thousands of datagrams */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000    /* a GSO message must fit one UDP datagram's length */
#define RX_GRO_BUF 65536       /* one GRO run */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_buf(int fd, int force, int opt)
{
	int v = SOCK_BUF;

	/* root may go past net.core.[rw]mem_max; others get what the limit allows */
	if (setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0)
		setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_sock(ri2n_io *io, int i, const rn_rail_info *ri, char *err, size_t errlen)
{
	ri2n_sock *s = &io->s[i];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(ri->ip) };
	socklen_t alen = sizeof(a);
	int one = 1, pmtu = IP_PMTUDISC_DO;

	s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		goto fail;
	set_buf(s->fd, SO_RCVBUFFORCE, SO_RCVBUF);
	set_buf(s->fd, SO_SNDBUFFORCE, SO_SNDBUF);
	/* a datagram too big for the rail is an error, not an IP fragment */
	setsockopt(s->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	if (io->gro)
		setsockopt(s->fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	if (io->rx_ts && setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		io->rx_ts = 0;
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(s->fd, (struct sockaddr *)&a, &alen) < 0)
		goto fail;
	s->addr = (rn_rail_addr){ .ip = ri->ip, .port = ntohs(a.sin_port), .prefix = ri->prefix };
	for (int k = 0; k < RI2N_TXQ; k++) {
		s->bufs[k] = malloc(io->dgram);
		if (!s->bufs[k]) {
			errno = ENOMEM;
			goto fail;
		}
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot open a UDP socket on rail %s: %s", ri->name, strerror(errno));
	return -errno;
}

/* The kernel has UDP GSO if the option exists. */
static int probe_gso(int fd)
{
	int seg = 1000, ok = setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) == 0;

	seg = 0;
	setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg));
	return ok;
}

int ri2n_io_open(ri2n_io *io, const rn_rail_info *rails, int n, uint32_t dgram, int gso,
		 int gro, int rx_ts, char *err, size_t errlen)
{
	memset(io, 0, sizeof(*io));
	for (int i = 0; i < RN_MAX_RAILS; i++)
		io->s[i].fd = -1;
	io->dgram = dgram;
	io->gro = gro;
	io->rx_ts = rx_ts;
	io->rxsz = gro ? RX_GRO_BUF : (dgram < 2048 ? 2048 : dgram);
	io->rxmem = malloc(io->rxsz * RI2N_RX_TURN * (size_t)(n > 0 ? n : 1));
	io->spare = malloc(dgram);
	if (!io->rxmem || !io->spare) {
		snprintf(err, errlen, "out of memory for socket buffers");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		int rc = open_sock(io, i, &rails[i], err, errlen);

		io->n = i + 1;
		if (rc)
			return rc;
	}
	io->gso = gso && n > 0 && probe_gso(io->s[0].fd);
	return 0;
}

void ri2n_io_close(ri2n_io *io)
{
	for (int i = 0; i < io->n; i++) {
		if (io->s[i].fd >= 0)
			close(io->s[i].fd);
		for (int k = 0; k < RI2N_TXQ; k++)
			free(io->s[i].bufs[k]);
	}
	free(io->rxmem);
	free(io->spare);
	memset(io, 0, sizeof(*io));
}

uint32_t ri2n_io_writable(const ri2n_io *io)
{
	uint32_t m = 0;

	for (int i = 0; i < io->n; i++)
		if (!io->s[i].blocked && io->s[i].qn < RI2N_TXQ)
			m |= 1u << i;
	return m;
}

static void sock_flush(ri2n_io *io, ri2n_sock *s);

void ri2n_io_queue(ri2n_io *io, int rail, rn_addr to, size_t len, uint64_t owner)
{
	ri2n_sock *s = &io->s[rail];
	uint8_t *b;

	if (s->qn >= RI2N_TXQ) { /* the caller ignored writable: drop, loss recovery resends */
		s->tx_dropped++;
		return;
	}
	/* swap buffers instead of copying the datagram */
	b = s->bufs[s->qn];
	s->bufs[s->qn] = io->spare;
	io->spare = b;
	s->q[s->qn] = (ri2n_txent){ .to = { .sin_family = AF_INET, .sin_port = htons(to.port),
					    .sin_addr.s_addr = htonl(to.ip) },
				    .owner = owner, .len = (uint16_t)len };
	s->qn++;
	if (s->qn == RI2N_TXQ)
		sock_flush(io, s);
}

static int same_dest(const ri2n_txent *a, const ri2n_txent *b)
{
	return a->to.sin_addr.s_addr == b->to.sin_addr.s_addr && a->to.sin_port == b->to.sin_port;
}

/*
 * Groups the queue into messages: with GSO, a run of datagrams to one
 * address, all of the first one's size but a shorter last, is one message.
 */
static int build_msgs(ri2n_io *io, ri2n_sock *s, struct mmsghdr *msgs, struct iovec *iov,
		      uint8_t *ctl, int *counts)
{
	int nm = 0, k = 0;

	while (k < s->qn) {
		int run = 1;
		size_t bytes = s->q[k].len;
		struct msghdr *h = &msgs[nm].msg_hdr;

		while (io->gso && k + run < s->qn && run < GSO_MAX_SEGS &&
		       same_dest(&s->q[k], &s->q[k + run]) && s->q[k + run].len <= s->q[k].len &&
		       bytes + s->q[k + run].len <= GSO_MAX_BYTES) {
			bytes += s->q[k + run].len;
			run++;
			if (s->q[k + run - 1].len < s->q[k].len)
				break; /* a short one ends a run */
		}
		for (int j = 0; j < run; j++)
			iov[k + j] = (struct iovec){ s->bufs[k + j], s->q[k + j].len };
		*h = (struct msghdr){ .msg_name = &s->q[k].to, .msg_namelen = sizeof(s->q[k].to),
				      .msg_iov = &iov[k], .msg_iovlen = (size_t)run };
		if (run > 1) {
			struct cmsghdr *cm = (struct cmsghdr *)(ctl + (size_t)nm *
							       CMSG_SPACE(sizeof(uint16_t)));

			h->msg_control = cm;
			h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)CMSG_DATA(cm) = s->q[k].len;
		}
		counts[nm++] = run;
		k += run;
	}
	return nm;
}

/* Forgets the first n queued datagrams; their buffers go to the back. */
static void drop_front(ri2n_sock *s, int n)
{
	uint8_t *done[RI2N_TXQ];

	memcpy(done, s->bufs, (size_t)n * sizeof(*done));
	memmove(s->bufs, s->bufs + n, (size_t)(s->qn - n) * sizeof(*done));
	memmove(s->q, s->q + n, (size_t)(s->qn - n) * sizeof(*s->q));
	memcpy(s->bufs + (s->qn - n), done, (size_t)n * sizeof(*done));
	s->qn -= n;
}

static void sock_flush(ri2n_io *io, ri2n_sock *s)
{
	struct mmsghdr msgs[RI2N_TXQ];
	struct iovec iov[RI2N_TXQ];
	uint8_t ctl[RI2N_TXQ * CMSG_SPACE(sizeof(uint16_t))];
	int counts[RI2N_TXQ];

	s->blocked = 0;
	while (s->qn > 0) {
		int nm = build_msgs(io, s, msgs, iov, ctl, counts), sent, done = 0;

		sent = sendmmsg(s->fd, msgs, (unsigned)nm, MSG_DONTWAIT);
		if (sent < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR) {
				s->blocked = 1; /* the core sees the rail unwritable until a retry works */
				return;
			}
			if ((e == EIO || e == EINVAL || e == EOPNOTSUPP) && counts[0] > 1 && io->gso) {
				io->gso = 0; /* the device refused GSO: one by one from now on */
				continue;
			}
			/* ENOBUFS: a full qdisc dropped it, loss recovery resends.  Anything
			 * else (unreachable, interface gone, filtered): that rail failed. */
			s->tx_errors++;
			if (e != ENOBUFS && io->on_error)
				io->on_error(io->arg, (int)(s - io->s), s->q[0].owner, e);
			drop_front(s, counts[0]);
			continue;
		}
		for (int m = 0; m < sent; m++)
			done += counts[m];
		s->tx_dgrams += (uint64_t)done;
		drop_front(s, done);
	}
}

void ri2n_io_flush(ri2n_io *io)
{
	for (int i = 0; i < io->n; i++)
		if (io->s[i].qn)
			sock_flush(io, &io->s[i]);
}

void ri2n_io_send_now(ri2n_io *io, int rail, rn_addr to, const uint8_t *buf, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(to.port),
				 .sin_addr.s_addr = htonl(to.ip) };

	/* best effort: the handshake and the nudges are resent by their timers */
	if (sendto(io->s[rail].fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof(a)) < 0)
		io->s[rail].tx_errors++;
}

/* The segment size of a GRO run, 0 for a plain datagram. */
static size_t gro_size(struct msghdr *h)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO)
			return (size_t)*(int *)CMSG_DATA(c);
	return 0;
}

/* The kernel's arrival time of a message, CLOCK_REALTIME ns, 0 if absent. */
static uint64_t arrival_real(struct msghdr *h)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		}
	}
	return 0;
}

#define RX_CTL (CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec)))

/* What one read turn got from one socket: datagrams, maybe in GRO runs. */
typedef struct rx_batch {
	struct mmsghdr msgs[RI2N_RX_TURN];
	struct iovec iov[RI2N_RX_TURN];
	struct sockaddr_in from[RI2N_RX_TURN];
	uint8_t ctl[RI2N_RX_TURN][RX_CTL];
	uint64_t at[RI2N_RX_TURN]; /* arrival, CLOCK_MONOTONIC ns (0: unknown) */
	int n, k;          /* messages read, message being split */
	size_t off, seg;   /* position in message k, its GRO segment size */
} rx_batch;

/* Reads up to RI2N_RX_TURN messages from socket i into its buffers. */
static int read_batch(ri2n_io *io, int i, rx_batch *b)
{
	uint8_t *mem = io->rxmem + (size_t)i * RI2N_RX_TURN * io->rxsz;

	for (int k = 0; k < RI2N_RX_TURN; k++) {
		b->iov[k] = (struct iovec){ mem + (size_t)k * io->rxsz, io->rxsz };
		b->msgs[k].msg_hdr = (struct msghdr){ .msg_name = &b->from[k],
						      .msg_namelen = sizeof(b->from[k]),
						      .msg_iov = &b->iov[k], .msg_iovlen = 1,
						      .msg_control = b->ctl[k],
						      .msg_controllen = sizeof(b->ctl[k]) };
	}
	b->n = recvmmsg(io->s[i].fd, b->msgs, RI2N_RX_TURN, MSG_DONTWAIT, NULL);
	if (b->n < 0)
		b->n = 0;
	if (b->n && io->rx_ts) {
		/* the kernel stamps CLOCK_REALTIME: shift to CLOCK_MONOTONIC */
		uint64_t off = real_ns() - mono_ns();

		for (int k = 0; k < b->n; k++) {
			uint64_t r = arrival_real(&b->msgs[k].msg_hdr);

			b->at[k] = r > off ? r - off : 0;
		}
	}
	b->k = 0;
	b->off = 0;
	b->seg = b->n && io->gro ? gro_size(&b->msgs[0].msg_hdr) : 0;
	return b->n;
}

/* Hands the next datagram of a batch to fn; 0 when the batch is used up. */
static int next_dgram(ri2n_io *io, int i, rx_batch *b, ri2n_io_input_fn fn, void *arg,
		      uint64_t now)
{
	size_t len, one;
	const uint8_t *d;
	rn_addr a;
	uint64_t t;

	if (b->k >= b->n)
		return 0;
	/* when it arrived, within [latest time already given, time of the read] */
	t = io->rx_ts && b->at[b->k] ? b->at[b->k] : now;
	if (t > now)
		t = now;
	if (t < io->floor_ns)
		t = io->floor_ns;
	io->floor_ns = t;
	len = b->msgs[b->k].msg_len - b->off;
	d = (const uint8_t *)b->iov[b->k].iov_base + b->off;
	/* a GRO run: datagrams of `seg` bytes back to back, the last maybe shorter */
	one = b->seg && b->seg < len ? b->seg : len;
	a = (rn_addr){ ntohl(b->from[b->k].sin_addr.s_addr), ntohs(b->from[b->k].sin_port) };
	b->off += one;
	if (b->off >= b->msgs[b->k].msg_len) {
		b->k++;
		b->off = 0;
		b->seg = b->k < b->n && io->gro ? gro_size(&b->msgs[b->k].msg_hdr) : 0;
	}
	io->s[i].rx_dgrams++;
	if (len > 0)
		fn(arg, i, a, d, one, t);
	return 1;
}

/*
 * One turn: a batch from each socket in `want`, then their datagrams merged
 * one rail at a time.  Reading one rail's batch whole before the next would
 * hand the core a run of one rail (a GRO run alone holds ~45 datagrams), and
 * its receive count (fewer than M of N packets) would judge the other rail
 * failed; the sender striped them one by one, so they go in one by one.
 * Returns the datagrams; *full gets the sockets whose batch was full (they
 * may have more).
 */
static int read_turn(ri2n_io *io, uint32_t want, uint32_t *full, ri2n_io_input_fn fn,
		     void *arg)
{
	rx_batch b[RN_MAX_RAILS];
	int got = 0, more = 1, total = 0;
	uint64_t now;

	*full = 0;
	for (int i = 0; i < io->n; i++) {
		b[i].n = b[i].k = 0;
		if (!((want >> i) & 1))
			continue;
		got += read_batch(io, i, &b[i]);
		if (b[i].n == RI2N_RX_TURN)
			*full |= 1u << i;
	}
	if (!got)
		return 0;
	now = mono_ns();
	while (more) {
		more = 0;
		for (int i = 0; i < io->n; i++) {
			int one = next_dgram(io, i, &b[i], fn, arg, now);

			more |= one;
			total += one;
		}
	}
	return total;
}

/* Sockets with something to read: one syscall for every rail. */
static uint32_t readable(const ri2n_io *io)
{
	struct pollfd pf[RN_MAX_RAILS];
	uint32_t m = 0;

	for (int i = 0; i < io->n; i++)
		pf[i] = (struct pollfd){ .fd = io->s[i].fd, .events = POLLIN };
	if (poll(pf, (nfds_t)io->n, 0) <= 0)
		return 0;
	for (int i = 0; i < io->n; i++)
		if (pf[i].revents)
			m |= 1u << i;
	return m;
}

int ri2n_io_recv(ri2n_io *io, ri2n_io_input_fn fn, void *arg, int rounds)
{
	uint32_t want = io->more;
	int total = 0;

	/* MPI spins on progress: one poll() looks at every rail and only sockets
	 * with data are read, so an idle loop turns fast and a lone message costs
	 * two syscalls; when the last pass left data behind, no poll */
	if (!want)
		want = readable(io);
	for (int r = 0; r < rounds && want; r++) {
		uint32_t full;

		total += read_turn(io, want, &full, fn, arg);
		/* a socket that filled its batch may hold more: then read every rail
		 * again, so what the others got meanwhile stays interleaved with it */
		want = full ? (1u << io->n) - 1 : 0;
	}
	io->more = want;
	return total;
}
