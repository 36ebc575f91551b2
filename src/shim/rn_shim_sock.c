/*
 * rn_shim_sock.c - the interposed socket calls that make, convert, follow
 * and close sockets: socket, bind, listen, connect, accept, accept4, close,
 * close_range, dup, dup2, dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC).
 *
 * A TCP socket becomes ri2n when the program calls connect() or listen() on
 * it (the shim cannot know earlier where it will go): a ri2n socket is made,
 * given the options the program set and its bound port, and moved onto the
 * program's descriptor number.  That replaces the open file behind the
 * number, so what the program tied to the old one is carried over (adopt):
 * the file status flags (O_NONBLOCK, O_ASYNC), the owner and signal of
 * O_ASYNC, each number's FD_CLOEXEC, the numbers dup'ed from it before
 * (each becomes a duplicate of the ri2n socket) and the registrations in
 * epoll sets, added again with the same events and data.  Not carried:
 * locks (flock, OFD locks), copies held by other processes (a fork child,
 * SCM_RIGHTS: they keep the TCP socket), epoll registrations beyond
 * RN_SHIM_MAXEP sets per number (logged) and a thread already blocked in
 * poll or select on the number (it sees the TCP socket close).
 * Anything the policy leaves alone passes through, and so does every call on
 * a descriptor the shim does not know; ri2n's own engine, statically linked
 * into this library, goes through these same functions and is one of those.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ri2n.h"
#include "rn_api.h"
#include "rn_shim.h"
#include "rn_shim_epset.h"
#include "rn_sys.h"
#include "rn_sig.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define RN_SHIM_API __attribute__((visibility("default")))

/* fd is closed or replaced: forget what the shim and ri2n knew of the number. */
static void forget(int fd)
{
	if (rn_shim_tab_drop(fd) == RN_SHIM_RI2N)
		rn_api_forget(fd);
}

/* nfd was just made a duplicate of old (dup, dup2, dup3, F_DUPFD). */
static void after_dup(int old, int nfd)
{
	rn_shim_ent e;
	int saved = errno;

	forget(nfd);
	rn_shim_ep_dup(old, nfd);
	if (rn_shim_tab_get(old, &e)) {
		if (e.kind == RN_SHIM_TCP) {
			/* both numbers convert together at connect/listen (adopt) */
			rn_shim_tab_note_shared(old);
			e.shared = 1;
			e.nep = 0; /* registrations are per number */
			e.ep_lost = 0;
		} else {
			/*
			 * ENOTSOCK in a forked child: the parent's engine serves it,
			 * as is.  Not followed for another reason: nfd's writes go
			 * into the descriptor, so the socket's fast sends look there.
			 */
			if (rn_api_dup(old, nfd) < 0)
				rn_api_note_plain(old);
		}
		rn_shim_tab_set(nfd, &e);
	}
	errno = saved;
}

#define MAX_DUPS 8 /* numbers of one TCP socket converted together */

/* The other numbers of TCP socket fd still open on it, with their entries. */
static int others_of(int fd, const rn_shim_ent *e, int *num, rn_shim_ent *ent)
{
	int cand[MAX_DUPS], n = 0, k;

	if (!e->shared)
		return 0;
	k = rn_shim_tab_others(fd, e, cand, MAX_DUPS);
	for (int i = 0; i < k; i++)
		if (rn_shim_tab_get(cand[i], &ent[n]) && ent[n].kind == RN_SHIM_TCP)
			num[n++] = cand[i];
	return n;
}

/* TCP socket fd stays TCP: forget it under every number. */
static void stays_tcp(int fd, const rn_shim_ent *e)
{
	rn_shim_ent ent[MAX_DUPS];
	int num[MAX_DUPS], n = others_of(fd, e, num, ent);

	for (int i = 0; i < n; i++)
		rn_shim_tab_drop(num[i]);
	rn_shim_tab_drop(fd);
}

static int v6only(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return rn_sys_getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, &l) == 0 && v;
}

/* The socket's bound address as ri2n sees it (0.0.0.0:0 if none). */
static void bound_of(int fd, rn_hsa *out)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (rn_sys_getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    rn_shim_addr_get((struct sockaddr *)&ss, sl, out) < 0) {
		memset(out, 0, sizeof(*out));
		out->v4.sin_family = AF_INET;
	}
}

