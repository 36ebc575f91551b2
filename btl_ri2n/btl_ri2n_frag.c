/*
 * btl_ri2n_frag.c - send descriptors and their free lists.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <string.h>

#include "btl_ri2n_frag.h"

static void frag_construct(mca_btl_ri2n_frag_t *f)
{
	f->base.des_segments = f->segments;
	f->base.des_segment_count = 1;
	f->base.order = MCA_BTL_NO_ORDER;
	f->endpoint = NULL;
	f->done = 0;
}

OBJ_CLASS_INSTANCE(mca_btl_ri2n_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

void rbtl_frag_lists_construct(mca_btl_ri2n_component_t *c)
{
	OBJ_CONSTRUCT(&c->frags_eager, opal_free_list_t);
	OBJ_CONSTRUCT(&c->frags_max, opal_free_list_t);
	OBJ_CONSTRUCT(&c->frags_user, opal_free_list_t);
}

void rbtl_frag_lists_destruct(mca_btl_ri2n_component_t *c)
{
	OBJ_DESTRUCT(&c->frags_eager);
	OBJ_DESTRUCT(&c->frags_max);
	OBJ_DESTRUCT(&c->frags_user);
}

static int list_init(mca_btl_ri2n_component_t *c, opal_free_list_t *l, size_t payload)
{
	/* the buffer follows the struct in the same element, like btl/self's */
	return opal_free_list_init(l, sizeof(mca_btl_ri2n_frag_t) + payload, opal_cache_line_size,
				   OBJ_CLASS(mca_btl_ri2n_frag_t), 0, opal_cache_line_size,
				   c->p.free_list_num, c->p.free_list_max, c->p.free_list_inc,
				   NULL, 0, NULL, NULL, NULL);
}

static size_t g_eager, g_max;

int rbtl_frag_lists_init(mca_btl_ri2n_component_t *c, size_t eager, size_t max)
{
	int rc;

	g_eager = eager;
	g_max = max;
	rc = list_init(c, &c->frags_eager, eager);
	if (rc == OPAL_SUCCESS)
		rc = list_init(c, &c->frags_max, max);
	if (rc == OPAL_SUCCESS)
		rc = list_init(c, &c->frags_user, 0);
	return rc;
}

static mca_btl_ri2n_frag_t *take(opal_free_list_t *l, size_t size)
{
	mca_btl_ri2n_frag_t *f = (mca_btl_ri2n_frag_t *)opal_free_list_get(l);

	if (!f)
		return NULL;
	f->list = l;
	f->size = size;
	f->done = 0;
	f->endpoint = NULL;
	f->base.des_segments = f->segments;
	f->base.des_segment_count = 1;
	f->base.des_flags = 0;
	f->base.order = MCA_BTL_NO_ORDER;
	f->segments[0].seg_addr.pval = size ? rbtl_frag_data(f) : NULL;
	f->segments[0].seg_len = 0;
	f->segments[1].seg_len = 0;
	return f;
}

mca_btl_ri2n_frag_t *rbtl_frag_alloc(size_t size)
{
	if (size <= g_eager)
		return take(&mca_btl_ri2n_component.frags_eager, g_eager);
	if (size <= g_max)
		return take(&mca_btl_ri2n_component.frags_max, g_max);
	return NULL;
}

mca_btl_ri2n_frag_t *rbtl_frag_alloc_user(void)
{
	return take(&mca_btl_ri2n_component.frags_user, 0);
}

void rbtl_frag_return(mca_btl_ri2n_frag_t *f)
{
	opal_free_list_return(f->list, &f->base.super);
}

size_t rbtl_frag_wire_len(const mca_btl_ri2n_frag_t *f)
{
	size_t n = RI2N_HDR_LEN;

	for (size_t i = 0; i < f->base.des_segment_count; i++)
		n += f->segments[i].seg_len;
	return n;
}

void rbtl_frag_set_hdr(mca_btl_ri2n_frag_t *f, uint8_t tag)
{
	uint32_t len = htonl((uint32_t)(rbtl_frag_wire_len(f) - RI2N_HDR_LEN));

	memcpy(f->hdr, &len, 4);
	f->hdr[4] = tag;
	f->hdr[5] = RI2N_FT_FRAG;
	f->hdr[6] = f->hdr[7] = 0;
	f->tag = tag;
	f->done = 0;
}
