/*
 * rn_pmtu.c - the datagram size of one rail, found by probing (rn_pmtu.h).
 */
#include "rn_pmtu.h"

/* The next size the search wants an answer for; 0 when it has ended. */
static uint32_t search_size(const rn_pmtu *p)
{
	uint32_t mid;

	if (p->hi - p->lo <= RN_PMTU_STEP || p->hi <= RN_PMTU_FLOOR)
		return 0;
	if (p->hi > p->ceiling)
		return p->ceiling; /* not tried yet: most rails work at their ceiling */
	mid = p->lo + (p->hi - p->lo) / 2;
	return mid < RN_PMTU_FLOOR ? RN_PMTU_FLOOR : mid;
}

static void search_up(rn_pmtu *p)
{
	p->state = RN_PMTU_SEARCH;
	p->lo = p->size;
	p->hi = p->ceiling + 1;
	p->tries = 0;
}

/* A search ended (or found nothing more): look again in RN_PMTU_REPROBE_NS. */
static void settle(rn_pmtu *p, uint64_t now_ns)
{
	p->state = RN_PMTU_DONE;
	p->next_ns = now_ns + RN_PMTU_REPROBE_NS;
}

void rn_pmtu_init(rn_pmtu *p, uint32_t base, uint32_t ceiling, uint64_t now_ns)
{
	*p = (rn_pmtu){ .ceiling = ceiling < base ? base : ceiling, .size = base };
	search_up(p);
	if (!search_size(p))
		settle(p, now_ns);
}

uint32_t rn_pmtu_next_probe(rn_pmtu *p, uint64_t now_ns, uint32_t *id)
{
	uint32_t s = 0;

	if (p->probe)
		return 0;
	switch (p->state) {
	case RN_PMTU_DONE:
		if (now_ns < p->next_ns || p->size >= p->ceiling)
			return 0;
		search_up(p);
		s = search_size(p);
		break;
	case RN_PMTU_SEARCH:
		s = search_size(p);
		break;
	case RN_PMTU_HOLE:
		/* the old size first when its turn has come: the heal matters most */
		s = now_ns >= p->next_ns ? p->target : search_size(p);
		break;
	}
	if (!s)
		return 0;
	p->probe = s;
	p->probe_id = ++p->next_id;
	p->probe_ns = now_ns;
	*id = p->probe_id;
	return s;
}

uint64_t rn_pmtu_expiry(const rn_pmtu *p, uint64_t timeout_ns)
{
	if (p->probe)
		return p->probe_ns + timeout_ns;
	switch (p->state) {
	case RN_PMTU_SEARCH:
		return search_size(p) ? 0 : UINT64_MAX;
	case RN_PMTU_DONE:
		return p->size < p->ceiling ? p->next_ns : UINT64_MAX;
	default:
		return search_size(p) ? 0 : p->next_ns;
	}
}

void rn_pmtu_on_timer(rn_pmtu *p, uint64_t now_ns, uint64_t timeout_ns)
{
	uint32_t s = p->probe;

	if (!s || now_ns - p->probe_ns < timeout_ns)
		return;
	p->probe = 0;
	p->lost = s;
	p->lost_id = p->probe_id;
	if (p->state == RN_PMTU_HOLE && s == p->target) {
		p->next_ns = p->probe_ns + RN_PMTU_HEAL_NS; /* still broken: again later */
		return;
	}
	if (++p->tries < RN_PMTU_TRIES)
		return;
	p->tries = 0;
	if (s < p->hi && s > p->lo)
		p->hi = s;
	if (p->state == RN_PMTU_SEARCH && !search_size(p))
		settle(p, now_ns);
}

/*
 * The answer to the last probe taken as lost: its size got through after
 * all, which confirms it as an answer in time would.  A probe in flight at
 * or below it has nothing left to tell (its answer is ignored).
 */
static int late_ack(rn_pmtu *p, uint32_t id, uint32_t size, uint64_t now_ns)
{
	if (!p->lost || id != p->lost_id || size != p->lost || p->state == RN_PMTU_HOLE)
		return 0;
	p->lost = 0;
	if (size <= p->size)
		return 0;
	p->size = size;
	p->lo = size;
	if (p->hi <= size)
		p->hi = size < p->ceiling ? p->ceiling + 1 : size + 1;
	if (p->probe && p->probe <= size) {
		p->probe = 0;
		p->tries = 0;
	}
	if (p->state == RN_PMTU_SEARCH && !p->probe && !search_size(p))
		settle(p, now_ns);
	return 1;
}

int rn_pmtu_on_ack(rn_pmtu *p, uint32_t id, uint32_t size, uint64_t now_ns)
{
	uint32_t old = p->size, s = p->probe;

	if (!s || id != p->probe_id || size != s)
		return late_ack(p, id, size, now_ns);
	p->probe = 0;
	p->tries = 0;
	if (p->state == RN_PMTU_HOLE && s == p->target) {
		p->size = s; /* healed: the old size works again */
		settle(p, now_ns);
		return p->size != old;
	}
	if (s > p->lo)
		p->lo = s;
	if (s > p->size)
		p->size = s;
	if (p->state == RN_PMTU_SEARCH && !search_size(p))
		settle(p, now_ns);
	return p->size != old;
}

int rn_pmtu_on_hole(rn_pmtu *p, uint64_t now_ns)
{
	uint32_t old = p->size;

	if (!old)
		return 0; /* no size left to lose */
	if (p->state != RN_PMTU_HOLE) {
		p->state = RN_PMTU_HOLE;
		p->target = old;
		p->holes++;
		p->next_ns = now_ns + RN_PMTU_HEAL_NS;
	}
	p->lo = 0;
	p->hi = old;
	p->size = 0;
	p->probe = 0; /* an answer to a probe sent before is not evidence now */
	p->lost = 0;
	p->tries = 0;
	return 1;
}

void rn_pmtu_set_ceiling(rn_pmtu *p, uint32_t ceiling, uint64_t now_ns)
{
	if (ceiling == p->ceiling)
		return;
	if (ceiling > p->ceiling) {
		p->ceiling = ceiling;
		if (p->state != RN_PMTU_HOLE)
			search_up(p);
		return;
	}
	p->ceiling = ceiling;
	if (p->size > ceiling)
		p->size = ceiling;
	if (p->target > ceiling)
		p->target = ceiling;
	if (p->lo > ceiling)
		p->lo = ceiling;
	if (p->hi > ceiling + 1)
		p->hi = ceiling + 1;
	if (p->probe > ceiling)
		p->probe = 0;
	if (p->lost > ceiling)
		p->lost = 0;
	if (p->state == RN_PMTU_SEARCH && !search_size(p))
		settle(p, now_ns);
}