/* Adds again the epoll registrations e had as a TCP socket, now on ri2n socket fd. */
static void carry_epoll(int fd, const rn_shim_ent *e)
{
	for (int i = 0; i < e->nep; i++) {
		const rn_shim_epreg *r = &e->ep[i];
		struct epoll_event ev = { .events = r->events, .data.u64 = r->data };
		if (rn_shim_ep_id(r->epfd) != r->ep_id)
			continue; /* that epoll set is gone */
		if (rn_shim_epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
			rn_shim_log("fd %d: its epoll registration in fd %d could not be carried over: %s",
				    fd, r->epfd, strerror(errno));
	}
	if (e->ep_lost)
		rn_shim_log("fd %d: registered in more than %d epoll sets before connect/listen: "
			    "only %d carried over", fd, RN_SHIM_MAXEP, RN_SHIM_MAXEP);
}

/*
 * Moves ri2n socket n onto the program's number fd (and onto every number
 * dup'ed from it) and carries over what was tied to the TCP socket's open
 * file (see the top of this file).  ne is the entry each number gets.
 */
static int adopt(int n, int fd, const rn_shim_ent *e, const rn_shim_ent *ne, int fl)
{
	int fdfl = rn_sys_fcntl(fd, F_GETFD, 0);
	int sig = 0, num[MAX_DUPS], nd;
	struct f_owner_ex own = { 0 };
	rn_shim_ent ent[MAX_DUPS];

	if (fdfl < 0)
		return -1;
	/* two system calls a connection saved where the program never named an owner or a signal */
	if ((fl & O_ASYNC) || rn_dc_sigio()) {
		sig = rn_sys_fcntl(fd, F_GETSIG, 0);
		if (rn_sys_fcntl(fd, F_GETOWN_EX, (long)&own) < 0)
			own.pid = 0;
	}
	nd = others_of(fd, e, num, ent);
	if (rn_api_move(n, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
		return -1;
	/* the owner and signal first: O_ASYNC would signal the old owner meanwhile */
	if (own.pid)
		rn_sys_fcntl(fd, F_SETOWN_EX, (long)&own);
	if (sig > 0)
		rn_sys_fcntl(fd, F_SETSIG, sig);
	/* n was made with fl's O_NONBLOCK (rn_api_socket), and no other status flag */
	if (fl & O_ASYNC)
		rn_sys_fcntl(fd, F_SETFL, fl & (O_NONBLOCK | O_ASYNC));
	rn_shim_tab_set_ri2n(fd, ne);
	for (int i = 0; i < nd; i++) {
		int dfl = rn_sys_fcntl(num[i], F_GETFD, 0);

		/* raw: the interposed dup3 would take it for the program's own */
		if (dfl < 0 || rn_sys_dup3(fd, num[i], (dfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0 ||
		    rn_api_dup(fd, num[i]) < 0) {
			rn_shim_log("fd %d: its duplicate %d could not follow it onto ri2n: %s", fd,
				    num[i], strerror(errno));
			rn_shim_tab_drop(num[i]);
			continue;
		}
		rn_shim_tab_set_ri2n(num[i], ne);
		carry_epoll(num[i], &ent[i]);
	}
	carry_epoll(fd, e);
	return 0;
}

/* Gives up a half-made ri2n socket, keeping errno. */
static int give_up(int n, int fd, const char *what)
{
	int err = errno;

	if (n >= 0)
		ri2n_close(n);
	rn_shim_log("fd %d: %s over ri2n failed: %s", fd, what, strerror(err));
	errno = err;
	return -1;
}

/*
 * Whether this is ri2n's engine thread: what it does is ri2n's business (its
 * hwloc probing X displays over TCP, say), never converted or logged.
 */
int rn_shim_engine_thread(void)
{
	static __thread int is = -1;

	if (is < 0) {
		char name[16] = "";

		prctl(PR_GET_NAME, name, 0, 0, 0);
		is = strcmp(name, "ri2n-engine") == 0;
	}
	return is;
}

RN_SHIM_API int socket(int domain, int type, int protocol)
{
	int fd = RN_REAL->socket(domain, type, protocol);
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return fd;
	forget(fd); /* a number closed behind our back and given out again */
	if ((domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
	    (protocol == 0 || protocol == IPPROTO_TCP) && !rn_shim_engine_thread()) {
		rn_shim_ent e = { .kind = RN_SHIM_TCP, .family = domain };

		rn_shim_tab_set(fd, &e);
	}
	return fd;
}

/*
 * Whether UDP port `port` (network order) is free on every address of
 * `family` right now (IPv6: an IPV6_V6ONLY "::", which IPv4 holders leave
 * alone).
 */
static int udp_port_free_in(int family, in_port_t port)
{
	rn_hsa a;
	int u = rn_sys_socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc, one = 1;

	if (u < 0)
		return 1; /* cannot tell (no IPv6 here, say): the kernel's bind decides */
	memset(&a, 0, sizeof(a));
	a.sa.sa_family = (sa_family_t)family;
	if (family == AF_INET6) {
		a.v6.sin6_port = port;
		rn_sys_setsockopt(u, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	} else {
		a.v4.sin_port = port;
	}
	rc = rn_sys_bind(u, &a.sa, rn_hsa_len(&a));
	rn_sys_close(u);
	return rc == 0 || errno != EADDRINUSE;
}

/* The same for both families: a ri2n listener holds the port on IPv4 and IPv6 rails alike. */
static int udp_port_free(in_port_t port)
{
	return udp_port_free_in(AF_INET, port) && udp_port_free_in(AF_INET6, port);
}

/*
 * Whether binding TCP socket fd (entry e) to addr must fail with EADDRINUSE,
 * as TCP's bind does on a port a listener holds: a ri2n listener holds the
 * port as UDP on the rails, which the kernel's TCP bind does not see.  Only
 * for a port a listener would convert on.  With SO_REUSEADDR, the port may
 * still be held for up to 1 s by the connections of a listener that closed
 * (TCP's TIME_WAIT, which SO_REUSEADDR lets TCP bind over): wait up to 3 s.
 */
static int port_served(int fd, const rn_shim_ent *e, const struct sockaddr *addr, socklen_t len)
{
	const rn_shim_opt *o = rn_shim_ent_opt(e, SOL_SOCKET, SO_REUSEADDR);
	const char *why;
	int reuse = 0;
	rn_hsa a;

	/*
	 * An IPV6_V6ONLY socket is never refused: redis binds :: beside 0.0.0.0
	 * on one port, and its listen stays TCP when ri2n holds the port.
	 */
	if (rn_shim_addr_get(addr, len, &a) < 0 || !rn_shim_addr_port(&a) ||
	    rn_shim_addr_is_loopback(&a) || (e->family == AF_INET6 && v6only(fd)) ||
	    !rn_shim_policy_listen(&a, &why))
		return 0;
	if (o && o->len >= sizeof(int))
		memcpy(&reuse, o->val, sizeof(int));
	for (int i = 0; !udp_port_free(rn_shim_addr_port(&a)); i++) {
		if (!reuse || i == 150)
			return 1;
		usleep(20000);
	}
	return 0;
}

RN_SHIM_API int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	rn_shim_ent e;
	int known = rn_shim_tab_get(fd, &e);

	if (known && e.kind == RN_SHIM_RI2N) {
		errno = EINVAL; /* already listening or connecting, as TCP says */
		return -1;
	}
	if (known && e.kind == RN_SHIM_TCP && addr && port_served(fd, &e, addr, len)) {
		char as[80];
		rn_hsa a;

		rn_shim_addr_get(addr, len, &a);
		rn_shim_log("fd %d: bind to %s: the port is in use (by a ri2n listener or "
			    "connection)", fd, rn_shim_addr_str(&a, as, sizeof(as)));
		errno = EADDRINUSE;
		return -1;
	}
	/* a TCP socket is bound for real: errors are the kernel's, and listen/connect read it back */
	return RN_REAL->bind(fd, addr, len);
}

/*
 * ri2n_bind for a listener.  ri2n keeps the port of a closed listener while
 * connections accepted from it live, and each of those 1 s after it closed
 * (its TIME_WAIT): binding the port again fails with EADDRINUSE meanwhile,
 * where TCP with SO_REUSEADDR succeeds (iperf3 -s listens anew right after
 * each test).  With SO_REUSEADDR set, wait up to 3 s for the port.
 */
static int bind_listener(int n, const rn_shim_ent *e, const struct sockaddr_in *a, int v6only)
{
	const rn_shim_opt *o = rn_shim_ent_opt(e, SOL_SOCKET, SO_REUSEADDR);
	int reuse = 0;

	if (o && o->len >= sizeof(int))
		memcpy(&reuse, o->val, sizeof(int));

	for (int i = 0;; i++) {
		if (ri2n_bind(n, (const struct sockaddr *)a, sizeof(*a)) == 0)
			return 0;
		/* v6only: the program's own IPv4 listener may hold it (listen_convert) */
		if (errno != EADDRINUSE || !reuse || !a->sin_port || v6only || i == 150)
			return -1;
		usleep(20000);
	}
}

/*
 * Converts TCP socket fd (entry e) into a ri2n listener on local's port.
 * 0, -1 with errno, or 1 when an IPV6_V6ONLY socket (v6only) finds its port
 * held by ri2n already: by the program's own listener on 0.0.0.0, which
 * takes ri2n's IPv6 peers too, so this one stays TCP (redis listens so).
 */
static int listen_convert(int fd, const rn_shim_ent *e, rn_hsa *local, int backlog, int v6only)
{
	/* every rail: a listener on one rail's address still stripes over all of them */
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = rn_shim_addr_port(local) };
	rn_hsa got;
	socklen_t gl = sizeof(got);
	rn_shim_ent ne = *e;
	char as[80];
	/* the ri2n socket is made with the TCP socket's O_NONBLOCK (adopt carries the rest) */
	int fl = rn_sys_fcntl(fd, F_GETFL, 0), n = fl < 0 ? -1 : rn_api_socket((fl & O_NONBLOCK) != 0);

	if (n < 0)
		return give_up(-1, fd, "listen");
	if (bind_listener(n, e, &any, v6only) < 0) {
		if (v6only && errno == EADDRINUSE) {
			ri2n_close(n);
			return 1;
		}
		return give_up(n, fd, "listen");
	}
	if (ri2n_listen(n, backlog) < 0)
		return give_up(n, fd, "listen");
	rn_shim_opt_replay(n, e);
	if (ri2n_getsockname(n, &got.sa, &gl) == 0) {
		/* the port ri2n chose if the program bound none */
		if (local->sa.sa_family == AF_INET6)
			local->v6.sin6_port = rn_shim_addr_port(&got);
		else
			local->v4.sin_port = rn_shim_addr_port(&got);
	}
	ne.kind = RN_SHIM_RI2N;
	ne.listening = 1;
	ne.local = *local;
	ne.have_local = 1;
	ne.nep = ne.ep_lost = ne.shared = 0;
	if (adopt(n, fd, e, &ne, fl) < 0)
		return give_up(n, fd, "listen");
	rn_shim_log("fd %d: listening on %s over ri2n", fd, rn_shim_addr_str(local, as, sizeof(as)));
	return 0;
}

RN_SHIM_API int listen(int fd, int backlog)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const char *why = "no address";
	char as[80] = "?";
	rn_shim_ent e;
	rn_hsa local;
	int only6, rc;

	if (!rn_shim_tab_get(fd, &e))
		return RN_REAL->listen(fd, backlog);
	if (e.kind == RN_SHIM_RI2N)
		return ri2n_listen(fd, backlog);
	if (rn_sys_getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    rn_shim_addr_get((struct sockaddr *)&ss, sl, &local) < 0)
		goto stays;
	only6 = e.family == AF_INET6 && v6only(fd);
	if (only6 && local.sa.sa_family == AF_INET) {
		/* "::" on an IPV6_V6ONLY socket: every IPv6 rail (it cannot be v4-mapped) */
		in_port_t port = local.v4.sin_port;

		memset(&local, 0, sizeof(local));
		local.v6.sin6_family = AF_INET6;
		local.v6.sin6_port = port;
	}
	rn_shim_addr_str(&local, as, sizeof(as));
	if (!rn_shim_policy_listen(&local, &why))
		goto stays;
	rc = listen_convert(fd, &e, &local, backlog, only6);
	if (rc <= 0)
		return rc;
	why = "IPV6_V6ONLY, and ri2n holds the port: a listener on 0.0.0.0 takes IPv6 peers too";
stays:
	stays_tcp(fd, &e);
	rn_shim_log("fd %d: listen on %s stays TCP (%s)", fd, as, why);
	return RN_REAL->listen(fd, backlog);
}

static int connect_convert(int fd, const rn_shim_ent *e, const rn_hsa *dst, const rn_hsa *bound)
{
	rn_shim_ent ne = *e;
	char as[80];
	/* the ri2n socket is made with the TCP socket's O_NONBLOCK (adopt carries the rest) */
	int fl = rn_sys_fcntl(fd, F_GETFL, 0), n = fl < 0 ? -1 : rn_api_socket((fl & O_NONBLOCK) != 0);

	if (n < 0)
		return give_up(-1, fd, "connect");
	rn_shim_opt_replay(n, e);
	if (rn_shim_addr_port(bound)) {
		/* a source port asked for; a source address alone is not: ri2n uses every rail */
		struct sockaddr_in b = { .sin_family = AF_INET,
					 .sin_port = rn_shim_addr_port(bound) };

		if (ri2n_bind(n, (struct sockaddr *)&b, sizeof(b)) < 0)
			return give_up(n, fd, "bind");
	}
	ne.kind = RN_SHIM_RI2N;
	ne.peer = *dst;
	ne.have_peer = 1;
	ne.nep = ne.ep_lost = ne.shared = 0;
	if (adopt(n, fd, e, &ne, fl) < 0)
		return give_up(n, fd, "connect");
	rn_shim_log("fd %d: connect to %s over ri2n", fd, rn_shim_addr_str(dst, as, sizeof(as)));
	return rn_api_connect(fd, (fl & O_NONBLOCK) != 0, &dst->sa, rn_hsa_len(dst));
}

RN_SHIM_API int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	const char *why = "not an address of the socket's family";
	char as[80] = "?";
	rn_hsa dst, bound;
	rn_shim_ent e;

	if (!rn_shim_tab_get(fd, &e) || !addr || addr->sa_family == AF_UNSPEC)
		return RN_REAL->connect(fd, addr, len);
	if (e.kind == RN_SHIM_RI2N) {
		if (rn_shim_addr_get(addr, len, &dst) < 0)
			return ri2n_connect(fd, addr, len); /* its error, as for any bad address */
		return ri2n_connect(fd, &dst.sa, rn_hsa_len(&dst));
	}
	if (addr->sa_family != e.family || rn_shim_addr_get(addr, len, &dst) < 0)
		goto stays;
	rn_shim_addr_str(&dst, as, sizeof(as));
	if (dst.sa.sa_family == AF_INET && e.family == AF_INET6 && v6only(fd)) {
		/* a v4-mapped destination: the kernel refuses it */
		why = "IPV6_V6ONLY";
		goto stays;
	}
	bound_of(fd, &bound);
	if (!rn_shim_policy_connect(&dst, &bound, &why))
		goto stays;
	return connect_convert(fd, &e, &dst, &bound);
stays:
	stays_tcp(fd, &e);
	rn_shim_log("fd %d: connect to %s stays TCP (%s)", fd, as, why);
	return RN_REAL->connect(fd, addr, len);
}

static int accept_ri2n(int fd, const rn_shim_ent *e, struct sockaddr *addr, socklen_t *len,
		       int flags)
{
	rn_hsa from, local;
	socklen_t fl = sizeof(from), ll = sizeof(local);
	rn_shim_ent ne = { .kind = RN_SHIM_RI2N, .family = e->family };
	const char *how = "";
	char as[80];
	int nfd, owned = 0;

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		errno = EINVAL;
		return -1;
	}
	nfd = rn_api_accept(fd, &from.sa, &fl, flags);
	if (nfd < 0 && errno == ENOTSOCK) {
		/*
		 * A listener inherited across fork (a prefork worker): the
		 * connection comes with its record, and is ours if the listening
		 * process hands it over; else its engine serves it, through the
		 * descriptor, while that lives.
		 */
		nfd = rn_api_accept_inherited(fd, &from, flags, &owned);
		how = owned ? " (a listener inherited: handed over by its listening process)"
			    : " (a listener inherited: served by its parent's engine)";
	}
	if (nfd < 0)
		return -1;
	/* accepted sockets inherit the listener's options, as with TCP */
	memcpy(ne.opt, e->opt, sizeof(ne.opt));
	ne.nopt = e->nopt;
	if (*how && !owned) { /* the names the listener has; options are remembered, not set */
		ne.local = e->local;
		ne.have_local = e->have_local;
	} else {
		rn_shim_opt_replay(nfd, &ne);
		if (ri2n_getsockname(nfd, &local.sa, &ll) == 0) {
			ne.local = local;
			ne.have_local = 1;
		}
	}
	ne.peer = from;
	ne.have_peer = 1;
	rn_shim_tab_set(nfd, &ne);
	if (addr && len)
		rn_shim_addr_put(e->family, &from, addr, len);
	rn_shim_log("fd %d: accepted %s over ri2n on fd %d%s", fd,
		    rn_shim_addr_str(&from, as, sizeof(as)), nfd, how);
	return nfd;
}

RN_SHIM_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	rn_shim_ent e;
	int nfd;

	if (rn_shim_tab_get(fd, &e) && e.kind == RN_SHIM_RI2N)
		return accept_ri2n(fd, &e, addr, len, flags);
	nfd = RN_REAL->accept4(fd, addr, len, flags);
	if (nfd >= 0)
		forget(nfd);
	return nfd;
}

RN_SHIM_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	rn_shim_ent e;
	int nfd;

	if (rn_shim_tab_get(fd, &e) && e.kind == RN_SHIM_RI2N)
		return accept_ri2n(fd, &e, addr, len, 0);
	nfd = RN_REAL->accept(fd, addr, len);
	if (nfd >= 0)
		forget(nfd);
	return nfd;
}

