/*
 * rn_shim_opt.c - socket options and addresses of ri2n sockets, as a TCP
 * program expects them: setsockopt, getsockopt, getsockname, getpeername.
 *
 * Options fall in five groups (docs/RI2N-RUN.md has the list):
 *   - kernel options of the descriptor itself (buffers, timeouts, low-water
 *     marks): set on the socketpair end the program holds;
 *   - TCP options ri2n honours its own way: SO_LINGER ({1, 0}: close
 *     resets), TCP_USER_TIMEOUT (the dead-peer timeout), through
 *     ri2n_setsockopt, which refuses what it cannot do;
 *   - TCP and IP tuning ri2n has no use for (keepalive, Nagle, TOS, ...):
 *     accepted, remembered and read back, otherwise ignored;
 *   - answered by ri2n: SO_ERROR, SO_TYPE, TCP_INFO, TCP_MAXSEG, RI2N_SOL;
 *   - anything else: ENOPROTOOPT, as for an option the kernel lacks.
 * On a TCP socket that has not been converted yet every option is the
 * kernel's; the shim only remembers what was set, to replay it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ri2n.h"
#include "rn_api.h"
#include "rn_shim.h"
#include "rn_sys.h"

#define RN_SHIM_API __attribute__((visibility("default")))

enum { OPT_NONE, OPT_OWN_END, OPT_IGNORED, OPT_RI2N, OPT_MAPPED };

/* SO_RCVTIMEO, SO_SNDTIMEO (either form) */
static int is_timeout_opt(int name)
{
	switch (name) {
	case SO_SNDTIMEO: case SO_RCVTIMEO:
#if defined(SO_SNDTIMEO_NEW) && SO_SNDTIMEO_NEW != SO_SNDTIMEO
	case SO_SNDTIMEO_NEW: case SO_RCVTIMEO_NEW:
#endif
		return 1;
	default:
		return 0;
	}
}

/* Options of the descriptor the program holds: the kernel applies them to the socketpair end. */
static int own_end(int level, int name)
{
	if (level != SOL_SOCKET)
		return 0;
	if (is_timeout_opt(name))
		return 1;
	switch (name) {
	case SO_SNDBUF: case SO_RCVBUF: case SO_SNDBUFFORCE: case SO_RCVBUFFORCE:
	case SO_RCVLOWAT: case SO_SNDLOWAT:
		return 1;
	default:
		return 0;
	}
}

/* TCP and IP tuning that has no meaning for ri2n: accepted and remembered. */
static int ignored(int family, int level, int name)
{
	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_KEEPALIVE: case SO_REUSEADDR: case SO_REUSEPORT:
		case SO_PRIORITY: case SO_OOBINLINE: case SO_BINDTODEVICE: case SO_MARK:
		case SO_MAX_PACING_RATE: case SO_BUSY_POLL: case SO_INCOMING_CPU:
		case SO_DONTROUTE:
			return 1;
		}
		return 0;
	case IPPROTO_TCP:
		switch (name) {
		case TCP_NODELAY: case TCP_CORK: case TCP_QUICKACK: case TCP_KEEPIDLE:
		case TCP_KEEPINTVL: case TCP_KEEPCNT: case TCP_CONGESTION:
		case TCP_MAXSEG: case TCP_DEFER_ACCEPT: case TCP_FASTOPEN: case TCP_FASTOPEN_CONNECT:
		case TCP_NOTSENT_LOWAT: case TCP_WINDOW_CLAMP: case TCP_LINGER2: case TCP_SYNCNT:
		case TCP_THIN_LINEAR_TIMEOUTS:
			return 1;
		}
		return 0;
	case IPPROTO_IP:
		switch (name) {
		case IP_TOS: case IP_TTL: case IP_BIND_ADDRESS_NO_PORT: case IP_FREEBIND:
		case IP_MTU_DISCOVER: case IP_RECVERR:
			return 1;
		}
		return 0;
	case IPPROTO_IPV6:
		if (family != AF_INET6)
			return 0;
		switch (name) {
		case IPV6_V6ONLY: case IPV6_TCLASS: case IPV6_UNICAST_HOPS: case IPV6_RECVERR:
		case IPV6_MTU_DISCOVER:
			return 1;
		}
		return 0;
	default:
		return 0;
	}
}

/* TCP options ri2n_setsockopt maps onto ri2n's behaviour (or refuses). */
static int mapped(int level, int name)
{
	return (level == SOL_SOCKET && name == SO_LINGER) ||
	       (level == IPPROTO_TCP && name == TCP_USER_TIMEOUT);
}

static int classify(int family, int level, int name)
{
	if (level == RI2N_SOL)
		return OPT_RI2N;
	if (mapped(level, name))
		return OPT_MAPPED;
	if (own_end(level, name))
		return OPT_OWN_END;
	if (ignored(family, level, name))
		return OPT_IGNORED;
	return OPT_NONE;
}

