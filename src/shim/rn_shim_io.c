/*
 * rn_shim_io.c - the hooks of the shim's data calls (rn_datacalls.c): the
 * shim's table says which descriptors are ri2n's.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "rn_api.h"
#include "rn_datacalls.h"
#include "rn_shim.h"

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
