/*
 * rn_api_engine.c - the engine's services ri2n-run's interposers use, each
 * passed straight through, so the shim (src/shim) includes no engine
 * header and calls the engine only through the API layer (rn_api.h).
 */
#include "rn_api.h"
#include "rn_engine.h"
#include "rn_inline.h"
#include "rn_pairname.h"
#include "rn_sandbox.h"

int rn_api_engine_self(void)
{
	return rn_engine_self();
}

int rn_api_engine_making(void)
{
	return rn_engine_making();
}

int rn_api_busy_default(void)
{
	return rn_inline_busy_default();
}

int64_t rn_api_spin_budget(int busy_us)
{
	return rn_spin_budget(busy_us);
}

void rn_api_spin_learn(int busy_us, int64_t waited_ns, int caught)
{
	rn_spin_learn(busy_us, waited_ns, caught);
}

void rn_api_watch_begin(const rn_railref *r, int n, void **h)
{
	rn_inline_watch_begin(r, n, h);
}

void rn_api_watch_end(void **h, int n, const uint8_t *ready, uint64_t ep_id, rn_ready *out,
		      int max, int *nout)
{
	rn_inline_watch_end(h, n, ready, ep_id, out, max, nout);
}

int rn_api_held(uint64_t ep_id, rn_ready *out, int max)
{
	return rn_inline_held(ep_id, out, max);
}

int rn_api_poll_held(void *const *socks, int n, uint8_t *in)
{
	return rn_inline_poll_held((rn_sock *const *)socks, n, in);
}

void rn_api_poll_end(void **h, int n, const uint8_t *ready, void *const *socks, int ns,
		     uint8_t *in)
{
	rn_inline_poll_end(h, n, ready, (rn_sock *const *)socks, ns, in);
}

uint64_t rn_api_fd_cookie(int fd)
{
	return rn_fd_cookie(fd);
}

int rn_api_sandbox_on(void)
{
	return rn_sandbox_on();
}

int rn_api_pairname_get(int fd, rn_hsa *local, rn_hsa *peer)
{
	rn_hsa l, p;

	if (rn_pairname_get(fd, &l, &p) < 0)
		return -1;
	if (local)
		*local = l;
	if (peer)
		*peer = p;
	return 0;
}