/* Options whose value is a string or a struct rather than an int. */
static int not_int(int level, int name)
{
	return (level == IPPROTO_TCP && name == TCP_CONGESTION) ||
	       (level == SOL_SOCKET && (name == SO_LINGER || name == SO_BINDTODEVICE));
}

int rn_shim_opt_set(int fd, const rn_shim_ent *e, int level, int name, const void *val,
		    socklen_t len)
{
	switch (classify(e->family, level, name)) {
	case OPT_RI2N:
		return ri2n_setsockopt(fd, level, name, val, len);
	case OPT_MAPPED:
		if (ri2n_setsockopt(fd, level, name, val, len) < 0)
			return -1;
		rn_shim_tab_note_opt(fd, level, name, val, len); /* replayed on accepted sockets */
		return 0;
	case OPT_OWN_END:
		if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE))
			return rn_api_set_sndbuf(fd, name, val, len); /* stays unwritable until connected */
		return RN_REAL->setsockopt(fd, level, name, val, len);
	case OPT_IGNORED:
		if (!val && len) {
			errno = EFAULT;
			return -1;
		}
		if (!not_int(level, name) && len < (socklen_t)sizeof(int)) {
			errno = EINVAL;
			return -1;
		}
		rn_shim_tab_note_opt(fd, level, name, val, len);
		/* remembered for getsockopt; {1, 0} also makes close reset, as TCP's does */
		if (level == SOL_SOCKET && name == SO_LINGER && e->kind == RN_SHIM_RI2N)
			return ri2n_setsockopt(fd, level, name, val, len);
		return 0;
	default:
		errno = ENOPROTOOPT;
		return -1;
	}
}

void rn_shim_opt_replay(int fd, const rn_shim_ent *e)
{
	int saved = errno;

	for (int i = 0; i < e->nopt; i++) {
		const rn_shim_opt *o = &e->opt[i];

		if (own_end(o->level, o->name)) {
			rn_shim_opt_set(fd, e, o->level, o->name, o->val, o->len);
		} else if (mapped(o->level, o->name) &&
			   ri2n_setsockopt(fd, o->level, o->name, o->val, o->len) < 0) {
			/* accepted by the kernel on the TCP socket, refused by ri2n */
			rn_shim_log("fd %d: %s set before connect/listen cannot be honoured over "
				    "ri2n: %s", fd, o->name == SO_LINGER ? "SO_LINGER" :
				    "TCP_USER_TIMEOUT", strerror(errno));
		}
	}
	errno = saved;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len) {
		errno = EFAULT;
		return -1;
	}
	if (*len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(int);
	return 0;
}

static int put_bytes(void *val, socklen_t *len, const void *v, socklen_t n)
{
	if (!val || !len) {
		errno = EFAULT;
		return -1;
	}
	if (*len < n)
		n = *len;
	memcpy(val, v, n);
	*len = n;
	return 0;
}

/* The value of an ignored option: what the program set, else the kernel's usual default. */
static int get_ignored(const rn_shim_ent *e, int level, int name, void *val, socklen_t *len)
{
	const rn_shim_opt *o = rn_shim_ent_opt(e, level, name);
	int v = 0;

	if (o)
		return put_bytes(val, len, o->val, o->len);
	if (level == IPPROTO_TCP && name == TCP_CONGESTION)
		return put_bytes(val, len, "ri2n", 5);
	if (level == SOL_SOCKET && name == SO_LINGER) {
		static const unsigned char zero[8];

		return put_bytes(val, len, zero, sizeof(zero));
	}
	if (level == SOL_SOCKET && name == SO_BINDTODEVICE)
		return put_bytes(val, len, "", 0);
	if (level == IPPROTO_TCP)
		v = name == TCP_NODELAY ? 1 : name == TCP_KEEPIDLE ? 7200 : name == TCP_KEEPINTVL ? 75 :
		    name == TCP_KEEPCNT ? 9 : name == TCP_SYNCNT ? 6 : 0;
	else if ((level == IPPROTO_IP && name == IP_TTL) ||
		 (level == IPPROTO_IPV6 && name == IPV6_UNICAST_HOPS))
		v = 64;
	return put_int(val, len, v);
}

/* Stream bytes per packet: the connection's, else what the rails' MTU allows. */
static int mss_of(int fd)
{
	struct ri2n_stats st;
	int mtu = 0;
	socklen_t l = sizeof(mtu);

	if (ri2n_stats(fd, &st) == 0 && st.mss)
		return (int)st.mss;
	if (ri2n_getsockopt(fd, RI2N_SOL, RI2N_MTU, &mtu, &l) == 0 && mtu > 100)
		return mtu - 52;
	return 536;
}

