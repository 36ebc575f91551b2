/*
 * rn_shim_policy.c - which TCP sockets become ri2n streams, and the
 * verbose log of every such decision.
 *
 * By default every IPv4 or IPv6 connection and listener that is not
 * loopback and that ri2n can carry: a connect to an address in the subnet
 * of one of this host's rails of its family, a listener on every address or
 * on a rail's address.
 * RI2N_RUN_PORTS ("5201,8000-8100") narrows it to those ports: the
 * destination port of a connect, the local port of a listener.  Everything
 * else stays TCP, untouched.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_shim.h"
#include "rn_sys.h"

#define MAX_RANGES 64

static struct {
	pthread_once_t once;
	int verbose;
	int no_rails;  /* ri2n could not start: not tried again (it would log each time) */
	int nranges;   /* 0: every port */
	uint16_t lo[MAX_RANGES], hi[MAX_RANGES];
} g = { .once = PTHREAD_ONCE_INIT };

/* "5201,8000-8100": bad items are reported (verbose) and skipped. */
static void parse_ports(const char *spec)
{
	char buf[1024], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		char *end;
		unsigned long lo = strtoul(t, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		if (*end || lo == 0 || hi < lo || hi > 65535 || end == t) {
			rn_shim_log("RI2N_RUN_PORTS: \"%s\" is not a port or a range, ignored", t);
			continue;
		}
		if (g.nranges == MAX_RANGES) {
			rn_shim_log("RI2N_RUN_PORTS: more than %d ranges, the rest ignored", MAX_RANGES);
			break;
		}
		g.lo[g.nranges] = (uint16_t)lo;
		g.hi[g.nranges] = (uint16_t)hi;
		g.nranges++;
	}
	if (g.nranges == 0)
		g.nranges = -1; /* a list with nothing valid matches nothing */
}

static void init(void)
{
	const char *v = getenv("RI2N_RUN_VERBOSE"), *p = getenv("RI2N_RUN_PORTS");

	g.verbose = v && *v && strcmp(v, "0") != 0;
	if (p && *p)
		parse_ports(p);
}

int rn_shim_verbose(void)
{
	pthread_once(&g.once, init);
	return g.verbose;
}

void rn_shim_log(const char *fmt, ...)
{
	char line[512];
	int n, saved = errno;
	va_list ap;

	if (!rn_shim_verbose()) {
		errno = saved;
		return;
	}
	n = snprintf(line, sizeof(line), "ri2n-run[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (rn_sys_write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere to say it */
	}
	errno = saved;
}

static int port_ok(uint16_t port)
{
	pthread_once(&g.once, init);
	if (g.nranges == 0)
		return 1;
	for (int i = 0; i < g.nranges; i++)
		if (port >= g.lo[i] && port <= g.hi[i])
			return 1;
	return 0;
}

/* rn_api_rail_match, remembering a failure to start ri2n. */
static int rail_match(const rn_hsa *a, int exact)
{
	int rc;

	if (__atomic_load_n(&g.no_rails, __ATOMIC_RELAXED))
		return -1;
	rc = rn_api_rail_match(a, exact);
	if (rc < 0)
		__atomic_store_n(&g.no_rails, 1, __ATOMIC_RELAXED);
	return rc;
}

/* Whether dst names one host that ri2n could reach (not loopback: checked before). */
static int unicast(const rn_hsa *dst)
{
	uint32_t ip = ntohl(dst->v4.sin_addr.s_addr);

	if (dst->sa.sa_family == AF_INET6)
		return !IN6_IS_ADDR_UNSPECIFIED(&dst->v6.sin6_addr) &&
		       !IN6_IS_ADDR_MULTICAST(&dst->v6.sin6_addr);
	return ip != INADDR_ANY && !IN_MULTICAST(ip) && ip != INADDR_BROADCAST;
}

int rn_shim_policy_connect(const rn_hsa *dst, const rn_hsa *bound, const char **why)
{
	int rc;

	if (rn_shim_addr_is_loopback(dst))
		return *why = "loopback", 0;
	if (!unicast(dst))
		return *why = "not a unicast address", 0;
	if (!port_ok(ntohs(rn_shim_addr_port(dst))))
		return *why = "port not in RI2N_RUN_PORTS", 0;
	if (bound && rn_shim_addr_is_loopback(bound))
		return *why = "bound to loopback", 0;
	rc = rail_match(dst, 0);
	if (rc < 0)
		return *why = "ri2n found no rails (RI2N_RAILS)", 0;
	if (rc == 0)
		return *why = "no rail in the destination's subnet", 0;
	return 1;
}

int rn_shim_policy_listen(const rn_hsa *local, const char **why)
{
	int rc;

	if (rn_shim_addr_is_loopback(local))
		return *why = "loopback", 0;
	if (!port_ok(ntohs(rn_shim_addr_port(local))))
		return *why = "port not in RI2N_RUN_PORTS", 0;
	rc = rail_match(local, 1);
	if (rc < 0)
		return *why = "ri2n found no rails (RI2N_RAILS)", 0;
	if (rc == 0) {
		*why = local->sa.sa_family == AF_INET6 && rn_shim_addr_is_any(local)
				       ? "IPV6_V6ONLY and no IPv6 rail"
				       : "bound to an address that is not a rail";
		return 0;
	}
	return 1;
}
