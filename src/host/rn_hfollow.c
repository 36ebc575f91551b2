/*
 * rn_hfollow.c - a driver's rails as the kernel's link and address events
 * leave them (rn_hfollow.h).
 */
#include <errno.h>
#include <string.h>

#include "rn_hfollow.h"
#include "rn_log.h"
#include "rn_rails.h"
#include "rn_sys.h"

/* A read's buffer: the kernel sends a message per change, a few hundred bytes each. */
#define RN_HFOLLOW_BUF 8192
#define RN_HFOLLOW_EVS 64

void rn_hfollow_init(rn_hfollow *f, const rn_rail_info *rails, int n, rn_hfollow_fn changed,
		     void *arg)
{
	*f = (rn_hfollow){ .fd = -1, .rails = rails, .n = n < RN_MAX_RAILS ? n : RN_MAX_RAILS,
			   .changed = changed, .arg = arg };
}

static int usable(const rn_hfollow *f, int i)
{
	return !f->no_addr[i] && !f->no_link[i];
}

/* Rail i was usable (was_ok) and may not be now, or the other way round. */
static void rail_changed(rn_hfollow *f, int i, int was_ok, rn_cause cause)
{
	const rn_rail_info *r = &f->rails[i];
	int ok = usable(f, i), conns;
	char ip[RN_ADDR_STRLEN];

	if (ok == was_ok)
		return;
	conns = f->changed(f->arg, i, ok, cause);
	rn_log(ok ? RN_LOG_INFO : RN_LOG_WARN, "rail %d (%s %s): %s: %s for %d connection%s", i,
	       r->name, rn_rails_str(r, ip, sizeof(ip)), rn_cause_name(cause),
	       ok ? "in use again" : "down", conns, conns == 1 ? "" : "s");
}

/*
 * Rail i's address is gone; e (an address event on its interface, NULL: a
 * look at the interface) may say where it can move: the hook hears it.
 */
static void maybe_moved(rn_hfollow *f, int i, const rn_hlink_ev *e)
{
	const rn_rail_info *r = &f->rails[i];
	rn_rail_info to = *r;

	if (!f->moved || !rn_rails_has_addr(r))
		return;
	if (!e) {
		if (rn_rails_other_addr(f->rails, f->n, i, &to))
			f->moved(f->moved_arg, i, &to);
		return;
	}
	if (e->type != RN_HLINK_ADDR_ADD || e->v6 != r->v6 ||
	    rn_addr_link_local(rn_hlink_addr(e)) || rn_rails_owner(f->rails, f->n, rn_hlink_addr(e)) >= 0)
		return;
	rn_hlink_give(e, &to);
	f->moved(f->moved_arg, i, &to);
}

void rn_hfollow_apply(rn_hfollow *f, const rn_hlink_ev *e)
{
	for (int i = 0; i < f->n; i++) {
		const rn_rail_info *r = &f->rails[i];
		int was_ok = usable(f, i);
		rn_cause cause;

		if (e->ifindex != r->ifindex)
			continue;
		switch (e->type) {
		case RN_HLINK_ADDR_ADD:
		case RN_HLINK_ADDR_DEL:
			if (!rn_rails_is(r, rn_hlink_addr(e))) {
				if (f->no_addr[i])
					maybe_moved(f, i, e); /* another address came */
				continue;
			}
			f->no_addr[i] = e->type == RN_HLINK_ADDR_DEL;
			cause = f->no_addr[i] ? RN_CAUSE_ADDR_GONE : RN_CAUSE_ADDR_BACK;
			rail_changed(f, i, was_ok, cause);
			if (f->no_addr[i])
				maybe_moved(f, i, NULL); /* the interface may have another */
			continue;
		case RN_HLINK_LINK:
		case RN_HLINK_LINK_DEL:
			f->no_link[i] = !e->up;
			cause = f->no_link[i] ? RN_CAUSE_LINK_DOWN : RN_CAUSE_LINK_UP;
			break;
		default:
			continue;
		}
		rail_changed(f, i, was_ok, cause);
	}
}

void rn_hfollow_rebound(rn_hfollow *f, int i)
{
	if (i >= 0 && i < f->n)
		f->no_addr[i] = 0;
}

void rn_hfollow_read(rn_hfollow *f)
{
	uint8_t buf[RN_HFOLLOW_BUF];
	rn_hlink_ev ev[RN_HFOLLOW_EVS];

	if (f->fd < 0)
		return;
	for (;;) {
		ssize_t len = rn_hlink_read(f->fd, buf, sizeof(buf));
		int n;

		if (len == -ENOBUFS) {
			/* the kernel dropped events: later ones still come, and the rules catch the rest */
			rn_warn("netlink: events lost (receive buffer full); rail changes may be noticed late");
			continue;
		}
		if (len <= 0)
			return;
		n = rn_hlink_parse(buf, (size_t)len, ev, RN_HFOLLOW_EVS);
		for (int i = 0; i < n; i++) {
			if (f->each)
				f->each(f->each_arg, &ev[i]);
			rn_hfollow_apply(f, &ev[i]);
		}
	}
}

void rn_hfollow_poll(rn_hfollow *f, uint64_t now)
{
	if (f->fd < 0 || now < f->next_ns)
		return;
	f->next_ns = now + RN_HFOLLOW_POLL_NS;
	rn_hfollow_read(f);
}

void rn_hfollow_open(rn_hfollow *f)
{
	int fd = rn_hlink_open();

	if (fd < 0) {
		rn_info("netlink: %s; rail changes are noticed by their traffic only", strerror(-fd));
		return;
	}
	f->fd = fd;
}

void rn_hfollow_close(rn_hfollow *f)
{
	if (f->fd >= 0)
		rn_sys_close(f->fd);
	f->fd = -1;
}