int rn_shim_opt_get(int fd, const rn_shim_ent *e, int level, int name, void *val, socklen_t *len)
{
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_ERROR:
			if (ri2n_getsockopt(fd, level, name, val, len) == 0)
				return 0;
			if (errno != ENOTSOCK)
				return -1;
			/* a forked child: the descriptor's own pending error, if any */
			return RN_REAL->getsockopt(fd, level, name, val, len);
		case SO_TYPE:
			return put_int(val, len, SOCK_STREAM);
		case SO_DOMAIN:
			return put_int(val, len, e->family);
		case SO_PROTOCOL:
			return put_int(val, len, IPPROTO_TCP);
		case SO_ACCEPTCONN:
			return put_int(val, len, e->listening);
		}
	} else if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_INFO:
			return rn_shim_tcpinfo(fd, e, val, len);
		case TCP_MAXSEG:
			if (rn_shim_ent_opt(e, level, name))
				break;
			return put_int(val, len, mss_of(fd));
		}
	}
	switch (classify(e->family, level, name)) {
	case OPT_RI2N:
		return ri2n_getsockopt(fd, level, name, val, len);
	case OPT_MAPPED:
		if (ri2n_getsockopt(fd, level, name, val, len) == 0)
			return 0;
		if (errno != ENOTSOCK)
			return -1;
		return get_ignored(e, level, name, val, len); /* a forked child: what it set */
	case OPT_OWN_END:
		if (level == SOL_SOCKET && name == SO_SNDBUF) {
			/* ri2n's: the buffer waits small until connected, SO_SNDBUF reads its size then */
			if (ri2n_getsockopt(fd, level, name, val, len) == 0)
				return 0;
			if (errno != ENOTSOCK)
				return -1;
		}
		return RN_REAL->getsockopt(fd, level, name, val, len);
	case OPT_IGNORED:
		return get_ignored(e, level, name, val, len);
	default:
		errno = ENOPROTOOPT;
		return -1;
	}
}

/*
 * A ri2n connection this process got from another one (across fork and
 * exec, as a server that re-executes itself per connection hands it on, or
 * over SCM_RIGHTS), for a descriptor the shim has no entry for: the shim
 * knows it from now on, with the addresses the owner's engine wrote on its
 * socketpair (rn_pairname.c), as it knows its own in a forked child.  Its
 * data takes the descriptor's way, served by the owner.  1 with *e, or 0.
 * Keeps errno.
 */
static int adopt_handed(int fd, rn_shim_ent *e)
{
	rn_hsa local, peer;

	if (!rn_shim_tab_mine() || rn_shim_tab_has(fd) || rn_api_pairname_get(fd, &local, &peer) < 0)
		return 0;
	memset(e, 0, sizeof(*e));
	e->kind = RN_SHIM_RI2N;
	/* the owner's socket family is not named: an IPv6 connection's is AF_INET6 */
	e->family = peer.sa.sa_family == AF_INET6 ? AF_INET6 : AF_INET;
	e->have_local = e->have_peer = 1;
	e->local = local;
	e->peer = peer;
	e->retired_fd = -1;
	rn_shim_tab_set(fd, e);
	if (!rn_shim_tab_get(fd, e))
		return 0;
	rn_shim_log("fd %d: a ri2n connection from another process (%s to %s): its addresses "
		    "answer here, its data goes through the descriptor",
		    fd, rn_shim_addr_str(&local, (char[80]){ 0 }, 80),
		    rn_shim_addr_str(&peer, (char[80]){ 0 }, 80));
	return 1;
}

static int setsockopt_x(int fd, int level, int name, const void *val, socklen_t len);

/* A timeout ri2n remembers unset may change (rn_api_flags_changed): after the call. */
RN_SHIM_API int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	int rc = setsockopt_x(fd, level, name, val, len), saved = errno;

	if (level == SOL_SOCKET && is_timeout_opt(name)) {
		rn_api_flags_changed();
		errno = saved;
	}
	return rc;
}

static int setsockopt_x(int fd, int level, int name, const void *val, socklen_t len)
{
	rn_shim_ent e;
	int rc;

	if (!rn_shim_tab_get(fd, &e)) {
		/* an option AF_UNIX refuses (TCP_NODELAY, IP_TOS): maybe a handed ri2n socket */
		rc = RN_REAL->setsockopt(fd, level, name, val, len);
		if (rc < 0 && adopt_handed(fd, &e))
			return rn_shim_opt_set(fd, &e, level, name, val, len);
		return rc;
	}
	if (e.kind == RN_SHIM_RI2N)
		return rn_shim_opt_set(fd, &e, level, name, val, len);
	rc = RN_REAL->setsockopt(fd, level, name, val, len);
	if (rc == 0)
		rn_shim_tab_note_opt(fd, level, name, val, len);
	return rc;
}

