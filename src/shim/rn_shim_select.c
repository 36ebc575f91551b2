/*
 * rn_shim_select.c - the interposed select and pselect, on top of the
 * shim's poll (rn_shim_poll.c): a wait with ri2n descriptors among those
 * read joins their rail sockets to it as poll does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/select.h>
#include <time.h>

#include "rn_api.h"
#include "rn_shim.h"

#define RN_SHIM_API __attribute__((visibility("default")))
#define MAX_POLL RN_SHIM_MAX_POLL

/*
 * select and pselect with a ri2n descriptor among those read: the sets
 * become a poll array (at most MAX_POLL descriptors; more wait as before)
 * and the result sets again.  A descriptor not open is EBADF, as select
 * says; the time left is not written back (Linux does, POSIX need not).
 */
static int select_wait(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout,
		       const sigset_t *ss, int *handled)
{
	struct pollfd p[MAX_POLL];
	int n = 0, any = 0, rc, count = 0;

	*handled = 0;
	if (nfds <= 0 || nfds > FD_SETSIZE || rn_api_engine_self())
		return 0;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((rd && FD_ISSET(fd, rd) ? POLLIN : 0) |
				   (wr && FD_ISSET(fd, wr) ? POLLOUT : 0) |
				   (ex && FD_ISSET(fd, ex) ? POLLPRI : 0));

		if (!ev)
			continue;
		if (n == MAX_POLL)
			return 0;
		any |= (ev & POLLIN) && rn_shim_tab_has(fd);
		p[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	if (!any)
		return 0;
	*handled = 1;
	rc = rn_shim_poll_wait(p, (nfds_t)n, timeout, ss);
	if (rc < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (p[i].revents & POLLNVAL) {
			errno = EBADF;
			return -1;
		}
	}
	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	for (int i = 0; i < n; i++) {
		short r = p[i].revents;

		/* as the kernel's select: an error or hang-up makes a descriptor readable and writable */
		if (rd && (p[i].events & POLLIN) && (r & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, rd);
			count++;
		}
		if (wr && (p[i].events & POLLOUT) && (r & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, wr);
			count++;
		}
		if (ex && (p[i].events & POLLPRI) && (r & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			count++;
		}
	}
	return count;
}

RN_SHIM_API int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	int handled, timeout = -1, rc;

	if (tv) {
		long ms = (long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;

		timeout = ms > 1000000000 ? 1000000000 : (int)ms;
	}
	rc = select_wait(nfds, rd, wr, ex, timeout, NULL, &handled);
	if (handled)
		return rc;
	return RN_REAL->select(nfds, rd, wr, ex, tv);
}

RN_SHIM_API int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
			const sigset_t *ss)
{
	int handled, rc = select_wait(nfds, rd, wr, ex, rn_shim_ts_ms(ts), ss, &handled);

	if (handled)
		return rc;
	return RN_REAL->pselect(nfds, rd, wr, ex, ts, ss);
}
