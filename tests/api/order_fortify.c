/*
 * order_fortify.c - order_kit's writers that a program compiled with
 * _FORTIFY_SOURCE calls under other names (dprintf is __dprintf_chk), and
 * pwritev2 at offset -1.  Built with -D_FORTIFY_SOURCE=2 (CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "order_kit.h"
#include "order_kit_int.h"
#include "ri2n_kit.h"

static int by_dprintf(struct order *o, size_t n, void *arg)
{
	uint8_t buf[ORDER_CHUNK_MAX];

	(void)arg;
	kit_pattern_fill(buf, o->seed, o->sent, n);
	for (size_t i = 0; i < n; i++) /* %c: a NUL byte too */
		if (dprintf(o->tx, "%c", buf[i]) != 1)
			return order_fail(o, "dprintf: %s", strerror(errno));
	o->sent += n;
	return 0;
}

/* dprintf (with _FORTIFY_SOURCE: __dprintf_chk) on the socket, then write(fd) */
int order_dprintf(struct order *o, int rounds)
{
#if !defined(_FORTIFY_SOURCE) || _FORTIFY_SOURCE < 1
#error "order_fortify.c is built with _FORTIFY_SOURCE"
#endif
	return order_rounds(o, rounds, by_dprintf, NULL);
}

static int by_pwritev2(struct order *o, size_t n, void *arg)
{
	uint8_t buf[ORDER_CHUNK_MAX];
	struct iovec iov = { buf, n };

	(void)arg;
	kit_pattern_fill(buf, o->seed, o->sent, n);
	if (pwritev2(o->tx, &iov, 1, -1, 0) != (ssize_t)n)
		return order_fail(o, "pwritev2: %s", strerror(errno));
	o->sent += n;
	return 0;
}

/* pwritev2 at offset -1 on the socket, then write(fd) */
int order_pwritev2(struct order *o, int rounds)
{
	return order_rounds(o, rounds, by_pwritev2, NULL);
}
