/*
 * rn_replay.c - the cookies a listener has already accepted (rn_replay.h).
 */
#include <string.h>

#include "rn_replay.h"

#define NIL UINT16_C(0xffff)

static unsigned bucket(uint64_t id)
{
	/* ids are random: their bits are a hash already; fold them anyway */
	return (unsigned)((id ^ id >> 29 ^ id >> 47) & (RN_REPLAY_BUCKETS - 1));
}

void rn_replay_init(rn_replay *r)
{
	memset(r, 0, sizeof(*r));
	memset(r->head, 0xff, sizeof(r->head));
	memset(r->next, 0xff, sizeof(r->next));
}

/* Is time a at or before b, both within half the 32-bit ms clock of now? */
static int at_or_before(uint32_t a, uint32_t b, uint32_t now_ms)
{
	return (uint32_t)(now_ms - a) >= (uint32_t)(now_ms - b);
}

int rn_replay_seen(const rn_replay *r, uint64_t id, uint32_t t_ms, uint32_t now_ms,
		   uint32_t life_ms)
{
	if (r->has_floor && (uint32_t)(now_ms - r->floor_ms) <= life_ms &&
	    at_or_before(t_ms, r->floor_ms, now_ms))
		return 1;
	for (uint16_t i = r->head[bucket(id)]; i != NIL; i = r->next[i])
		if (r->id[i] == id)
			return 1;
	return 0;
}

static void unlink_slot(rn_replay *r, uint16_t slot)
{
	uint16_t *pp = &r->head[bucket(r->id[slot])];

	while (*pp != NIL && *pp != slot)
		pp = &r->next[*pp];
	if (*pp == slot)
		*pp = r->next[slot];
	r->next[slot] = NIL;
	r->id[slot] = 0;
}

void rn_replay_add(rn_replay *r, uint64_t id, uint32_t t_ms, uint32_t now_ms, uint32_t life_ms)
{
	uint16_t slot = (uint16_t)(r->pos++ & (RN_REPLAY_SLOTS - 1));
	unsigned b = bucket(id);

	if (r->id[slot]) {
		uint32_t old = r->t_ms[slot];

		/* still alive: whatever was issued up to then can no longer be told apart */
		if ((uint32_t)(now_ms - old) <= life_ms &&
		    (!r->has_floor || !at_or_before(old, r->floor_ms, now_ms))) {
			r->floor_ms = old;
			r->has_floor = 1;
		}
		if ((uint32_t)(now_ms - old) <= life_ms)
			r->evictions++;
		unlink_slot(r, slot);
	}
	r->id[slot] = id;
	r->t_ms[slot] = t_ms;
	r->next[slot] = r->head[b];
	r->head[b] = slot;
}

void rn_replay_forget(rn_replay *r, uint64_t id)
{
	for (uint16_t i = r->head[bucket(id)]; i != NIL; i = r->next[i])
		if (r->id[i] == id) {
			unlink_slot(r, i);
			return;
		}
}