/* Whether the kernel's answer to getsockopt may be an AF_UNIX socket's that is ri2n's. */
static int maybe_handed_opt(int rc, int level, int name, const void *val, const socklen_t *len)
{
	int v;

	if (rc < 0)
		return 1; /* an option AF_UNIX lacks (TCP_INFO, TCP_NODELAY, ...) */
	if (level != SOL_SOCKET || (name != SO_DOMAIN && name != SO_PROTOCOL) || !val || !len ||
	    *len < (socklen_t)sizeof(v))
		return 0;
	memcpy(&v, val, sizeof(v));
	return name == SO_DOMAIN ? v == AF_UNIX : v == 0;
}

RN_SHIM_API int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	rn_shim_ent e;
	socklen_t asked = len ? *len : 0;
	int rc;

	if (rn_shim_tab_get(fd, &e) && e.kind == RN_SHIM_RI2N)
		return rn_shim_opt_get(fd, &e, level, name, val, len);
	rc = RN_REAL->getsockopt(fd, level, name, val, len);
	if (maybe_handed_opt(rc, level, name, val, len) && adopt_handed(fd, &e)) {
		*len = asked;
		return rn_shim_opt_get(fd, &e, level, name, val, len);
	}
	return rc;
}

/*
 * ri2n_getsockname once a non-blocking connect has polled writable.  The
 * engine makes the descriptor writable a moment before it records the
 * connection (rn_stream.c, connected(): the junk is drained before
 * s->local is set), so right after poll() the local address may still read
 * 0.0.0.0:0: wait for it, at most 20 ms.  Harmless once the engine sets the
 * state first.
 */
static int local_settled(int fd, rn_hsa *a, socklen_t *al)
{
	int rc = ri2n_getsockname(fd, &a->sa, al);

	for (int i = 0; i < 200 && rc == 0 && rn_shim_addr_is_any(a); i++) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		struct timespec zero = { 0, 0 };

		if (rn_sys_ppoll(&p, 1, &zero) != 1 || (p.revents & (POLLERR | POLLHUP)))
			break; /* still connecting (or failed): 0.0.0.0 is the answer */
		usleep(100);
		*al = sizeof(*a);
		rc = ri2n_getsockname(fd, &a->sa, al);
	}
	return rc;
}

/* The local (peer == 0) or peer address of a ri2n socket, as the program's family shows it. */
static int name_of(int fd, const rn_shim_ent *e, int peer, struct sockaddr *addr, socklen_t *len)
{
	socklen_t al = sizeof(rn_hsa);
	rn_hsa a;
	int rc;

	if (!len || (!addr && *len)) {
		errno = EFAULT;
		return -1;
	}
	if (!peer && e->listening) {
		a = e->local; /* what the program bound, with the port it got */
	} else {
		rc = peer ? ri2n_getpeername(fd, &a.sa, &al) : local_settled(fd, &a, &al);
		if (rc == 0) {
			if (peer || !rn_shim_addr_is_any(&a))
				rn_shim_tab_note_addr(fd, peer, &a);
			else if (e->have_local)
				a = e->local; /* not connected yet: the last one known */
		} else if (errno == ENOTSOCK && (peer ? e->have_peer : e->have_local)) {
			/* a forked child: ri2n answers in the parent only */
			a = peer ? e->peer : e->local;
		} else {
			if (errno == ENOTSOCK)
				errno = ENOTCONN;
			return -1;
		}
	}
	rn_shim_addr_put(e->family, &a, addr, len);
	return 0;
}

/* getsockname (peer 0) or getpeername of a descriptor the shim has no ri2n entry for. */
static int name_unknown(int fd, int peer, struct sockaddr *addr, socklen_t *len)
{
	socklen_t asked = len ? *len : 0;
	rn_shim_ent e;
	int rc = peer ? RN_REAL->getpeername(fd, addr, len) : RN_REAL->getsockname(fd, addr, len);

	/* an AF_UNIX socket: maybe a ri2n connection handed over by another process */
	if (rc == 0 && asked >= (socklen_t)sizeof(sa_family_t) && addr->sa_family == AF_UNIX &&
	    adopt_handed(fd, &e)) {
		*len = asked;
		return name_of(fd, &e, peer, addr, len);
	}
	return rc;
}

RN_SHIM_API int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	rn_shim_ent e;

	if (!rn_shim_tab_get(fd, &e) || e.kind != RN_SHIM_RI2N)
		return name_unknown(fd, 0, addr, len);
	return name_of(fd, &e, 0, addr, len);
}

RN_SHIM_API int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	rn_shim_ent e;

	if (!rn_shim_tab_get(fd, &e) || e.kind != RN_SHIM_RI2N)
		return name_unknown(fd, 1, addr, len);
	return name_of(fd, &e, 1, addr, len);
}