/*
 * In a signal handler (rn_sigcalls.c) a close must be async-signal-safe: the
 * entry leaves the table lock-free, the rest waits (rn_shim_tab_drain).
 */
static void forget_on_close(int fd)
{
	if (rn_sig_in_handler())
		rn_shim_tab_retire(fd);
	else
		forget(fd);
}

/*
 * close and fclose are cancellation points: a cancel pending acts before
 * anything is done, never between ri2n forgetting the socket and the
 * number closing (that would leave the number open on a socket ri2n no
 * longer serves).  Closing itself never sleeps; fclose's flush may, and
 * finishes.  f: the stream to fclose, NULL to close fd.
 */
static int close_ri2n(int fd, FILE *f)
{
	int ct, rc;

	pthread_testcancel();
	ct = rn_sys_nocancel_begin();
	forget_on_close(fd);
	rn_shim_ep_excl_closed(fd);
	rc = f ? RN_REAL->fclose(f) : RN_REAL->close(fd);
	rn_sys_nocancel_end(ct);
	return rc;
}

RN_SHIM_API int close(int fd)
{
	if (rn_shim_tab_has(fd))
		return close_ri2n(fd, NULL);
	if (!rn_sig_in_handler())
		rn_shim_ep_forget(fd);
	return RN_REAL->close(fd);
}

