/*
 * rn_htab.c - connections by id, and where each datagram goes.
 */
#include <errno.h>
#include <stdlib.h>

#include "rn_htab.h"
#include "rn_wire.h"

static uint32_t slot(const rn_htab *t, uint64_t id)
{
	return (uint32_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (t->cap - 1);
}

int rn_htab_init(rn_htab *t, uint32_t cap)
{
	uint32_t c = 4;

	while (c < cap + cap / 2) /* keep it at most 3/4 full */
		c *= 2;
	t->e = calloc(c, sizeof(*t->e));
	t->cap = t->e ? c : 0;
	t->n = 0;
	return t->e ? 0 : -ENOMEM;
}

void rn_htab_free(rn_htab *t)
{
	free(t->e);
	t->e = NULL;
	t->cap = t->n = 0;
}

static void put(rn_htab *t, uint64_t id, void *v)
{
	uint32_t i = slot(t, id);

	while (t->e[i].id)
		i = (i + 1) & (t->cap - 1);
	t->e[i] = (rn_hent){ id, v };
	t->n++;
}

static int grow(rn_htab *t)
{
	rn_htab old = *t;
	rn_hent *e = calloc((size_t)t->cap * 2, sizeof(*e));

	if (!e)
		return -ENOMEM;
	t->e = e;
	t->cap *= 2;
	t->n = 0;
	for (uint32_t i = 0; i < old.cap; i++)
		if (old.e[i].id)
			put(t, old.e[i].id, old.e[i].v);
	free(old.e);
	return 0;
}

int rn_htab_add(rn_htab *t, uint64_t id, void *v)
{
	if (!id || !t->e)
		return -EINVAL;
	if ((t->n + 1) * 4 > t->cap * 3 && grow(t))
		return -ENOMEM;
	put(t, id, v);
	return 0;
}

static int find(const rn_htab *t, uint64_t id)
{
	if (!id || !t->cap)
		return -1;
	for (uint32_t i = slot(t, id), k = 0; k < t->cap; i = (i + 1) & (t->cap - 1), k++) {
		if (t->e[i].id == id)
			return (int)i;
		if (!t->e[i].id)
			return -1;
	}
	return -1;
}

void *rn_htab_get(const rn_htab *t, uint64_t id)
{
	int i = find(t, id);

	return i >= 0 ? t->e[i].v : NULL;
}

int rn_htab_del(rn_htab *t, uint64_t id, const void *v)
{
	int at = find(t, id);
	uint32_t i, j, mask = t->cap - 1;

	if (at < 0 || t->e[at].v != v)
		return 0;
	/* backward shift: entries after the hole that would be missed move into it */
	i = (uint32_t)at;
	t->e[i].id = 0;
	for (j = (i + 1) & mask; t->e[j].id; j = (j + 1) & mask) {
		uint32_t home = slot(t, t->e[j].id);

		/* e[j] stays unless its home lies cyclically outside (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->e[i] = t->e[j];
			t->e[j].id = 0;
			i = j;
		}
	}
	t->n--;
	return 1;
}

int rn_htab_rekey(rn_htab *t, uint64_t old_id, uint64_t new_id, void *v)
{
	if (old_id == new_id)
		return 0;
	rn_htab_del(t, old_id, v);
	return rn_htab_add(t, new_id, v);
}

void rn_htab_each(const rn_htab *t, void (*fn)(void *v, void *arg), void *arg)
{
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->e[i].id)
			fn(t->e[i].v, arg);
}

/* Offers a stateless reset to the table's connections; 1 if one took it. */
static int offer_reset(const rn_hdisp *x, int idx, rn_addr from, const uint8_t *d, size_t len,
		       uint64_t at)
{
	const rn_htab *t = x->tab;

	for (uint32_t i = 0; i < t->cap; i++) {
		void *v = t->e[i].v;

		if (t->e[i].id && rn_conn_recv(x->conn_of(v), at, idx, from, d, len) == 0) {
			x->on_reset(x->arg, v);
			return 1;
		}
	}
	return 0;
}

void rn_hdisp_input(void *disp, int idx, rn_addr from, const uint8_t *d, size_t len,
		    uint64_t at)
{
	rn_hdisp *x = disp;
	uint64_t id = rn_wire_peek_dst(d, len);
	void *v = id ? rn_htab_get(x->tab, id) : NULL;

	if (v) {
		x->to_conn(x->arg, v, idx, from, d, len, at);
		return;
	}
	if (!id && x->conn_of && rn_wire_peek_sreset(d, len)) {
		if (!offer_reset(x, idx, from, d, len, at))
			x->unknown++;
		return;
	}
	if (x->to_listener && x->to_listener(x->arg, idx, from, d, len, at) == 0)
		return;
	x->unknown++;
}
