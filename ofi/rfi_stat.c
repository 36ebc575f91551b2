/*
 * rfi_stat.c - the endpoint's connections and rails for ri2n-stat.
 *
 * Like the engine (src/engine/rn_publish.c) and in the same format
 * (src/host/rn_statfile.c), every RI2N_STAT_MS (250 ms; 0: never) an
 * enabled endpoint writes a snapshot to <dir>/<pid>.fi<n>.stat (n counts
 * the process's endpoints: an MPI process may open several, next to a
 * libri2n engine publishing <pid>.stat).  The provider has no thread that
 * runs on a timer: the snapshot is written from the progress pass when it
 * is due, and at once after a rail event, so ri2n-stat shows a rail going
 * down or up within one pass of the verdict.  The process line names the
 * driver and the endpoint.  The file is written to a temporary and renamed;
 * it is removed when the endpoint closes (a process killed before leaves
 * it, which ri2n-stat recognises by the start time and removes).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rfi.h"
#include "rn_log.h"
#include "rn_rails.h"
#include "rn_statfile.h"
#include "rn_sys.h"

void rfi_stat_open(rfi_ep *ep)
{
	static int seq; /* endpoints of this process; under no lock of ours: atomically */
	const char *why;
	char dir[200];
	long period = rn_statfile_period_ms();

	if (ep->stat_fd >= 0 || period <= 0)
		return; /* enabled again, or never */
	ep->stat_fd = rn_statfile_dir(dir, sizeof(dir), &why);
	if (ep->stat_fd < 0) {
		rn_warn("ri2n provider: not publishing connection state for ri2n-stat: %s: %s", dir,
			why);
		return;
	}
	ep->stat_pid = (int)getpid();
	snprintf(ep->stat_name, sizeof(ep->stat_name), "%d.fi%d.stat", ep->stat_pid,
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	ep->stat_start = rn_statfile_proc_start();
	ep->stat_period_ns = (uint64_t)period * 1000000u;
	ep->stat_next_ns = 0; /* the first pass publishes */
}

static const char *ipport(rn_addr a, char *buf, size_t len)
{
	return rn_addrport_str(a, buf, len);
}

/* Whether this endpoint publishes (a fork's child does not write its parent's file). */
static int publishing(const rfi_ep *ep)
{
	return ep->stat_fd >= 0 && ep->stat_pid == (int)getpid();
}

static void write_snapshot(rfi_ep *ep, uint64_t now)
{
	char tmp[64], extra[400], name[320], l[RN_ADDR_STRLEN], p[RN_ADDR_STRLEN];
	int fd, n = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", ep->stat_name);
	fd = openat(ep->stat_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	f = fd < 0 ? NULL : rn_sys_fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			rn_sys_close(fd);
		return;
	}
	rfi_name_str(&ep->name, name, sizeof(name));
	snprintf(extra, sizeof(extra), "driver=\"libfabric\" endpoint=\"%s\"", name);
	rn_statfile_write_process(f, ep->stat_start, now, extra);
	for (rfi_link *k = rfi_links(ep); k; k = rfi_link_next(k)) {
		rn_conn_stats cs;

		if (k->h.dead)
			continue;
		rn_conn_get_stats(k->h.conn, &cs);
		rn_statfile_write_conn(f, ++n, -1, !k->peer && k->retired != RFI_RETIRED_OUT,
				       cs.npaths ? ipport(cs.rail[0].local, l, sizeof(l)) : "?",
				       cs.npaths ? ipport(cs.rail[0].remote, p, sizeof(p)) : "?",
				       now - k->h.created_ns, &cs, now);
	}
	if (rn_sys_fclose(f) == 0)
		renameat(ep->stat_fd, tmp, ep->stat_fd, ep->stat_name);
	else
		unlinkat(ep->stat_fd, tmp, 0);
}

void rfi_stat_pass(rfi_ep *ep, uint64_t now)
{
	if (!publishing(ep) || now < ep->stat_next_ns)
		return;
	ep->stat_next_ns = now + ep->stat_period_ns;
	write_snapshot(ep, now);
}

void rfi_stat_close(rfi_ep *ep)
{
	if (ep->stat_fd < 0)
		return;
	if (publishing(ep))
		unlinkat(ep->stat_fd, ep->stat_name, 0);
	rn_sys_close(ep->stat_fd);
	ep->stat_fd = -1;
}