RN_SHIM_API int close_range(unsigned int first, unsigned int last, int flags)
{
	if (!(flags & CLOSE_RANGE_CLOEXEC) && rn_shim_tab_mine()) {
		for (unsigned int fd = first; fd <= last && fd < (1u << 20); fd++)
			if (rn_shim_tab_has((int)fd))
				forget_on_close((int)fd);
		if (!rn_sig_in_handler())
			rn_shim_ep_forget_range(first, last);
	}
	return RN_REAL->close_range(first, last, flags);
}

/* libc closes the descriptor inside, where the shim's close never sees it */
RN_SHIM_API int fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1;

	if (fd >= 0 && rn_shim_tab_has(fd))
		return close_ri2n(fd, f);
	return RN_REAL->fclose(f);
}

RN_SHIM_API void closefrom(int low)
{
	if (low < 0)
		low = 0;
	if (rn_shim_tab_mine()) {
		for (int fd = low; fd < (1 << 20); fd++)
			if (rn_shim_tab_has(fd))
				forget_on_close(fd);
		if (!rn_sig_in_handler())
			rn_shim_ep_forget_range((unsigned int)low, ~0u);
	}
	RN_REAL->closefrom(low);
}

RN_SHIM_API int dup(int old)
{
	int nfd = RN_REAL->dup(old);

	if (nfd >= 0)
		after_dup(old, nfd);
	return nfd;
}

RN_SHIM_API int dup2(int old, int nfd)
{
	int rc = RN_REAL->dup2(old, nfd);

	if (rc >= 0 && old != nfd)
		after_dup(old, nfd);
	return rc;
}

RN_SHIM_API int dup3(int old, int nfd, int flags)
{
	int rc = RN_REAL->dup3(old, nfd, flags);

	if (rc >= 0)
		after_dup(old, nfd);
	return rc;
}

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	int rc;

	if (cmd == F_SETOWN || cmd == F_SETOWN_EX || cmd == F_SETSIG)
		rn_dc_note_sigio(); /* before: a conversion racing it must not miss it */
	rc = real(fd, cmd, arg);
	if (rc >= 0 && cmd == F_SETFL)
		rn_api_flags_changed(); /* after: what ri2n asks again must be the new flags */
	if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		after_dup(fd, rc);
	return rc;
}

RN_SHIM_API int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	/* the third argument is an int, a pointer or absent: a word either way (as glibc reads it) */
	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(RN_REAL->fcntl, fd, cmd, arg);
}

RN_SHIM_API int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(RN_REAL->fcntl64, fd, cmd, arg);
}
