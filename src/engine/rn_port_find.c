/*
 * rn_port_find.c - the process's ports looked up and walked: by number (a
 * listener's), the shared client port, every stream, port or listener.
 * Under the host lock.
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include "rn_port.h"
#include "rn_port_int.h"

rn_port *rn_port_find_number(uint16_t number)
{
	for (rn_port *p = rn_port_first(); p; p = p->next)
		if (p->number == number && number != 0 && !p->dead)
			return p;
	return NULL;
}

rn_port *rn_port_client_find(uint32_t mask)
{
	for (rn_port *p = rn_port_first(); p; p = p->next) {
		if (p->shared && p->mask == mask && !p->dead && p->refs > 0) {
			rn_port_ref(p);
			return p;
		}
	}
	return NULL;
}

rn_port *rn_port_client(uint32_t mask, int *err)
{
	rn_port *p = rn_port_client_find(mask);

	if (p)
		return p;
	p = rn_port_open(mask, 0, 0, err);
	if (p)
		p->shared = 1;
	return p;
}

struct each_ctx {
	rn_stream_fn fn;
	void *ctx;
};

static void each_one(void *v, void *arg)
{
	const struct each_ctx *e = arg;

	e->fn(v, e->ctx);
}

void rn_port_each(rn_port *p, rn_stream_fn fn, void *ctx)
{
	struct each_ctx e = { fn, ctx };

	rn_htab_each(&p->tab, each_one, &e);
}

void rn_port_each_all(rn_stream_fn fn, void *ctx)
{
	for (rn_port *p = rn_port_first(); p; p = p->next)
		rn_port_each(p, fn, ctx);
}

void rn_port_each_port(void (*fn)(rn_port *p, void *ctx), void *ctx)
{
	for (rn_port *p = rn_port_first(); p; p = p->next)
		fn(p, ctx);
}

void rn_port_each_listener(void (*fn)(rn_port *p, void *ctx), void *ctx)
{
	for (rn_port *p = rn_port_first(); p; p = p->next)
		if (p->lis)
			fn(p, ctx);
}
