/*
 * rfi_av.c - the address vector: peers' names (all rails of a peer behind
 * one fi_addr_t).  fi_addr_t i is the i-th name inserted, for FI_AV_MAP and
 * FI_AV_TABLE alike; inserting a name already there gives its old index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

const rfi_name *rfi_av_get(const rfi_av *av, fi_addr_t a)
{
	if (!av || a >= av->n || !av->used[a])
		return NULL;
	return &av->names[a];
}

/* Every rail of part (fewer than whole's) is one of whole's, port and all. */
static int name_within(const rfi_name *part, const rfi_name *whole)
{
	if (part->n >= whole->n)
		return 0;
	for (int i = 0; i < part->n; i++) {
		int j = 0;

		while (j < whole->n && !rn_addr_eq(rn_addr_of_rail(&whole->rail[j]),
						   rn_addr_of_rail(&part->rail[i])))
			j++;
		if (j == whole->n)
			return 0;
	}
	return 1;
}

/*
 * The exact name first; failing that, a partial name inserted for this peer
 * (one rail, from fi_getinfo's node and service: rfi_addr.c).
 */
fi_addr_t rfi_av_find(const rfi_av *av, const rfi_name *nm)
{
	fi_addr_t part = FI_ADDR_NOTAVAIL;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	for (size_t i = 0; i < av->n; i++) {
		if (!av->used[i])
			continue;
		if (rfi_name_eq(&av->names[i], nm))
			return i;
		if (part == FI_ADDR_NOTAVAIL && name_within(&av->names[i], nm))
			part = i;
	}
	return part;
}

static int grow(rfi_av *av, size_t want)
{
	size_t cap = av->cap ? av->cap : 64;
	rfi_name *names;
	uint8_t *used;

	while (cap < want)
		cap *= 2;
	if (cap == av->cap)
		return 0;
	names = realloc(av->names, cap * sizeof(*names));
	if (!names)
		return -FI_ENOMEM;
	av->names = names;
	used = realloc(av->used, cap);
	if (!used)
		return -FI_ENOMEM;
	memset(used + av->cap, 0, cap - av->cap);
	av->used = used;
	av->cap = cap;
	return 0;
}

static int av_insert(struct fid_av *f, const void *addr, size_t count, fi_addr_t *out,
		     uint64_t flags, void *ctx)
{
	rfi_av *av = (rfi_av *)f;
	int ok = 0;

	(void)ctx;
	if (flags || (count && !addr))
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	if (grow(av, av->n + count) != 0) {
		pthread_mutex_unlock(&av->dom->lock);
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		rfi_name nm;
		fi_addr_t a = FI_ADDR_NOTAVAIL;

		if (rfi_name_read(&nm, (const uint8_t *)addr + i * RFI_NAME_LEN, RFI_NAME_LEN) == 0) {
			a = rfi_av_find(av, &nm);
			if (a == FI_ADDR_NOTAVAIL) {
				a = av->n++;
				av->names[a] = nm;
				av->used[a] = 1;
			}
			ok++;
		}
		if (out)
			out[i] = a;
	}
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return ok;
}

static int av_insertsvc(struct fid_av *f, const char *node, const char *service,
			fi_addr_t *out, uint64_t flags, void *ctx)
{
	(void)f, (void)node, (void)service, (void)out, (void)flags, (void)ctx;
	return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av *f, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *out, uint64_t flags,
			void *ctx)
{
	(void)f, (void)node, (void)nodecnt, (void)service, (void)svccnt, (void)out, (void)flags;
	(void)ctx;
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *f, fi_addr_t *addrs, size_t count, uint64_t flags)
{
	rfi_av *av = (rfi_av *)f;

	if (flags || (count && !addrs))
		return -FI_EINVAL;
	pthread_mutex_lock(&av->dom->lock);
	for (size_t i = 0; i < count; i++)
		if (addrs[i] < av->n)
			av->used[addrs[i]] = 0;
	av->gen++;
	pthread_mutex_unlock(&av->dom->lock);
	return 0;
}

static int av_lookup(struct fid_av *f, fi_addr_t a, void *addr, size_t *len)
{
	rfi_av *av = (rfi_av *)f;
	uint8_t buf[RFI_NAME_LEN];
	const rfi_name *nm;
	size_t cap;

	if (!len || (*len && !addr))
		return -FI_EINVAL;
	cap = *len;
	pthread_mutex_lock(&av->dom->lock);
	nm = rfi_av_get(av, a);
	if (nm)
		rfi_name_write(nm, buf);
	pthread_mutex_unlock(&av->dom->lock);
	if (!nm)
		return -FI_EINVAL;
	*len = RFI_NAME_LEN;
	memcpy(addr, buf, cap < RFI_NAME_LEN ? cap : RFI_NAME_LEN);
	return cap < RFI_NAME_LEN ? -FI_ETOOSMALL : 0;
}

static const char *av_straddr(struct fid_av *f, const void *addr, char *buf, size_t *len)
{
	rfi_name nm;
	char s[512];

	(void)f;
	if (!len || (*len && !buf))
		return NULL;
	if (!addr || rfi_name_read(&nm, addr, RFI_NAME_LEN) != 0)
		snprintf(s, sizeof(s), "(not an ri2n name)");
	else
		rfi_name_str(&nm, s, sizeof(s));
	if (*len)
		snprintf(buf, *len, "%s", s);
	*len = strlen(s) + 1;
	return buf;
}

static int av_no_set(struct fid_av *f, struct fi_av_set_attr *a, struct fid_av_set **s, void *c)
{
	(void)f, (void)a, (void)s, (void)c;
	return -FI_ENOSYS;
}

static int av_close(struct fid *f)
{
	rfi_av *av = (rfi_av *)f;

	if (av->refs)
		return -FI_EBUSY;
	pthread_mutex_lock(&av->dom->lock);
	av->dom->refs--;
	pthread_mutex_unlock(&av->dom->lock);
	free(av->names);
	free(av->used);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops), .close = av_close, .bind = rfi_no_bind,
	.control = rfi_no_control, .ops_open = rfi_no_ops_open,
};
static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av), .insert = av_insert, .insertsvc = av_insertsvc,
	.insertsym = av_insertsym, .remove = av_remove, .lookup = av_lookup,
	.straddr = av_straddr, .av_set = av_no_set,
};

int rfi_av_open(struct fid_domain *d, struct fi_av_attr *attr, struct fid_av **out, void *ctx)
{
	rfi_domain *dom = (rfi_domain *)d;
	rfi_av *av;

	if (attr && (attr->flags & (FI_EVENT | FI_READ)))
		return -FI_ENOSYS; /* no EQ events, no shared AVs */
	if (attr && attr->name)
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	if (grow(av, attr && attr->count ? attr->count : 64) != 0) {
		free(av);
		return -FI_ENOMEM;
	}
	av->av.fid = (struct fid){ .fclass = FI_CLASS_AV, .context = ctx, .ops = &av_fi_ops };
	av->av.ops = &av_ops;
	pthread_mutex_lock(&dom->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->lock);
	*out = &av->av;
	return 0;
}
