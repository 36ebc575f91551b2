/*
 * rn_shim_io.c - the shim's data calls: the ten of rn_datacalls.c, with
 * the shim's table as their hook; and the writers the fast path does not
 * serve (sendfile, splice, sendmmsg, stdio through fdopen, dprintf), which
 * put their bytes into the descriptor, where ri2n's engine takes them: they
 * mark the socket first, so that fast sends after them take those bytes
 * first and the order holds (rn_api_note_plain).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>

#include "rn_api.h"
#include "rn_datacalls.h"
#include "rn_shim.h"

#define RN_SHIM_API __attribute__((visibility("default")))

/*
 * A descriptor the shim knows as (maybe) ri2n, in the process that owns the table.
 * No owner check here (it costs a getpid per call): a vfork()ed child, the
 * case it is for, only execs, closes and dup2s before it leaves our memory,
 * and the socket behind a number is checked by ri2n's own table anyway.
 */
int rn_dc_ours(int fd)
{
	return rn_shim_tab_has(fd);
}

int rn_dc_known(void)
{
	return rn_shim_sees_closes();
}

const rn_datacalls_real *rn_dc_real(void)
{
	return &RN_REAL->io;
}

/* ---- writers that only mark the socket ---- */

static void mark_plain(int fd)
{
	if (rn_shim_tab_has(fd)) {
		int saved = errno;

		rn_api_note_plain(fd);
		errno = saved;
	}
}

RN_SHIM_API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	mark_plain(out);
	return RN_REAL->sendfile(out, in, off, count);
}

RN_SHIM_API ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	mark_plain(out);
	return RN_REAL->sendfile64(out, in, off, count);
}

RN_SHIM_API ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t len,
			   unsigned int flags)
{
	if (rn_shim_tab_has(in)) { /* it reads the descriptor: what an epoll wait reported from ri2n goes there */
		int saved = errno;

		rn_api_to_descriptor(in);
		errno = saved;
	}
	mark_plain(out);
	return RN_REAL->splice(in, in_off, out, out_off, len, flags);
}

RN_SHIM_API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	mark_plain(fd);
	return RN_REAL->sendmmsg(fd, v, n, flags);
}

RN_SHIM_API FILE *fdopen(int fd, const char *mode)
{
	mark_plain(fd);
	return RN_REAL->fdopen(fd, mode);
}

RN_SHIM_API int vdprintf(int fd, const char *fmt, va_list ap)
{
	mark_plain(fd);
	return RN_REAL->vdprintf(fd, fmt, ap);
}

RN_SHIM_API int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}
